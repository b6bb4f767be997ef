"""A network policy agent's pod table and ipsets: deletes found by a relist never reach them.

Upstream: ``Azure/azure-container-networking``, the Network Policy Manager's pod controller
``npm/podController.go`` (``podController.addPod``/``updatePod``/``deletePod``, ``syncPod``,
``cleanUpDeletedPod``; the applied state lives in ``NetworkPolicyManager.PodMap`` and in the
kernel's ipsets through ``npm/ipsm/ipsm.go``). PR #785 ("DeletedFinalStateUnknown check missed
delete events") taught ``deletePod`` to unwrap a tombstone, but the key was still computed with
``cache.MetaNamespaceKeyFunc(obj)`` on the tombstone itself, which fails ("object has no meta"),
and the handler returned without queueing anything; PR #856 ("fix management of
DeletedFinalStateUnknown object on deletion event in each controller", April 2021) computes the
key from the unwrapped pod, ``cache.MetaNamespaceKeyFunc(podObj)``: "Current code does not
enqueue a key of DeletedFinalStateUnknown object on deletion event, which may cause leak of
applied states (e.g., ipset, iptables) and keep an item in a local cache (e.g., podMap ...)".
The same family:
projectcalico/kube-controllers PR #707 (pod deletion tombstones), projectcalico/calico #12741 /
PR #12793 (delete handlers that cast the object directly or use ``MetaNamespaceKeyFunc`` "silently
drop the cleanup on the tombstone case").

How the real controller works: a shared pod informer (reflector, DeltaFIFO, indexer) calls the
controller's handlers, which filter (a pod IP, not host network, not completed, a resourceVersion
change, a change NPM cares about) and queue the pod's ``namespace/name`` key in a rate-limited
workqueue. Worker goroutines take keys and ``syncPod`` them: the pod is read from the lister (the
informer's cache); if it is gone and the key is in ``PodMap``, ``cleanUpDeletedPod`` removes its IP
from the namespace ipset and every label ipset and drops the ``PodMap`` entry; otherwise the pod's
IP is added to (or moved between) those ipsets, which the iptables rules of every network policy
match on.

The bug, and when it shows: when the watch is down longer than the server keeps history (an
apiserver upgrade, a long network partition, a watch cache re-init), the reflector relists and
the DeltaFIFO delivers each pod it held and the list lacks as a ``DeletedFinalStateUnknown``
tombstone. Before PR #856 those deletes never reached the workqueue: the informer's cache (the
lister) is right, the pod is gone, but its ``PodMap`` entry and its IP in the ipsets stay for the
life of the agent. When the IP is handed to a new pod, that pod matches the dead pod's label
ipsets, so policies written for another workload allow or deny its traffic. The fix takes the key
from the pod inside the tombstone (calico's PR #12793 uses ``DeletionHandlingMetaNamespaceKeyFunc``,
which reads the tombstone's ``Key``: the same key), so the worker finds the pod gone from the
lister and cleans up. Unlike ``models/cilium`` the object cache here is
always correct and the derived state is rebuilt by a worker from the lister; only the handler's
key function differs.

One departure from NPM's code, in both variants: NPM's ``needSync`` drops every update whose pod
has no IP, so a pod whose IP the kubelet clears together with the phase change (Failed or
Succeeded; ``models/ip_index``'s subject) keeps its ipset entries until it is deleted. Here such
an update is queued when the pod is in ``PodMap``, and the worker, finding the pod complete,
cleans it up; so the two variants differ in the tombstone handling only.

The model: the informer's reflector (list, watch from the last resourceVersion, re-watch after a
clean end or a cut, relist after a 410, back off after API errors), its indexer and its
``HandleDeltas`` (an update per listed pod, a tombstone per vanished one), the three handlers, a
workqueue with client-go's dirty/processing semantics, and one worker thread started by ``run()``
(``podController.Run``).
``view()`` is the agent's belief as its dataplane has it: every pod in the informer's cache, and
for every ``PodMap`` entry whose pod the cache no longer has, the pod as it was programmed (a
phantom). ``effects()`` reports ``cleanUpDeletedPod`` keyed by the pod's uid (once per object);
``expects()`` names that cleanup for the delete of a pod this agent programmed.
"""

