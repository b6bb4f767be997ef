"""kube-state-metrics watching several namespaces: one store, many reflectors, before and after.

Upstream: kubernetes/kube-state-metrics issue #942 ("Observing more than one namespace leads to
inconsistent metrics being exported"). With ``--namespaces=a,b``, kube-state-metrics started
one reflector per namespace (a namespace-scoped list/watch each) but fed all of them into a
*single* ``MetricsStore`` per resource (``pkg/metrics_store/metrics_store.go``). A reflector
calls the store's ``Replace(listed)`` with every list it makes (the first, and each relist
after its watch expires), and ``Replace`` empties the whole store before adding what was
listed. The lists of one namespace therefore wiped the metrics of every other one until their
own reflectors relisted: series vanished and came back, depending on which watch expired last.
The fix restored a one-to-one relation between a list/watch and its store: the store builder
makes one store per namespace (``buildStores``), and a scrape writes all of them.

The model: one reflector thread per namespace (``team-0`` and ``team-1``, the namespaces
kubesim's scenarios create), each listing and watching its namespace's pods from the last
resourceVersion, relisting after a 410, backing off after errors. Each reflector owns a
:class:`MetricsStore` in the fix and shares the one store in the bug. ``view()`` is every
object the stores hold metrics for: the pods a scrape reports.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]

NAMESPACES = ("team-0", "team-1")
MAX_BACKOFF = 30.0


def _key(pod: Pod) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class MetricsStore:
    """``cache.Store`` keyed by uid; what it keeps per object is what a scrape writes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.metrics: dict[str, Pod] = {}

    def add(self, pod: Pod) -> None:
        with self._lock:
            self.metrics[pod["metadata"]["uid"]] = pod

    update = add

    def delete(self, pod: Pod) -> None:
        with self._lock:
            self.metrics.pop(pod["metadata"]["uid"], None)

    def replace(self, pods: Sequence[Pod]) -> None:
        """What a reflector calls with each list: the store becomes exactly ``pods``."""
        with self._lock:
            self.metrics = {pod["metadata"]["uid"]: pod for pod in pods}

    def objects(self) -> list[Pod]:
        with self._lock:
            return list(self.metrics.values())


class NamespaceReflector:
    """A bare ``cache.Reflector`` for one namespace's pods, feeding ``store``."""

    def __init__(self, core: client.CoreV1Api, namespace: str, store: MetricsStore) -> None:
        self.core = core
        self.namespace = namespace
        self.store = store
        self.resource_version = ""

    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                listed = json.loads(
                    self.core.list_namespaced_pod(self.namespace, _preload_content=False).data
                )
                self.store.replace(listed["items"])
                self.resource_version = listed["metadata"]["resourceVersion"]
                while self._watch():  # it ended or was cut: watch again from the last RV
                    backoff = 1.0  # a watch was open: the trouble is over
            except client.ApiException:
                time.sleep(backoff)  # refused: back off, then list again
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _watch(self) -> bool:
        """One watch from the last RV; True to watch again, False to relist (410)."""
        try:
            response = self.core.list_namespaced_pod(
                self.namespace,
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
        except client.ApiException as error:
            if error.status == 410:
                return False
            raise
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired in the stream: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self.store.delete(obj)
                else:
                    self.store.update(obj)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True


class KubeStateMetrics:
    """The pod metrics of kube-state-metrics run with ``--namespaces=team-0,team-1``."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        store_per_namespace: bool,
        namespaces: Sequence[str] = NAMESPACES,
    ) -> None:
        if not namespaces:
            raise ValueError("namespaces must name at least one namespace, got none")
        core = client.CoreV1Api(api_client)
        shared = MetricsStore()
        self.stores = [MetricsStore() if store_per_namespace else shared for _ in namespaces]
        self.reflectors = [
            NamespaceReflector(core, namespace, store)
            for namespace, store in zip(namespaces, self.stores, strict=True)
        ]

    def run(self) -> None:
        first, *others = self.reflectors
        for reflector in others:
            threading.Thread(
                target=reflector.run, name=f"reflector-{reflector.namespace}", daemon=True
            ).start()
        first.run()

    def _distinct_stores(self) -> list[MetricsStore]:
        return list({id(store): store for store in self.stores}.values())

    def view(self) -> dict[str, Pod]:
        """Every pod a scrape writes metrics for (MetricsWriter.WriteAll over the stores)."""
        return {_key(pod): pod for store in self._distinct_stores() for pod in store.objects()}

    def sizes(self) -> dict[str, int]:
        return {"metrics": sum(len(store.metrics) for store in self._distinct_stores())}


def shared_store(api_client: client.ApiClient) -> KubeStateMetrics:
    """Before the fix (#942): every namespace's reflector replaces the one shared store."""
    return KubeStateMetrics(api_client, store_per_namespace=False)


def store_per_namespace(api_client: client.ApiClient) -> KubeStateMetrics:
    """After the fix: one store per namespace's reflector; a scrape writes them all."""
    return KubeStateMetrics(api_client, store_per_namespace=True)
