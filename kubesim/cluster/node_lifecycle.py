"""The node lifecycle and taint eviction controllers: a node no kubelet reports on goes
``Unknown``, is tainted ``unreachable``, and its pods are evicted once they stop tolerating it.

kube-controller-manager watches every node's health (pkg/controller/nodelifecycle): a node's
kubelet proves it is alive by posting its status (the ``Ready`` condition's
``lastHeartbeatTime``) or renewing its Lease in ``kube-node-lease``. When neither happens for
the grace period (``NODE_STARTUP_GRACE_PERIOD`` after creation for a node that never posted a
``Ready`` condition, ``NODE_MONITOR_GRACE_PERIOD`` after the last proof otherwise):

- the ``Ready``, ``MemoryPressure``, ``DiskPressure`` and ``PIDPressure`` conditions become
  ``Unknown``: a missing one is added with reason ``NodeStatusNeverUpdated`` ("Kubelet never
  posted node status."), an existing one changes to reason ``NodeStatusUnknown`` ("Kubelet
  stopped posting node status."), keeping its heartbeat;
- the node is tainted ``node.kubernetes.io/unreachable`` with ``NoSchedule`` and ``NoExecute``
  (the latter with ``timeAdded``), an Event ``NodeNotReady`` is recorded on it, and its pods'
  ``Ready`` condition turns ``False`` (an Event ``NodeNotReady`` on each);
- the taint eviction controller (pkg/controller/tainteviction) deletes each pod on the node that
  does not tolerate every ``NoExecute`` taint at once, and one that does after the least
  ``tolerationSeconds`` of the tolerations it uses (300 s with the default tolerations), never
  when one of them has none; first the pod gets a ``DisruptionTarget`` condition and an Event
  ``TaintManagerEviction``.

A node whose ``Ready`` condition is posted ``True`` again loses the two taints, and evictions
not yet due are called off. The nodes kubesim's own kubelets run (:mod:`kubesim.cluster.kubelet`)
are always healthy: this controller leaves them alone, so it acts only on nodes a client
created. The real controller checks every 5 s (``--node-monitor-period``); kubesim acts at the
moment the grace period ends, on the virtual clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kubesim.admission.tolerations import UNREACHABLE, tolerates
from kubesim.apiserver.storage import DELETED, Event
from kubesim.cluster.events import WARNING

if TYPE_CHECKING:
    from kubesim.cluster.cluster import Cluster

JSON = dict[str, Any]
T = TypeVar("T")

# kube-controller-manager's --node-startup-grace-period and --node-monitor-grace-period (50 s
# since 1.32; 40 s before).
NODE_STARTUP_GRACE_PERIOD = 60.0
NODE_MONITOR_GRACE_PERIOD = 50.0
LEASE_NAMESPACE = "kube-node-lease"
CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
COMPONENT = "node-controller"
EVICTION_COMPONENT = "taint-eviction-controller"


class NodeLifecycleController:
    """Node health, unreachable taints and taint-based eviction for one server."""

    def __init__(self, server: Cluster) -> None:
        self.server = server
        self.nodes = server.resource("nodes")
        self.pods = server.resource("pods")
        # Node name -> (uid, the heartbeat last seen, when it was seen on the virtual clock).
        self._health: dict[str, tuple[str, Any, float]] = {}
        # Pod (namespace, name) -> the uid an eviction is scheduled for.
        self._evicting: dict[tuple[str, str], str] = {}
        self._writing = False  # our own writes are not heartbeats

    # -- watching ---------------------------------------------------------------------------
    def sync(self, event: Event) -> None:
        """React to one committed write (called by the server, its lock held)."""
        if self._writing:
            return
        if event.resource is self.nodes:
            self._node_changed(event)
        elif (
            event.resource.kind == "Lease"
            and event.key[0] == LEASE_NAMESPACE
            and event.type != DELETED
        ):
            renewed = (event.new.obj.get("spec") or {}).get("renewTime")
            self._observe(event.key[1], ("lease", renewed))

    def _node_changed(self, event: Event) -> None:
        node = event.new.obj
        name, uid = node["metadata"]["name"], node["metadata"]["uid"]
        if event.type == DELETED:
            self._health.pop(name, None)
            return
        if self.server.kubelet_runs(uid):
            return
        ready = _condition(node, "Ready")
        seen = self._health.get(name)
        if seen is None or seen[0] != uid:
            grace = NODE_MONITOR_GRACE_PERIOD if ready else NODE_STARTUP_GRACE_PERIOD
            self._probe(name, uid, _heartbeat(ready), grace)
            return
        if _heartbeat(ready) != seen[1]:
            self._probe(name, uid, _heartbeat(ready), NODE_MONITOR_GRACE_PERIOD)
            if ready is not None and ready.get("status") == "True":
                self._recovered(node)

    def _observe(self, name: str, proof: Any) -> None:
        """A Lease renewed: the node's kubelet is alive."""
        seen = self._health.get(name)
        if seen is not None and seen[1] != proof:
            self._probe(name, seen[0], proof, NODE_MONITOR_GRACE_PERIOD)

    def _probe(self, name: str, uid: str, proof: Any, grace: float) -> None:
        now = self.server.clock.now()
        self._health[name] = (uid, proof, now)
        self.server.clock.call_later(grace, lambda: self._check(name, uid, now))

    # -- a node that stopped reporting --------------------------------------------------------
    def _check(self, name: str, uid: str, probed_at: float) -> None:
        with self.server.lock:
            seen = self._health.get(name)
            if seen is None or seen[0] != uid or seen[2] != probed_at:
                return  # deleted, replaced, or proven alive since
            if self.server.kubelet_runs(uid):
                return  # registered by a kubelet here after all (its ADDED came first)
            stored = self.server.storage.get(self.nodes, ("", name))
            if stored is None:
                return
            self._unreachable(stored.obj)

    def _unreachable(self, node: JSON) -> None:
        now = self.server.clock.timestamp()
        status = dict(node.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
        was_ready = (_condition(node, "Ready") or {}).get("status") == "True"
        for kind in CONDITION_TYPES:
            current = next((c for c in conditions if c.get("type") == kind), None)
            if current is None:
                conditions.append(
                    {
                        "type": kind,
                        "status": "Unknown",
                        "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                        "lastTransitionTime": now,
                        "reason": "NodeStatusNeverUpdated",
                        "message": "Kubelet never posted node status.",
                    }
                )
            elif current.get("status") != "Unknown":
                current.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastTransitionTime=now,
                )
        name = node["metadata"]["name"]
        tainted = self._set_taints(
            self._write_status(name, {**status, "conditions": conditions}), add=True
        )
        pods = self._pods_on(name)
        if was_ready:  # reported once, when Ready stops being True
            message = f"Node {name} status is now: NodeNotReady"
            self.server.recorder.record(tainted, "NodeNotReady", message, component=COMPONENT)
            for key, pod in pods:
                self._mark_not_ready(key, pod)
        for key, _ in pods:
            self._consider_eviction(key, tainted)

    def _recovered(self, node: JSON) -> None:
        if any(t.get("key") == UNREACHABLE for t in _taints(node)):
            self._set_taints(node, add=False)

    # -- writes ---------------------------------------------------------------------------------
    def _write_status(self, name: str, status: JSON) -> JSON:
        body = {"metadata": {"name": name}, "status": status}
        return self._write(
            lambda: self.server.registry.update(self.nodes, None, name, body, "status").obj
        )

    def _set_taints(self, node: JSON, *, add: bool) -> JSON:
        kept = [t for t in _taints(node) if t.get("key") != UNREACHABLE]
        if add:
            now = self.server.clock.timestamp()
            kept += [
                {"key": UNREACHABLE, "effect": "NoSchedule"},
                {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now},
            ]
        body = {**node, "spec": {**(node.get("spec") or {}), "taints": kept}}
        if not kept:
            del body["spec"]["taints"]
        name = node["metadata"]["name"]
        return self._write(
            lambda: self.server.registry.update(self.nodes, None, name, body, None).obj
        )

    def _write(self, write: Callable[[], T]) -> T:
        """Make one write as the controller: no field manager, and not taken for a heartbeat."""
        writing, self._writing = self._writing, True
        manager, self.server.field_manager = self.server.field_manager, None
        try:
            return write()
        finally:
            self._writing = writing
            self.server.field_manager = manager

    def _pods_on(self, node_name: str) -> list[tuple[tuple[str, str], JSON]]:
        return [
            (key, stored.obj)
            for key, stored in self.server.storage.items(self.pods)
            if (stored.obj.get("spec") or {}).get("nodeName") == node_name
        ]

    def _mark_not_ready(self, key: tuple[str, str], pod: JSON) -> None:
        """nodeutil.MarkPodsNotReady: the pod's Ready condition turns False."""
        status = dict(pod.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None or ready.get("status") == "False":
            return
        ready.update(status="False", lastTransitionTime=self.server.clock.timestamp())
        body = {"metadata": {"name": key[1]}, "status": {**status, "conditions": conditions}}
        updated = self._write(
            lambda: self.server.registry.update(self.pods, key[0], key[1], body, "status").obj
        )
        self.server.recorder.record(
            updated, "NodeNotReady", "Node is not ready", component=COMPONENT, kind=WARNING
        )

    # -- taint eviction ---------------------------------------------------------------------------
    def _consider_eviction(self, key: tuple[str, str], node: JSON) -> None:
        taints = [t for t in _taints(node) if t.get("effect") == "NoExecute"]
        stored = self.server.storage.get(self.pods, key)
        if not taints or stored is None:
            return
        pod = stored.obj
        tolerations = [
            t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, dict)
        ]
        used = []
        for taint in taints:
            matching = [t for t in tolerations if tolerates(t, taint)]
            if not matching:
                self._evict(key, pod["metadata"]["uid"])
                return
            used.extend(matching)
        seconds = [t.get("tolerationSeconds") for t in used]
        if None in seconds:
            return  # tolerated for ever
        wait = max(0, min(int(s) for s in seconds if s is not None))
        uid = pod["metadata"]["uid"]
        if wait == 0:
            self._evict(key, uid)
            return
        self._evicting[key] = uid
        node_name = node["metadata"]["name"]
        self.server.clock.call_later(
            wait, lambda: self._evict_if_still_tainted(key, uid, node_name)
        )

    def _evict_if_still_tainted(self, key: tuple[str, str], uid: str, node_name: str) -> None:
        with self.server.lock:
            if self._evicting.get(key) != uid:
                return
            del self._evicting[key]
            node = self.server.storage.get(self.nodes, ("", node_name))
            if node is None or not any(
                t.get("key") == UNREACHABLE and t.get("effect") == "NoExecute"
                for t in _taints(node.obj)
            ):
                return  # the node came back: the eviction is called off
            self._evict(key, uid)

    def _evict(self, key: tuple[str, str], uid: str) -> None:
        stored = self.server.storage.get(self.pods, key)
        if stored is None or stored.obj["metadata"]["uid"] != uid:
            return
        pod = stored.obj
        self.server.recorder.record(
            pod,
            "TaintManagerEviction",
            f"Marking for deletion Pod {key[0]}/{key[1]}",
            component=EVICTION_COMPONENT,
        )
        status = dict(pod.get("status") or {})
        conditions = [
            dict(c)
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastTransitionTime": self.server.clock.timestamp(),
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
            }
        )
        body = {"metadata": {"name": key[1]}, "status": {**status, "conditions": conditions}}
        self._write(lambda: self.server.registry.update(self.pods, key[0], key[1], body, "status"))
        self._write(lambda: self.server.registry.delete(self.pods, key[0], key[1], {}))


def _condition(node: JSON, kind: str) -> JSON | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def _heartbeat(ready: JSON | None) -> Any:
    return None if ready is None else ("status", ready.get("lastHeartbeatTime"))


def _taints(node: JSON) -> list[JSON]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]


__all__ = [
    "NODE_MONITOR_GRACE_PERIOD",
    "NODE_STARTUP_GRACE_PERIOD",
    "NodeLifecycleController",
]
