"""A pod cache with a podIP index (the Istio and OpenTelemetry shape), before and after the fix.

Upstream: ``istio/istio`` ``pilot/pkg/serviceregistry/kube/controller/pod.go`` (``PodCache``:
``podsByIP``, ``IPByPods``, updated from the pod informer's handlers), issues #54997 and #20676;
``open-telemetry/opentelemetry-collector-contrib`` ``processor/k8sattributesprocessor``
(``internal/kube/client.go``: pods indexed by their IP connection identifier), issue #48986.

Both projects keep, beside the informer's cache, an index from a pod's IP to the pod, maintained
by their own ``OnAdd``/``OnUpdate``/``OnDelete`` handlers (not rebuilt on a relist). The bug:
when a pod ends (phase ``Failed`` or ``Succeeded``) the kubelet clears ``status.podIP`` in the
*same* status update that changes the phase. The update handler only (re)indexed pods that have
an IP, so a pod whose IP was cleared kept its old entry; and the delete handler looked up the
entry by the deleted object's IP, which is empty by then. The index goes on answering lookups of
that IP with a pod that no longer has it (or no longer exists), and once the IP is handed to
another pod, telemetry and traffic are attributed to the wrong workload.

The fix (both projects): remember which IP each pod was indexed under and remove that entry on
every update and delete, whatever the new object says; index the new IP if there is one.

The store is a reflector (list, watch from the last resourceVersion, relist on 410, back off on
API errors). ``view()`` is the store's belief as seen through the index: every cached pod, and
for every pod the index holds, the object the index resolves to (a stale entry shows as a stale
version, or as a phantom once the pod is deleted).
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


def _pod_ip(pod: Pod | None) -> str:
    return ((pod or {}).get("status") or {}).get("podIP") or ""


class PodIPCache:
    """The informer's cache plus the handler-maintained IP index."""

    def __init__(self, api_client: client.ApiClient, *, unindex_on_every_update: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.unindex_on_every_update = unindex_on_every_update
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.by_ip: dict[str, tuple[str, Pod]] = {}  # podIP -> (pod key, pod as indexed)
        self.ip_of: dict[str, str] = {}  # pod key -> the IP it is indexed under (the fix)
        self.resource_version = ""

    # -- the reflector -----------------------------------------------------------------------
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
        for key, old in list(self.pods.items()):
            if key not in fresh:
                self.on_delete(old)  # the informer's Replace: a delete for what vanished
        for key, pod in fresh.items():
            old = self.pods.get(key)
            if old is None:
                self.on_add(pod)
            else:
                self.on_update(old, pod)
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
                old = self.pods.get(_key(obj))
                if kind == "DELETED":
                    self.on_delete(obj)
                elif old is None:
                    self.on_add(obj)
                else:
                    self.on_update(old, obj)
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    # -- the handlers ------------------------------------------------------------------------
    def on_add(self, pod: Pod) -> None:
        with self._lock:
            self.pods[_key(pod)] = pod
            self._index(_key(pod), None, pod)

    def on_update(self, old: Pod, pod: Pod) -> None:
        with self._lock:
            self.pods[_key(pod)] = pod
            self._index(_key(pod), old, pod)

    def on_delete(self, pod: Pod) -> None:
        key = _key(pod)
        with self._lock:
            self.pods.pop(key, None)
            if self.unindex_on_every_update:
                self._unindex(key, self.ip_of.pop(key, ""))
            else:
                # Before the fix: the entry is looked up by the deleted object's IP, which a
                # terminated pod no longer has.
                self._unindex(key, _pod_ip(pod))

    def _index(self, key: str, old: Pod | None, pod: Pod) -> None:
        ip = _pod_ip(pod)
        if self.unindex_on_every_update:
            self._unindex(key, self.ip_of.pop(key, ""))
            if ip:
                self.by_ip[ip] = (key, pod)
                self.ip_of[key] = ip
            return
        # Before the fix: only a pod with an IP is (re)indexed; an IP cleared together with the
        # phase change leaves the old entry behind.
        if ip:
            old_ip = _pod_ip(old)
            if old_ip and old_ip != ip:
                self._unindex(key, old_ip)
            self.by_ip[ip] = (key, pod)

    def _unindex(self, key: str, ip: str) -> None:
        if ip and ip in self.by_ip and self.by_ip[ip][0] == key:
            del self.by_ip[ip]

    # -- what consumers see ------------------------------------------------------------------
    def pod_by_ip(self, ip: str) -> Pod | None:
        with self._lock:
            entry = self.by_ip.get(ip)
        return entry[1] if entry else None

    def view(self) -> dict[str, Pod]:
        with self._lock:
            belief = dict(self.pods)
            for key, pod in self.by_ip.values():
                belief[key] = pod  # what a lookup by IP answers for this pod
            return belief

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods), "by_ip": len(self.by_ip)}


def stale_entry_on_ip_clear(api_client: client.ApiClient) -> PodIPCache:
    """Before the fix: an update that clears podIP (or a delete of such a pod) keeps the entry."""
    return PodIPCache(api_client, unindex_on_every_update=False)


def unindex_on_every_update(api_client: client.ApiClient) -> PodIPCache:
    """After the fix: the entry a pod was indexed under goes on every update and delete."""
    return PodIPCache(api_client, unindex_on_every_update=True)
