"""Consumers that write into objects the informer's cache hands out, before and after the fix.

Upstream: ``kubernetes/kubernetes`` issues #29960 (the deployment controller's fatal "concurrent
map read and map write" on a ReplicaSet's labels from the shared cache) and #27687 ("Deployment
controller should deep-copy before mutating its caches"); ``istio/istio`` PR #49866 (a shallow
copy of ``pod.ObjectMeta``, then a write to its ``Labels``: a fatal "concurrent map writes" in
istiod); ``kubesphere/kubesphere`` PR #4599.

An informer's ``Get``/``List`` return the cached objects themselves, for speed, under one rule:
callers must not modify them. Controllers broke it to compute something about an object and
record it on the object: add a label, set a field, then use the object. Every other consumer of
the same cache (and the cache's own later comparisons) then sees the change as if the server had
made it; two consumers doing it at once corrupt the map, which Go detects as a fatal error and
Python, here, as reads that no longer match any version the server ever had. Istio's variant is
subtler: it copied the object, but shallowly (Go's struct copy of ``ObjectMeta``), so the copy
and the cached object still shared one ``Labels`` map, and the write went through to the cache.

The consumer here is an endpoints computation, as in these controllers: for each pod it lists,
it works out which service selects the pod and tags the pod with it. ``read()`` is one such
consumer run; it returns the pods the cache handed it.

- ``mutate_cached``: writes the tag into the cached pod's labels (the original bug);
- ``shallow_copy``: copies the pod and its metadata, but not the labels map (Istio's first fix);
- ``deep_copy``: deep-copies before writing (the fix in all three projects).

The cache is a reflector (list, watch from the last resourceVersion, relist on 410, back off on
API errors); it stores a fresh object per event and never modifies one it stored.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]
COPIES = ("none", "shallow", "deep")
SERVICE_LABEL = "endpoints.kubesim.io/service"


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


class InformerCache:
    """The informer's indexer: ``get`` and ``list`` hand out the cached objects themselves."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self._lock = threading.Lock()
        self._items: dict[str, Pod] = {}
        self.resource_version = ""

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
            fresh = {_key(pod): pod for pod in listed["items"]}
            with self._lock:
                self._items = fresh
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
                with self._lock:
                    if kind == "DELETED":
                        self._items.pop(_key(obj), None)
                    else:
                        self._items[_key(obj)] = obj
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    def get(self, key: str) -> Pod | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> list[Pod]:
        with self._lock:
            return list(self._items.values())


class EndpointsController:
    """A pod informer and the endpoints computation that consumes it."""

    def __init__(self, api_client: client.ApiClient, *, copies: str) -> None:
        if copies not in COPIES:
            raise ValueError(f"copies must be one of {COPIES}, got copies={copies!r}")
        self.cache = InformerCache(api_client)
        self.copies = copies
        self.endpoints: dict[str, list[str]] = {}

    def run(self) -> None:
        self.cache.run()

    def compute_endpoints(self) -> list[Pod]:
        """Tag each pod with the service that selects it; returns the pods the cache handed out."""
        pods = self.cache.list()
        endpoints: dict[str, list[str]] = {}
        for pod in pods:
            service = _service_for(pod)
            tagged = self._for_writing(pod)
            tagged["metadata"].setdefault("labels", {})[SERVICE_LABEL] = service
            endpoints.setdefault(service, []).append(_key(tagged))
        self.endpoints = endpoints
        return pods

    def _for_writing(self, pod: Pod) -> Pod:
        if self.copies == "deep":
            return copy.deepcopy(pod)
        if self.copies == "shallow":
            # A new pod and a new metadata dict, but the labels map is still the cache's.
            return {**pod, "metadata": dict(pod["metadata"])}
        return pod

    # -- the store contract ------------------------------------------------------------------
    def read(self) -> list[Pod]:
        return self.compute_endpoints()

    def view(self) -> dict[str, Pod]:
        return {_key(pod): pod for pod in self.cache.list()}

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.cache.list())}


def _service_for(pod: Pod) -> str:
    labels = pod["metadata"].get("labels") or {}
    return f"{labels.get('app', 'none')}-{labels.get('tier', 'all')}"


def mutate_cached(api_client: client.ApiClient) -> EndpointsController:
    """Before the fix: the consumer writes into the cached pod's labels."""
    return EndpointsController(api_client, copies="none")


def shallow_copy(api_client: client.ApiClient) -> EndpointsController:
    """A shallow copy that still shares the cached labels map (istio before PR #49866)."""
    return EndpointsController(api_client, copies="shallow")


def deep_copy(api_client: client.ApiClient) -> EndpointsController:
    """After the fix: deep-copy before writing; the cache's objects stay as the server sent."""
    return EndpointsController(api_client, copies="deep")
