"""A pod-IP index when pods share or reuse an IP: one owner per IP, or a set of owners.

Upstream: ``istio/istio`` ``pilot/pkg/serviceregistry/kube/controller/pod.go`` (``PodCache``,
fed by the pod informer's handlers; ``getPodByIP``/``getPodsByIP`` answer "which pod is behind
this address" when a proxy connects and when endpoints are built). Its first version kept
``keys map[string]string`` (IP -> pod key) and on a pod delete ran ``delete(keys, ip)`` whoever
owned the IP; later versions deleted "only if this pod was in the cache", added the reverse map
``IPByPods`` (PR #20690 for issue #20676, "IP address changes to a running pod cause stale caches
in Pilot, breaking pod lookup"), and today make ``podsByIP`` a map from IP to a *set* of pod keys,
removing only the deleted pod's key (one key per IP is what issues #15656 and #24626 describe for
host-network pods, which share the node's IP: they overwrite each other). The same defect,
reported elsewhere: k3s-io/k3s #13225 / PR #13212 (2025: "The tunnel controller removes entries
from the address trie whenever a pod is deleted, without checking to see if the pod is the most
recent one to use that IP"), openshift/openshift-sdn PR #285 ("the cache sees the failed pod
removal and removes the ip ... But it should not have been removed because the running pod put
the entry in"), harmonycloud/kindling (now KindlingProject/kindling) PR #374 (a delayed delete
removed the new pod with the same IP), open-telemetry/opentelemetry-collector-contrib #42978 /
PR #43008 (the delete queue checked the pod *name*, not the uid).

How it shows on a real cluster: an IP is reused while an earlier holder still exists. A Job's
pod completes (Succeeded or Failed keep ``status.podIP``), the IPAM hands the address to a new
pod, and for a while both pods list the same IP (host-network pods share the node's IP all the
time). With one owner per IP, the index answers for the newest writer only, and when the old pod
is finally garbage-collected its delete removes the IP's entry although it now belongs to the
new pod: lookups by that IP find nothing (Pilot builds no inbound config for the new pod; k3s
drops the tunnel route to a webhook) or, after the next update of the old pod, the wrong pod
(telemetry and policy attributed to another workload). It heals only when the new pod is
updated again.

Buggy (``one_owner_per_ip``): ``podsByIP`` holds one key per IP, the last pod indexed under it,
and a delete (or a pod leaving Running/Pending) removes the IP's entry without checking that it
still belongs to that pod. Fixed (``owner_set_per_ip``, istio today): ``podsByIP`` holds the set of
pods indexed under the IP and a delete removes only the deleted pod's key. To keep the comparison
on the reuse defect alone, both variants index with the reverse map ``ipByPods`` (so a pod that
changes or loses its IP, ``models/ip_index``'s subject, is unindexed under the IP it had), and both
index only Pending and Running pods, as istio's cache does.

The model runs the pod informer on the official client (list, watch from the last resourceVersion,
re-watch after a clean end or a cut, relist after a 410 with a tombstone for each vanished pod,
back off after API errors) and the handlers under the cache's lock. ``view()`` is the belief as
consumers get it through the index: every pod in the informer's cache, except that a Running or
Pending pod with an IP is there only if a lookup of its IP returns it (lookups resolve keys through
the informer's cache, as ``getPodByKey`` does, so a key never resolves to a deleted pod).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]

MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    key: str
    obj: Pod


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _ip(pod: Pod) -> str:
    return (pod.get("status") or {}).get("podIP") or ""


def _indexable(pod: Pod) -> bool:
    """Pending or Running, with an IP, not being deleted: what istio's cache holds."""
    phase = (pod.get("status") or {}).get("phase")
    return (
        phase in ("Pending", "Running")
        and bool(_ip(pod))
        and not (pod["metadata"].get("deletionTimestamp"))
    )


