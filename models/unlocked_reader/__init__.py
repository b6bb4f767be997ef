"""A metrics collector that walks the live pod cache without its lock, before and after the fix.

Upstream: ``opencost/opencost`` issue #3388 (the exporter restarts on ``fatal error: concurrent map
iteration and map write`` in ``promutil.SanitizeLabels``, which ranges over a label map that another
goroutine writes), #2910 (``concurrent map read and map write`` in ``getPodServices``,
``labels.Set(pod.Labels)`` on a map the cache's writer owns), PR #3457 (a reproduction of both) and
PR #4050 (collectors clone a pod's label map before editing it); ``kubernetes/kubernetes`` #29960
(the deployment controller's ``equalIgnoreHash`` read ReplicaSet label maps while another worker
wrote them: "concurrent map read and map write", fixed by PR #30011). client-go's own indexer shows
the safe read: ``threadSafeMap.List()`` (``tools/cache/thread_safe_store.go``) copies the values
into a slice under the read lock, and callers range over the copy.

The store is an informer-style cache: one watch thread lists, watches from the list's
resourceVersion and applies every event to ``self.pods`` under ``self._lock`` (a relist swaps in a
new dict). A consumer, here a ``kube_pod_labels``-style collector run by every scrape, walks the
cache and sanitizes each pod's labels for Prometheus. The bug: the collector ranges over the live
dict without the lock, trusting that the writer's lock protects readers too. In Go the runtime
notices the overlap and kills the process; in Python the same overlap is a ``RuntimeError:
dictionary changed size during iteration`` when an ADDED or DELETED lands mid-scrape, and, when only
a MODIFIED lands, a scrape that mixes pods from before and after the event: a state of the cluster
that never existed. It shows under churn (rollouts, label storms, CronJobs) on any cache with
frequent scrapes. The fix: take the lock long enough to copy the values (``threadSafeMap.List()``),
then iterate the copy; the pods themselves are never changed in place (each event stores a new
object), so sharing them after the copy is safe.
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


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def sanitize_labels(labels: dict[str, str]) -> dict[str, str]:
    """promutil.SanitizeLabels: one Prometheus label per Kubernetes label."""
    out = {}
    for name, value in labels.items():
        out["label_" + name.replace("/", "_").replace(".", "_").replace("-", "_")] = value
    return out


class PodCache:
    """A pod cache fed by one watch thread; how a consumer reads it is the subject."""

    def __init__(self, api_client: client.ApiClient, *, copy_under_lock: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.copy_under_lock = copy_under_lock
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""

    # -- the writer: list, then watch ---------------------------------------------------------
    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                self._relist()
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 1.0
            while self._watch():
                pass

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        fresh = {_key(pod): pod for pod in listed["items"]}
        with self._lock:
            self.pods = fresh
        self.resource_version = listed["metadata"]["resourceVersion"]

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
                with self._lock:
                    if kind == "DELETED":
                        self.pods.pop(_key(obj), None)
                    else:
                        self.pods[_key(obj)] = obj
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    # -- the consumer: a scrape of kube_pod_labels ---------------------------------------------
    def collect(self) -> tuple[list[dict[str, str]], list[Pod]]:
        """One scrape: a sanitized label set per pod, and the pods it was built from."""
        if self.copy_under_lock:
            with self._lock:
                pods = list(self.pods.values())  # threadSafeMap.List(): copy under the lock
        else:
            pods = self.pods.values()  # before the fix: the live dict the watch thread writes
        samples, seen = [], []
        for pod in pods:
            samples.append(sanitize_labels(pod["metadata"].get("labels") or {}))
            seen.append(pod)
        return samples, seen

    def read(self) -> list[Pod]:
        """One consumer read: the pods one scrape walked."""
        return self.collect()[1]

    def view(self) -> dict[str, Pod]:
        with self._lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}


def iterate_live_cache(api_client: client.ApiClient) -> PodCache:
    """Before the fix: a scrape ranges over the live dict while the watch thread writes it."""
    return PodCache(api_client, copy_under_lock=False)


def copy_under_lock(api_client: client.ApiClient) -> PodCache:
    """After: a scrape copies the values under the cache's lock, then walks the copy."""
    return PodCache(api_client, copy_under_lock=True)
