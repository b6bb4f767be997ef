"""kube-state-metrics' MetricsStore: a relist that clears, then refills, under a scrape.

Upstream: ``kubernetes/kube-state-metrics`` ``pkg/metrics_store/metrics_store.go``
(``MetricsStore``: ``Add``, ``Update``, ``Delete``, ``Replace``) and
``pkg/metrics_store/metrics_writer.go`` (``WriteAll``, what a ``/metrics`` scrape runs), fed by a
bare ``cache.Reflector`` (design doc ``docs/design/metrics-store-performance-optimization.md``).

The store keeps, per object uid, the metric families rendered from the object (bytes); a scrape
concatenates them under the store's read lock. ``Replace``, which the reflector calls with every
(re)list, empties the map and then ``Add`` s the listed objects one by one, each ``Add`` taking the
lock on its own. A scrape that runs between the two sees some objects or none: a partial metric
set, which Prometheus records as series vanishing and coming back. The fix (an upstream variant
of ``Replace``, and what a store read concurrently must do): build the new map first, then swap
it in with one assignment under the lock, so a scrape sees the old set or the new one.

Modelling note: the real store keeps only the rendered bytes. This one keeps the decoded object
beside them, so that a scrape can say which version of which pod each metric line came from
(``read()`` returns those objects); nothing in the store reads them otherwise.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]


def _render(pod: Pod) -> bytes:
    """generateMetricsFunc for a pod: a few kube_pod_* families, rendered as text."""
    meta = pod["metadata"]
    who = f'namespace="{meta.get("namespace", "")}",pod="{meta["name"]}",uid="{meta["uid"]}"'
    phase = (pod.get("status") or {}).get("phase") or "Unknown"
    lines = [f"kube_pod_info{{{who}}} 1", f'kube_pod_status_phase{{{who},phase="{phase}"}} 1']
    for name, value in sorted((meta.get("labels") or {}).items()):
        lines.append(f'kube_pod_labels{{{who},label_{name}="{value}"}} 1')
    return ("\n".join(lines) + "\n").encode()


class MetricsStore:
    """``cache.Store`` that renders metrics on write; ``Replace`` is the subject."""

    def __init__(self, api_client: client.ApiClient, *, swap_on_replace: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.swap_on_replace = swap_on_replace
        self._lock = threading.RLock()  # the store's RWMutex
        self.metrics: dict[str, tuple[bytes, Pod]] = {}  # uid -> (rendered families, object)
        self.resource_version = ""

    # -- cache.Store -------------------------------------------------------------------------
    def add(self, pod: Pod) -> None:
        rendered = _render(pod)
        with self._lock:
            self.metrics[pod["metadata"]["uid"]] = (rendered, pod)

    update = add

    def delete(self, pod: Pod) -> None:
        with self._lock:
            self.metrics.pop(pod["metadata"]["uid"], None)

    def replace(self, pods: list[Pod]) -> None:
        if self.swap_on_replace:
            fresh = {pod["metadata"]["uid"]: (_render(pod), pod) for pod in pods}
            with self._lock:
                self.metrics = fresh  # the fix: a scrape sees the old set or the new one
            return
        with self._lock:
            self.metrics = {}  # before the fix: emptied first...
        for pod in pods:
            self.add(pod)  # ...then refilled one object at a time

    # -- the reflector -----------------------------------------------------------------------
    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                listed = json.loads(
                    self.core.list_pod_for_all_namespaces(_preload_content=False).data
                )
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 1.0
            self.replace(listed["items"])
            self.resource_version = listed["metadata"]["resourceVersion"]
            while self._watch():
                pass

    def _watch(self) -> bool:
        """One watch; True to watch again from the last RV, False to relist."""
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
        except client.ApiException as error:
            time.sleep(1)
            return error.status != 410
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self.delete(obj)
                else:
                    self.update(obj)
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    # -- what a scrape does (MetricsWriter.WriteAll) -----------------------------------------
    def write_all(self) -> tuple[bytes, list[Pod]]:
        with self._lock:
            entries = list(self.metrics.values())
        return b"".join(rendered for rendered, _ in entries), [pod for _, pod in entries]

    def read(self) -> list[Pod]:
        """One scrape: the objects whose metric families it wrote."""
        return self.write_all()[1]

    def view(self) -> dict[str, Pod]:
        with self._lock:
            pods = [pod for _, pod in self.metrics.values()]
        return {f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}": p for p in pods}

    def sizes(self) -> dict[str, int]:
        return {"metrics": len(self.metrics)}


def clear_then_add(api_client: client.ApiClient) -> MetricsStore:
    """Before the fix: ``Replace`` empties the map, then adds the listed objects one by one."""
    return MetricsStore(api_client, swap_on_replace=False)


def build_then_swap(api_client: client.ApiClient) -> MetricsStore:
    """After the fix: ``Replace`` builds the new map, then swaps it in."""
    return MetricsStore(api_client, swap_on_replace=True)