from __future__ import annotations

import collections
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
    """client-go's tombstone: the key and the last state the informer had."""

    key: str
    obj: Pod


class NoMetaError(Exception):
    """``MetaNamespaceKeyFunc`` on something that is not an object: "object has no meta"."""


def meta_namespace_key(obj: Any) -> str:
    """``cache.MetaNamespaceKeyFunc``: a tombstone has no ObjectMeta, so it fails."""
    if not isinstance(obj, dict) or "metadata" not in obj:
        raise NoMetaError(f"object has no meta: {obj!r:.60}")
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def _ip(pod: Pod) -> str:
    return (pod.get("status") or {}).get("podIP") or ""


def _host_network(pod: Pod) -> bool:
    return bool((pod.get("spec") or {}).get("hostNetwork"))


def _complete(pod: Pod) -> bool:
    """``isCompletePod``: Succeeded, Failed, or being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


def _ports(pod: Pod) -> list[tuple[str, int, str]]:
    """``getContainerPortList``: the named ports NPM builds named-port ipsets from."""
    return [
        (port.get("name", ""), port.get("containerPort", 0), port.get("protocol", "TCP"))
        for container in (pod.get("spec") or {}).get("containers") or []
        for port in container.get("ports") or []
    ]


@dataclass
class NpmPod:
    """``NpmPod``: what NPM applied for a pod. ``obj`` is the model's addition (see view())."""

    name: str
    namespace: str
    uid: str
    pod_ip: str
    labels: dict[str, str]
    ports: list[tuple[str, int, str]]
    phase: str
    obj: Pod


class IPSetManager:
    """``ipsm.IpsetManager``: set name -> {member IP: the pod key that added it}."""

    def __init__(self) -> None:
        self.sets: dict[str, dict[str, str]] = {}

    def add_to_set(self, name: str, ip: str, pod_key: str) -> None:
        self.sets.setdefault(name, {})[ip] = pod_key

    def delete_from_set(self, name: str, ip: str, pod_key: str) -> None:
        members = self.sets.get(name)
        if members is None or members.get(ip) != pod_key:
            return  # another pod owns this IP in the set now
        del members[ip]
        if not members:
            del self.sets[name]  # an empty set is destroyed

    def members(self) -> int:
        return sum(len(members) for members in self.sets.values())


def _label_sets(namespace: str, labels: dict[str, str]) -> list[str]:
    """The sets a pod's IP goes in: its namespace's, and per label ``key`` and ``key:value``."""
    names = [f"ns-{namespace}"]
    for name, value in sorted(labels.items()):
        names += [name, f"{name}:{value}"]
    return names


