"""One reflector and one cache per namespace, read together: swapped relists, or cleared in place.

No single upstream report; the model is built on the closest real code. The correct store is the
shape of ``kubernetes-sigs/controller-runtime`` ``pkg/cache/multi_namespace_cache.go``
(``multiNamespaceCache``: with ``cache.Options.DefaultNamespaces`` naming several namespaces, one
informer cache per namespace, ``namespaceToCache``; ``List`` without a namespace lists each
namespace's cache in turn and concatenates the items), the same shape as client-go informers
built with ``WithNamespace`` once per namespace, and kube-state-metrics' store per namespace
(``buildStores``, the fix of issue #942, ``models/multi_reflector``). Each namespace's cache is a
client-go ``threadSafeMap``: ``Replace`` (a relist) builds the new map and swaps it in under the
write lock, and ``List`` copies under the read lock, so a reader sees a namespace before or
after a relist, never half of it.

The buggy twin keeps the per-namespace shape but its caches are hand-rolled the way
``kube-state-metrics``' ``MetricsStore.Replace`` was (``models/ksm_relist``): a relist empties the
namespace's map, then adds the listed objects one at a time, and the reader copies the maps
without taking their locks (writers still serialize on them). On a real cluster a relist happens
whenever a namespace's watch falls out of the server's history (410 after a long disconnection,
an apiserver restart, a watch-cache re-init); a consumer that reads during it (a dashboard, a
scrape, a controller listing the pods of both teams) sees one namespace empty or half full and
acts on it: workloads reported missing, replicas counted short, a scale-up or an alert for pods
that were there all along.

The model: one reflector per namespace (``team-0`` and ``team-1``, the namespaces kubesim's
scenarios create), each listing and watching its namespace's pods from the last resourceVersion,
re-watching after a clean end or a cut, relisting after a 410, backing off after API errors;
the first runs in ``run()``, the others in threads ``run()`` starts. ``read()`` is the
multi-namespace ``List``: every namespace's pods, namespace by namespace. ``view()`` is the same
map keyed by ``namespace/name``; ``sizes()`` counts each namespace's cache.
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


class NamespaceCache:
    """One namespace's store and the reflector that fills it."""

    def __init__(self, core: client.CoreV1Api, namespace: str, *, swap_on_replace: bool) -> None:
        self.core = core
        self.namespace = namespace
        self.swap_on_replace = swap_on_replace
        self._lock = threading.Lock()  # threadSafeMap's RWMutex
        self.items: dict[str, Pod] = {}
        self.resource_version = ""

    # -- the store ---------------------------------------------------------------------------
    def update(self, pod: Pod) -> None:
        with self._lock:
            self.items[_key(pod)] = pod

    def delete(self, pod: Pod) -> None:
        with self._lock:
            self.items.pop(_key(pod), None)

    def replace(self, pods: Sequence[Pod]) -> None:
        if self.swap_on_replace:
            fresh = {_key(pod): pod for pod in pods}
            with self._lock:
                self.items = fresh  # threadSafeMap.Replace: one swap under the write lock
            return
        with self._lock:
            self.items.clear()  # emptied first...
        for pod in pods:
            self.update(pod)  # ...then refilled one object at a time

    def list(self) -> list[Pod]:
        if self.swap_on_replace:
            with self._lock:  # List under the read lock
                return list(self.items.values())
        return list(self.items.values())  # the twin reads without the lock

    # -- the reflector -----------------------------------------------------------------------
    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                listed = json.loads(
                    self.core.list_namespaced_pod(self.namespace, _preload_content=False).data
                )
                self.replace(listed["items"])
                self.resource_version = listed["metadata"]["resourceVersion"]
                while self._watch():  # it ended or was cut: watch again from the last RV
                    backoff = 1.0  # a watch was open: the trouble is over
            except (client.ApiException, ProtocolError):
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
                    self.delete(obj)
                else:
                    self.update(obj)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True


class MultiNamespaceCache:
    """``multiNamespaceCache``: a cache per namespace; a cluster-wide List reads them all."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        swap_on_replace: bool,
        namespaces: Sequence[str] = NAMESPACES,
    ) -> None:
        if not namespaces:
            raise ValueError("namespaces must name at least one namespace, got none")
        core = client.CoreV1Api(api_client)
        self.namespace_to_cache = {
            namespace: NamespaceCache(core, namespace, swap_on_replace=swap_on_replace)
            for namespace in namespaces
        }

    def run(self) -> None:
        first, *others = self.namespace_to_cache.values()
        for cache in others:
            threading.Thread(
                target=cache.run, name=f"reflector-{cache.namespace}", daemon=True
            ).start()
        first.run()

    def read(self) -> list[Pod]:
        """``List`` across namespaces: each namespace's cache in turn, concatenated."""
        items: list[Pod] = []
        for cache in self.namespace_to_cache.values():
            items.extend(cache.list())
        return items

    def view(self) -> dict[str, Pod]:
        return {_key(pod): pod for pod in self.read()}

    def sizes(self) -> dict[str, int]:
        return {
            f"cache[{namespace}]": len(cache.items)
            for namespace, cache in self.namespace_to_cache.items()
        }


def clears_namespace_on_relist(api_client: client.ApiClient) -> MultiNamespaceCache:
    """The twin: a relist empties a namespace's cache and refills it; readers take no lock."""
    return MultiNamespaceCache(api_client, swap_on_replace=False)


def swaps_namespace_on_relist(api_client: client.ApiClient) -> MultiNamespaceCache:
    """The correct store: a relist swaps in a new map under the lock; readers copy under it."""
    return MultiNamespaceCache(api_client, swap_on_replace=True)