class PodCache:
    """The informer's store plus istio's IP index, maintained by the informer's handlers."""

    def __init__(self, api_client: client.ApiClient, *, owner_sets: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.owner_sets = owner_sets
        self._informer_lock = threading.Lock()
        self.pods: dict[str, Pod] = {}  # the informer's indexer
        self.resource_version = ""
        self._lock = threading.Lock()  # PodCache's RWMutex
        self.pods_by_ip: dict[str, set[str]] = {}  # one key per IP in the buggy variant
        self.ip_by_pods: dict[str, str] = {}

    # -- the informer ------------------------------------------------------------------------
    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                self._relist()
                while self._watch():  # it ended or was cut: watch again from the last RV
                    backoff = 1.0  # a watch was open: the trouble is over
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)  # refused: back off, then list again
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        fresh = {_key(pod): pod for pod in listed["items"]}
        with self._informer_lock:
            old, self.pods = self.pods, dict(fresh)
            self.resource_version = listed["metadata"]["resourceVersion"]
        # DeltaFIFO.Replace's order: every listed object first, then a DeletedFinalStateUnknown
        # for each known key the list no longer has.
        for key, pod in fresh.items():
            self.on_event(pod, "update" if key in old else "add")
        for key, last in old.items():
            if key not in fresh:
                self.on_event(DeletedFinalStateUnknown(key, last), "delete")

    def _watch(self) -> bool:
        """One watch from the last RV; True to watch again, False to relist (410)."""
        try:
            response = self.core.list_pod_for_all_namespaces(
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
                key = _key(obj)
                with self._informer_lock:
                    existed = key in self.pods
                    if kind == "DELETED":
                        self.pods.pop(key, None)
                    else:
                        self.pods[key] = obj
                if kind == "DELETED":
                    self.on_event(obj, "delete")
                else:
                    self.on_event(obj, "update" if existed else "add")
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    # -- PodCache.onEvent --------------------------------------------------------------------
    def on_event(self, obj: Pod | DeletedFinalStateUnknown, event: str) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = _key(pod)
        with self._lock:
            ip = _ip(pod) or self.ip_by_pods.get(key, "")  # a pod that lost its IP
            if not ip:
                return
            if event != "delete" and _indexable(pod):
                self._add_pod(ip, key)
            else:
                self._delete_ip(ip, key)

    def _add_pod(self, ip: str, key: str) -> None:
        if self.owner_sets:
            if key in self.pods_by_ip.get(ip, ()):
                return  # already cached under this IP
            current = self.ip_by_pods.get(key)
            if current is not None:  # the pod moved to another IP
                self._discard(current, key)
            self.pods_by_ip.setdefault(ip, set()).add(key)
            self.ip_by_pods[key] = ip
            return
        # One owner per IP: the last pod indexed under an IP owns it.
        if self.pods_by_ip.get(ip) == {key}:
            return
        current = self.ip_by_pods.get(key)
        if current is not None and current != ip:
            self.pods_by_ip.pop(current, None)  # "clean up" the pod's old IP, whoever has it
        self.pods_by_ip[ip] = {key}
        self.ip_by_pods[key] = ip

    def _delete_ip(self, ip: str, key: str) -> None:
        if self.owner_sets:
            if key in self.pods_by_ip.get(ip, ()):  # delete only this pod's key
                self._discard(ip, key)
                self.ip_by_pods.pop(key, None)
            return
        # The bug: the IP's entry goes, whichever pod it belongs to now.
        owners = self.pods_by_ip.pop(ip, set())
        for owner in owners:
            if self.ip_by_pods.get(owner) == ip:
                del self.ip_by_pods[owner]
        if self.ip_by_pods.get(key) == ip:
            del self.ip_by_pods[key]

    def _discard(self, ip: str, key: str) -> None:
        owners = self.pods_by_ip.get(ip)
        if owners is not None:
            owners.discard(key)
            if not owners:
                del self.pods_by_ip[ip]

    # -- what consumers call -----------------------------------------------------------------
    def get_pods_by_ip(self, ip: str) -> list[Pod]:
        """``getPodsByIP``: the index's keys for the IP, resolved through the informer."""
        with self._lock:
            keys = sorted(self.pods_by_ip.get(ip, ()))
        with self._informer_lock:
            return [self.pods[key] for key in keys if key in self.pods]

    # -- hooks -------------------------------------------------------------------------------
    def view(self) -> dict[str, Pod]:
        with self._informer_lock:
            cached = dict(self.pods)
        belief: dict[str, Pod] = {}
        with self._lock:
            for key, pod in cached.items():
                if _indexable(pod) and key not in self.pods_by_ip.get(_ip(pod), ()):
                    continue  # a lookup of this pod's IP does not find it
                belief[key] = pod
        return belief

    def sizes(self) -> dict[str, int]:
        return {
            "pods": len(self.pods),
            "pods_by_ip": len(self.pods_by_ip),
            "ip_by_pods": len(self.ip_by_pods),
        }


def one_owner_per_ip(api_client: client.ApiClient) -> PodCache:
    """Before: one pod per IP; a delete drops the IP's entry even if another pod owns it now."""
    return PodCache(api_client, owner_sets=False)


def owner_set_per_ip(api_client: client.ApiClient) -> PodCache:
    """After (istio today): a set of pods per IP; a delete removes only the deleted pod."""
    return PodCache(api_client, owner_sets=True)