class WorkQueue:
    """client-go's workqueue: a key is queued once, and not handed out twice concurrently."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: collections.deque[str] = collections.deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()

    def add(self, key: str) -> None:
        with self._cond:
            if key in self._dirty:
                return
            self._dirty.add(key)
            if key in self._processing:
                return  # queued again by done()
            self._queue.append(key)
            self._cond.notify()

    def get(self) -> str:
        with self._cond:
            while not self._queue:
                self._cond.wait()
            key = self._queue.popleft()
            self._processing.add(key)
            self._dirty.discard(key)
            return key

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)


class PodController:
    """NPM's pod informer, pod controller and its applied state."""

    def __init__(self, api_client: client.ApiClient, *, tombstone_key: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.tombstone_key = tombstone_key
        # The informer.
        self._indexer_lock = threading.Lock()
        self.indexer: dict[str, Pod] = {}
        self.resource_version = ""
        # The controller.
        self.workqueue = WorkQueue()
        self._npm_lock = threading.Lock()  # npMgr.Lock()
        self.pod_map: dict[str, NpmPod] = {}
        self.ipsets = IPSetManager()
        self._effects_lock = threading.Lock()
        self.performed: list[str] = []

    # -- the informer's reflector and HandleDeltas -------------------------------------------
    def run(self) -> None:
        # podController.Run: the worker goroutines start with the controller.
        threading.Thread(target=self._run_worker, name="pod-worker", daemon=True).start()
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
        fresh = {meta_namespace_key(pod): pod for pod in listed["items"]}
        with self._indexer_lock:
            old, self.indexer = self.indexer, dict(fresh)
            self.resource_version = listed["metadata"]["resourceVersion"]
        for key, last in old.items():
            if key not in fresh:  # deleted while we were away: a tombstone
                self.delete_pod(DeletedFinalStateUnknown(key, last))
        for key, pod in fresh.items():
            if key in old:
                self.update_pod(old[key], pod)
            else:
                self.add_pod(pod)

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
                key = meta_namespace_key(obj)
                with self._indexer_lock:
                    before = self.indexer.get(key)
                    if kind == "DELETED":
                        self.indexer.pop(key, None)
                    else:
                        self.indexer[key] = obj
                if kind == "DELETED":
                    self.delete_pod(obj)
                elif before is None:
                    self.add_pod(obj)
                else:
                    self.update_pod(before, obj)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    def _lister_get(self, key: str) -> Pod | None:
        with self._indexer_lock:
            return self.indexer.get(key)

    # -- the handlers (podController.go) -----------------------------------------------------
    def _need_sync(self, obj: Any) -> str | None:
        if not isinstance(obj, dict):
            return None  # "Received unexpected object type"
        if not _ip(obj) or _host_network(obj):
            return None
        return meta_namespace_key(obj)

    def add_pod(self, obj: Pod) -> None:
        key = self._need_sync(obj)
        if key is None or _complete(obj):
            return
        self.workqueue.add(key)

    def update_pod(self, old: Pod, new: Pod) -> None:
        key = self._need_sync(new)
        if key is None:
            # The model's one departure from NPM (see the module docstring): an update that
            # cleared the IP of a pod NPM programmed is queued, so the worker cleans it up.
            if isinstance(new, dict) and not _ip(new) and not _host_network(new):
                cleared = meta_namespace_key(new)
                with self._npm_lock:
                    programmed = cleared in self.pod_map
                if programmed:
                    self.workqueue.add(cleared)
            return
        if old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]:
            return  # a resync: two versions of a pod always differ in resourceVersion
        with self._npm_lock:
            cached = self.pod_map.get(key)
            if cached is not None and _invalid_pod_update(cached, new):
                return  # nothing NPM applied has changed
        self.workqueue.add(key)

    def delete_pod(self, obj: Pod | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj  # PR #785
        if _host_network(pod):
            return
        try:
            # PR #856: MetaNamespaceKeyFunc(podObj), the unwrapped pod; before it, (obj).
            key = meta_namespace_key(pod if self.tombstone_key else obj)
        except NoMetaError:
            # Before PR #856: MetaNamespaceKeyFunc(tombstone) fails; the error is logged and
            # the delete is dropped.
            return
        with self._npm_lock:
            if key not in self.pod_map:
                return  # nothing was applied for this pod
        self.workqueue.add(key)

    # -- the worker --------------------------------------------------------------------------
    def _run_worker(self) -> None:
        while True:
            key = self.workqueue.get()
            try:
                self.sync_pod(key)
            finally:
                self.workqueue.done(key)

    def sync_pod(self, key: str) -> None:
        pod = self._lister_get(key)
        with self._npm_lock:
            if pod is None:
                if key in self.pod_map:
                    self._clean_up_deleted_pod(key)  # "may be it is deleted"
                return
            if _complete(pod):
                if key in self.pod_map:
                    self._clean_up_deleted_pod(key)
                return
            if not _ip(pod):
                return
            self._sync_add_and_update_pod(key, pod)

    def _sync_add_and_update_pod(self, key: str, pod: Pod) -> None:
        cached = self.pod_map.get(key)
        ip = _ip(pod)
        labels = dict(pod["metadata"].get("labels") or {})
        record = NpmPod(
            name=pod["metadata"]["name"],
            namespace=pod["metadata"].get("namespace", ""),
            uid=pod["metadata"]["uid"],
            pod_ip=ip,
            labels=labels,
            ports=_ports(pod),
            phase=(pod.get("status") or {}).get("phase") or "",
            obj=pod,
        )
        if cached is None:
            for name in _label_sets(record.namespace, labels):
                self.ipsets.add_to_set(name, ip, key)
        else:
            old_sets = set(_label_sets(cached.namespace, cached.labels))
            new_sets = set(_label_sets(record.namespace, labels))
            if cached.pod_ip != ip:
                for name in sorted(old_sets):
                    self.ipsets.delete_from_set(name, cached.pod_ip, key)
                old_sets = set()
            for name in sorted(old_sets - new_sets):
                self.ipsets.delete_from_set(name, ip, key)
            for name in sorted(new_sets - old_sets):
                self.ipsets.add_to_set(name, ip, key)
        self.pod_map[key] = record

    def _clean_up_deleted_pod(self, key: str) -> None:
        cached = self.pod_map.pop(key)
        for name in _label_sets(cached.namespace, cached.labels):
            self.ipsets.delete_from_set(name, cached.pod_ip, key)
        with self._effects_lock:
            self.performed.append(cached.uid)

    # -- hooks -------------------------------------------------------------------------------
    def view(self) -> dict[str, Pod]:
        with self._indexer_lock:
            belief = dict(self.indexer)
        with self._npm_lock:
            for key, record in self.pod_map.items():
                cached = belief.get(key)
                if cached is None or cached["metadata"].get("uid") != record.uid:
                    belief[key] = record.obj  # the dataplane still has this pod
        return belief

    def effects(self) -> list[str]:
        """The ``cleanUpDeletedPod`` runs since the last call, keyed by the pod's uid."""
        with self._effects_lock:
            done, self.performed = self.performed, []
        return done

    def expects(self, event: dict[str, Any]) -> str | None:
        """A delete of a pod this agent programmed must clean it up, once."""
        if event.get("type") != "DELETED":
            return None
        pod = event["object"]
        uid = pod["metadata"].get("uid")
        if _host_network(pod):
            return None
        with self._npm_lock:
            programmed = any(record.uid == uid for record in self.pod_map.values())
        return uid if programmed else None

    def sizes(self) -> dict[str, int]:
        return {
            "indexer": len(self.indexer),
            "pod_map": len(self.pod_map),
            "ipsets": len(self.ipsets.sets),
            "ipset_members": self.ipsets.members(),
            "workqueue": len(self.workqueue),
        }


def _invalid_pod_update(cached: NpmPod, new: Pod) -> bool:
    """``isInvalidPodUpdate``: True when nothing NPM applied for the pod has changed."""
    meta = new["metadata"]
    return (
        cached.namespace == meta.get("namespace", "")
        and cached.name == meta["name"]
        and cached.phase == ((new.get("status") or {}).get("phase") or "")
        and cached.pod_ip == _ip(new)
        and not meta.get("deletionTimestamp")
        and cached.labels == (meta.get("labels") or {})
        and cached.ports == _ports(new)
    )


def drops_tombstone_deletes(api_client: client.ApiClient) -> PodController:
    """After PR #785, before PR #856: a tombstone's key fails to compute; nothing is queued."""
    return PodController(api_client, tombstone_key=False)


def keys_tombstones(api_client: client.ApiClient) -> PodController:
    """After PR #856: the key comes from the pod inside the tombstone, and is queued."""
    return PodController(api_client, tombstone_key=True)
