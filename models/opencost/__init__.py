"""OpenCost's cluster cache and its consumers, re-created in Python, in three designs.

Upstream: opencost/opencost ``pkg/clustercache`` (the cache: an informer's indexer, ``GetAll``)
and its consumers in ``pkg/costmodel/costmodel.go`` and ``pkg/metrics``.
tests/quality/test_opencost.py runs the scenario below under the controlled scheduler.

The race is in OpenCost's *consumer* code, which writes into maps that belong to cached
objects: the cost model merges namespace labels into ``pod.labels`` when missing
(``costmodel.go`` ~line 396), while the metrics collector iterates the same maps
(``promutil.SanitizeLabels``). The three cache designs the seed discussion contrasts:

- ``shared`` (cache V2 by construction, and V1 after PR #2725): ``get_all_pods`` returns the
  cached objects themselves. Races: "dictionary changed size during iteration" (Go: fatal
  "concurrent map iteration and map write"), and silent corruption of the cache.
- ``deepcopy`` (commit 277bddb2, 2020): every ``get_all_pods`` deep-copies the whole cache.
  Race-free, and pays for it in memory on every scrape (the 125 MB vs 105 MB of PR #2725).
- ``immutable`` (kube-state-metrics' transform-on-write): each event is transformed into a
  frozen, slim record at write time; readers share records nobody can mutate, so consumers
  must build merged label maps of their own.

The cache itself is a reflector: list, then watch from the list's resourceVersion, re-watch
from the last RV on a clean close, relist on 410. It runs on the official client.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

DESIGNS = ("shared", "deepcopy", "immutable")


@dataclass(frozen=True)
class PodInfo:
    """The flyweight an immutable cache keeps per pod (OpenCost V2's slim structs, frozen)."""

    uid: str
    namespace: str
    name: str
    resource_version: str
    node: str
    labels: MappingProxyType[str, str]


class ClusterCache:
    """The pod half of OpenCost's cluster cache."""

    def __init__(self, api_client: client.ApiClient, *, design: str) -> None:
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {DESIGNS}, got design={design!r}")
        self.core = client.CoreV1Api(api_client)
        self.design = design
        self._lock = threading.RLock()  # the indexer's RWMutex
        self._pods: dict[str, Any] = {}
        self.synced = threading.Event()
        self.resource_version = ""
        self.relists = 0

    # -- the reflector ---------------------------------------------------------------------
    def run(self) -> None:
        while True:
            try:
                self._relist()
            except client.ApiException:
                time.sleep(1)  # the list was refused: back off, list again
                continue
            while self._watch():
                pass  # clean close: watch again from the last RV

    def _relist(self) -> None:
        response = self.core.list_pod_for_all_namespaces(_preload_content=False)
        listed = json.loads(response.data)
        fresh = {p["metadata"]["uid"]: self._store_form(p) for p in listed["items"]}
        with self._lock:
            self._pods = fresh  # swap, never clear-then-refill
        self.resource_version = listed["metadata"]["resourceVersion"]
        self.relists += 1
        self.synced.set()

    def _watch(self) -> bool:
        """One watch; True to watch again from the last RV, False to relist."""
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                uid = obj["metadata"]["uid"]
                with self._lock:
                    if kind == "DELETED":
                        self._pods.pop(uid, None)
                    else:
                        self._pods[uid] = self._store_form(obj)  # a fresh object per event
        except HTTPError:
            return True
        except client.ApiException:
            # A refused watch (a 504 "Too large resource version" from a lagging cache, a 5xx):
            # client-go's reflector backs off, then lists again.
            time.sleep(1)
            return False
        return True

    def _store_form(self, pod: dict[str, Any]) -> Any:
        if self.design != "immutable":
            return pod
        meta = pod["metadata"]
        return PodInfo(
            uid=meta["uid"],
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            resource_version=meta["resourceVersion"],
            node=pod.get("spec", {}).get("nodeName", ""),
            labels=MappingProxyType(dict(meta.get("labels") or {})),
        )

    # -- what consumers call (clustercache.go GetAllPods) ----------------------------------
    def get_all_pods(self) -> list[Any]:
        with self._lock:
            pods = list(self._pods.values())
        if self.design == "deepcopy":
            return [copy.deepcopy(p) for p in pods]
        return pods

    def held_objects(self) -> list[Any]:
        """What the cache holds right now (for the isolation oracle)."""
        with self._lock:
            return list(self._pods.values())

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self._pods)}

    # -- the hooks kubesim's property layer uses ---------------------------------------------
    def view(self) -> dict[str, Any]:
        """The cache, keyed namespace/name (what the oracles compare with the server)."""
        with self._lock:
            pods = list(self._pods.values())
        return {f"{_namespace_of(p)}/{_name_of(p)}": p for p in pods}

    def read(self) -> list[Any]:
        """One consumer pass: the cost model reads every pod and merges its namespace's labels
        into the pod's labels (costmodel.go ~396), then hands back what it read."""
        pods = self.get_all_pods()
        _merge_namespace_labels(pods, CLUSTER_NAMESPACE_LABELS)
        return pods


# The namespace labels of the clusters kubesim's scenarios build (namespaces team-0, team-1).
CLUSTER_NAMESPACE_LABELS = {
    "team-0": {"team": "payments", "cost-center": "cc-100"},
    "team-1": {"team": "search", "cost-center": "cc-200"},
}


def _name_of(pod: Any) -> str:
    return pod.name if isinstance(pod, PodInfo) else pod["metadata"].get("name", "")


def _merge_namespace_labels(pods: list[Any], namespace_labels: dict[str, dict[str, str]]) -> int:
    added = 0
    for pod in pods:
        labels = _labels_of(pod)
        if isinstance(labels, MappingProxyType):
            labels = dict(labels)  # an immutable cache forces a private copy
        for key, value in namespace_labels.get(_namespace_of(pod), {}).items():
            if key not in labels:
                labels[key] = value  # shared design: this writes into the cached pod's map
                added += 1
    return added


def _labels_of(pod: Any) -> Any:
    if isinstance(pod, PodInfo):
        return pod.labels
    return pod["metadata"].setdefault("labels", {})


def _namespace_of(pod: Any) -> str:
    return pod.namespace if isinstance(pod, PodInfo) else pod["metadata"].get("namespace", "")


def compute_pod_labels(cache: ClusterCache, namespace_labels: dict[str, dict[str, str]]) -> int:
    """The cost model's label merge (costmodel.go ~396). Returns how many labels it added."""
    return _merge_namespace_labels(cache.get_all_pods(), namespace_labels)


def sanitize_labels(labels: Any) -> dict[str, str]:
    """promutil.SanitizeLabels: iterate the map, rewrite keys for Prometheus."""
    out = {}
    for key, value in labels.items():
        out["label_" + key.replace("/", "_").replace(".", "_").replace("-", "_")] = value
    return out


def collect_pod_labels(cache: ClusterCache) -> int:
    """The kube_pod_labels collector: one sanitized label set per pod. Returns the count."""
    total = 0
    for pod in cache.get_all_pods():
        total += len(sanitize_labels(_labels_of(pod)))
    return total


def shared(api_client: client.ApiClient) -> ClusterCache:
    return ClusterCache(api_client, design="shared")


def deepcopy(api_client: client.ApiClient) -> ClusterCache:
    return ClusterCache(api_client, design="deepcopy")


def immutable(api_client: client.ApiClient) -> ClusterCache:
    return ClusterCache(api_client, design="immutable")
