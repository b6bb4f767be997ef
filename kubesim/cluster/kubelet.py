"""Nodes, the scheduler and the kubelet: pods go from ``Pending`` to ``Running``, and terminate.

Tests written for a real cluster create a pod and wait for it to leave ``Pending`` (``kubectl
wait --for=condition=Ready``, a loop on ``status.phase``); stores that watch pods see each one
written three times as it starts and three times as it is deleted. kubesim plays the
components that do this on a cluster, with no containers:

- **Nodes** register themselves as a kubelet does (``node-0`` ... ``node-{n-1}``): ``Ready``,
  with capacity, addresses, ``nodeInfo`` and a ``podCIDR`` each.
- **The scheduler** binds every pod that names no node and asks for ``default-scheduler``
  (``spec.schedulerName``) to the node with the fewest pods that the pod's ``nodeSelector`` and
  required node affinity allow (:func:`fits_node`), ties going to the first name:
  ``spec.nodeName`` and the ``PodScheduled`` condition in one write, as the ``pods/binding``
  subresource writes them (``assignPod`` in pkg/registry/core/pod/storage/storage.go). A pod no
  node fits gets ``PodScheduled=False``, reason ``Unschedulable``, with the scheduler's
  message, and is bound when a node that fits is added or relabelled. Capacity (``pods: 110``)
  is reported, not enforced.
- **The kubelet** of the pod's node starts it ``CONTAINER_START_SECONDS`` after it is bound (on
  the server's clock): one status write with ``phase: Running``, a pod IP from the node's
  ``podCIDR``, the five conditions a 1.29+ kubelet reports, and a running, ready status per
  container (init containers ``Completed``). Containers run until the pod is deleted: there is
  no command to exit, no probe to fail and no restart; readiness probes pass at once.
- **Graceful deletion**: a DELETE of a pod a kubelet here runs marks it (``deletionTimestamp``
  its grace period ahead: the request's ``gracePeriodSeconds``, else the pod's
  ``terminationGracePeriodSeconds``); the kubelet stops its containers
  ``CONTAINER_STOP_SECONDS`` later (or sooner, for a shorter grace period), reports them
  terminated, and deletes the pod with a zero grace period. A zero grace period, or a pod no
  kubelet here runs, is deleted at once.

A deleted node is not re-registered. The writes are made under the server's lock, as the next
write after the one that called for them (or from a timer on the virtual clock), so a
simulation that turns nodes on stays a function of its seed. ``kubesim serve`` runs one node;
simulations run none by default: stores under test rarely watch nodes, and a scenario writes
pod status itself.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from typing import TYPE_CHECKING, Any

from kubesim._core import integers
from kubesim.admission.tolerations import untolerated_taint
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.storage import ADDED, DELETED, MODIFIED, Event
from kubesim.cluster.events import WARNING

if TYPE_CHECKING:
    from kubesim.cluster.cluster import Cluster

JSON = dict[str, Any]

DEFAULT_SCHEDULER = "default-scheduler"
# Image pull and container start, as a kubelet with the image already pulled takes.
CONTAINER_START_SECONDS = 0.5
# How long containers take to stop once their pod is deleted (at most its grace period).
CONTAINER_STOP_SECONDS = 0.5
DEFAULT_GRACE_PERIOD_SECONDS = 30
# What every node reports (a modest machine; nothing here is enforced).
NODE_CAPACITY = {
    "cpu": "4",
    "ephemeral-storage": "102400000Ki",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "16384000Ki",
    "pods": "110",
}
KUBELET_VERSION = "v1.33.0"
LEASE_NAMESPACE = "kube-node-lease"
CONTAINER_RUNTIME = "containerd://2.0.3"


def node_name(index: int) -> str:
    return f"node-{index}"


def pod_cidr(index: int) -> str:
    return f"10.244.{index}.0/24"


def node_ip(index: int) -> str:
    return f"172.18.0.{index + 2}"


class Nodes:
    """The nodes of one server, its scheduler and its kubelets (see the module docstring)."""

    def __init__(self, server: Cluster, count: int) -> None:
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 250:
            raise ValueError(f"nodes must be an int from 0 to 250, got nodes={count!r}")
        self.server = server
        self.count = count
        self.pods = server.resource("pods")
        self.nodes = server.resource("nodes")
        self._choices = server.choices.fork("kubelet")
        # Pod IPs in use per node (the host part of the node's /24), freed when a pod is deleted.
        self._ips: dict[str, dict[tuple[str, str], int]] = {}
        # Pods whose containers a kubelet is about to start, by (namespace, name): their uid.
        self._starting: dict[tuple[str, str], str] = {}
        # Pods a kubelet is stopping, by (namespace, name): their uid and when it deletes them.
        self._stopping: dict[tuple[str, str], tuple[str, float]] = {}
        # The uids of the nodes these kubelets registered (and keep healthy).
        self.node_uids: set[str] = set()

    # -- nodes ----------------------------------------------------------------------------
    def register(self) -> None:
        """Every kubelet registers its node (``kubelet_node_status.go registerWithAPIServer``)
        and its Lease in ``kube-node-lease``, owned by the node (the lease is not renewed)."""
        leases = self.server.lookup("coordination.k8s.io", "v1", "leases")
        has_lease_namespace = self.server.storage.get(
            self.server.namespace_resource, ("", LEASE_NAMESPACE)
        )
        for index in range(self.count):
            node = self.server.registry.create(self.nodes, self._node(index), None).obj
            self.node_uids.add(node["metadata"]["uid"])
            if leases is not None and has_lease_namespace is not None:
                self.server.registry.create(leases, self._lease(node), LEASE_NAMESPACE)

    def _lease(self, node: JSON) -> JSON:
        name = node["metadata"]["name"]
        clock = self.server.clock
        renewed = clock.epoch + _dt.timedelta(seconds=clock.now())
        owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
        return {
            "metadata": {"name": name, "ownerReferences": [owner]},
            "spec": {
                "holderIdentity": name,
                "leaseDurationSeconds": 40,
                "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
        }

    def _node(self, index: int) -> JSON:
        name = node_name(index)
        now = self.server.clock.timestamp()
        condition_text = {
            "MemoryPressure": ("KubeletHasSufficientMemory", "kubelet has sufficient memory"),
            "DiskPressure": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            "PIDPressure": ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            "Ready": ("KubeletReady", "kubelet is posting ready status"),
        }
        machine = hashlib.sha256(f"kubesim {name}".encode()).hexdigest()
        return {
            "metadata": {
                "name": name,
                "labels": {
                    "beta.kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                },
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {"podCIDR": pod_cidr(index), "podCIDRs": [pod_cidr(index)]},
            "status": {
                "capacity": dict(NODE_CAPACITY),
                "allocatable": dict(NODE_CAPACITY),
                "conditions": [
                    {
                        "type": kind,
                        "status": "True" if kind == "Ready" else "False",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                        "reason": reason,
                        "message": message,
                    }
                    for kind, (reason, message) in condition_text.items()
                ],
                "addresses": [
                    {"type": "InternalIP", "address": node_ip(index)},
                    {"type": "Hostname", "address": name},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "machineID": machine[:32],
                    "systemUUID": _uuid_text(machine[32:]),
                    "bootID": _uuid_text(hashlib.sha256(machine.encode()).hexdigest()),
                    "kernelVersion": "6.1.0-kubesim",
                    "osImage": "Debian GNU/Linux 12 (bookworm)",
                    "containerRuntimeVersion": CONTAINER_RUNTIME,
                    "kubeletVersion": KUBELET_VERSION,
                    "kubeProxyVersion": KUBELET_VERSION,
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                },
            },
        }

    def live_nodes(self) -> dict[str, JSON]:
        """The nodes that exist and are ours, by name (a client may add or delete nodes)."""
        ours = {node_name(i) for i in range(self.count)}
        return {
            key[1]: stored.obj
            for key, stored in self.server.storage.items(self.nodes)
            if key[1] in ours
        }

    # -- events ---------------------------------------------------------------------------
    def sync(self, event: Event) -> None:
        """React to one committed write (called by the server, its lock held)."""
        if event.resource is self.pods:
            if event.type == DELETED:
                self._starting.pop(event.key, None)
                self._stopping.pop(event.key, None)
                for ips in self._ips.values():
                    ips.pop(event.key, None)
                return
            pod = event.new.obj
            spec = pod.get("spec")
            if not isinstance(spec, dict):
                return
            if pod["metadata"].get("deletionTimestamp"):
                self._stop_later(event.key, pod)
                return
            if not spec.get("nodeName"):
                if spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER:
                    self._schedule(event.key, pod)
            elif _waiting_to_start(pod) and event.key not in self._starting:
                self._start_later(event.key, pod)
        elif event.resource is self.nodes and event.type in (ADDED, MODIFIED):
            self._schedule_pending()

    # -- the scheduler --------------------------------------------------------------------
    def _schedule_pending(self) -> None:
        """A node appeared or changed: try every pod still waiting for one, in key order."""
        waiting = [
            (key, stored.obj)
            for key, stored in self.server.storage.items(self.pods)
            if not (stored.obj.get("spec") or {}).get("nodeName")
            and (stored.obj.get("spec") or {}).get("schedulerName", DEFAULT_SCHEDULER)
            == DEFAULT_SCHEDULER
            and not stored.obj["metadata"].get("deletionTimestamp")
        ]
        for key, pod in waiting:
            self._schedule(key, pod)

    def _schedule(self, key: tuple[str, str], pod: JSON) -> None:
        nodes = self.live_nodes()
        # The first filter each node fails, in the default profile's order: NodeUnschedulable
        # (a cordoned node), TaintToleration, then NodeAffinity.
        unfit: dict[str, str] = {}
        for name, node in nodes.items():
            taint = untolerated_taint(pod, node)
            if cordoned_for(pod, node):
                unfit[name] = "node(s) were unschedulable"
            elif taint is not None:
                shown = f"{taint.get('key', '')}: {taint.get('value', '')}"
                unfit[name] = f"node(s) had untolerated taint {{{shown}}}"
            elif not fits_node(pod, node):
                unfit[name] = "node(s) didn't match Pod's node affinity/selector"
        fits = [name for name in nodes if name not in unfit]
        if not fits:
            self._unschedulable(key, pod, len(nodes), list(unfit.values()))
            return
        load = dict.fromkeys(fits, 0)
        for _, stored in self.server.storage.items(self.pods):
            on = (stored.obj.get("spec") or {}).get("nodeName")
            if on in load:
                load[on] += 1
        chosen = min(fits, key=lambda name: (load[name], name))
        bound = self.server.registry.bind(self.pods, key[0], key[1], chosen).obj
        self.server.recorder.record(
            bound,
            "Scheduled",
            f"Successfully assigned {key[0]}/{key[1]} to {chosen}",
            component=DEFAULT_SCHEDULER,
        )

    def _unschedulable(
        self, key: tuple[str, str], pod: JSON, total: int, reasons: list[str]
    ) -> None:
        if total == 0:
            message = "no nodes available to schedule pods"
        else:
            # FitError: how many nodes failed for each reason, the reasons sorted.
            counts = ", ".join(f"{reasons.count(r)} {r}" for r in sorted(set(reasons)))
            message = (
                f"0/{total} nodes are available: {counts}. preemption: 0/{total} nodes are "
                f"available: {total} Preemption is not helpful for scheduling."
            )
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": self.server.clock.timestamp(),
            "reason": "Unschedulable",
            "message": message,
        }
        status = _dict(pod.get("status"))
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        said = {"type": "PodScheduled", "status": "False", "message": message}
        if any(all(c.get(k) == v for k, v in said.items()) for c in conditions):
            return  # already said so: the scheduler does not write the same thing twice
        kept = [c for c in conditions if c.get("type") != "PodScheduled"]
        self._write_status(key, {**status, "conditions": [*kept, condition]})
        stored = self.server.storage.get(self.pods, key)
        if stored is not None:
            self.server.recorder.record(
                stored.obj, "FailedScheduling", message, component=DEFAULT_SCHEDULER, kind=WARNING
            )

    # -- the kubelet ----------------------------------------------------------------------
    def _start_later(self, key: tuple[str, str], pod: JSON) -> None:
        if pod["spec"]["nodeName"] not in self.live_nodes():
            return  # no kubelet runs there: the pod stays Pending, as on a cluster
        uid = str(pod["metadata"].get("uid"))
        self._starting[key] = uid
        self.server.clock.call_later(CONTAINER_START_SECONDS, lambda: self._start(key, uid))

    def _start(self, key: tuple[str, str], uid: str) -> None:
        with self.server.lock:
            if self._starting.get(key) != uid:
                return  # deleted, or deleted and created again, since
            del self._starting[key]
            stored = self.server.storage.get(self.pods, key)
            if stored is None or stored.obj["metadata"].get("uid") != uid:
                return
            pod = stored.obj
            nodes = self.live_nodes()
            node = pod["spec"].get("nodeName")
            if node not in nodes or not _waiting_to_start(pod) or _terminating(pod):
                return
            status = self._running_status(key, pod, nodes[node])
            if status is None:
                return
            self._write_status(key, status)
            started = self.server.storage.get(self.pods, key)
            if started is None:
                return
            for group in ("initContainers", "containers"):
                for container in pod["spec"].get(group) or []:
                    if isinstance(container, dict):
                        self._container_events(started.obj, group, container, str(node))

    # -- graceful deletion ------------------------------------------------------------------
    def grace_period(self, pod: JSON, requested: int | None) -> int:
        """The grace period a DELETE of ``pod`` gets (the pod strategy's CheckGracefulDelete):
        the one requested, else ``terminationGracePeriodSeconds``; 0, an immediate delete, for
        a pod no kubelet of this server runs (unscheduled, on another node) or one that has
        finished. A negative request counts as 1 second."""
        node = _dict(pod.get("spec")).get("nodeName")
        phase = _dict(pod.get("status")).get("phase")
        if not node or node not in self.live_nodes() or phase in ("Succeeded", "Failed"):
            return 0
        period = requested
        if period is None:
            configured = _dict(pod.get("spec")).get("terminationGracePeriodSeconds")
            period = DEFAULT_GRACE_PERIOD_SECONDS
            if isinstance(configured, int) and not isinstance(configured, bool):
                period = configured
        return 1 if period < 0 else period

    def mark_terminating(self, pod: JSON, period: int) -> JSON | None:
        """``pod`` (the server's copy) marked for deletion in ``period`` seconds, or None when
        it already is, as soon or sooner (a later DELETE may only shorten the grace period)."""
        meta = pod["metadata"]
        current = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and isinstance(current, int) and current <= period:
            return None
        clock = self.server.clock
        deadline = clock.epoch + _dt.timedelta(seconds=int(clock.now()) + period)
        meta["deletionTimestamp"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
        meta["deletionGracePeriodSeconds"] = period
        return pod

    def _stop_later(self, key: tuple[str, str], pod: JSON) -> None:
        """The kubelet stops a terminating pod's containers, then deletes it for good."""
        if pod["spec"].get("nodeName") not in self.live_nodes():
            return
        uid = str(pod["metadata"].get("uid"))
        period = pod["metadata"].get("deletionGracePeriodSeconds")
        delay = min(CONTAINER_STOP_SECONDS, period if isinstance(period, int) else 0)
        when = self.server.clock.now() + delay
        planned = self._stopping.get(key)
        if planned is not None and planned[0] == uid and planned[1] <= when:
            return
        self._stopping[key] = (uid, when)
        self.server.clock.call_at(when, lambda: self._stop(key, uid, when))

    def _stop(self, key: tuple[str, str], uid: str, when: float) -> None:
        with self.server.lock:
            if self._stopping.get(key) != (uid, when):
                return  # deleted meanwhile, or a shorter grace period moved the stop
            del self._stopping[key]
            stored = self.server.storage.get(self.pods, key)
            if stored is None or stored.obj["metadata"].get("uid") != uid:
                return
            node = str(stored.obj["spec"].get("nodeName"))
            running = _dict(stored.obj.get("status")).get("containerStatuses") or []
            for container in stored.obj["spec"].get("containers") if running else []:
                if isinstance(container, dict) and container.get("name"):
                    self.server.recorder.record(
                        stored.obj,
                        "Killing",
                        f"Stopping container {container['name']}",
                        component="kubelet",
                        host=node,
                        field_path=f"spec.containers{{{container['name']}}}",
                    )
            self._write_status(key, self._stopped_status(stored.obj))
            # The kubelet's own DELETE with a zero grace period: the pod is gone (unless
            # finalizers still hold it).
            manager, self.server.field_manager = self.server.field_manager, None
            try:
                self.server.registry.delete(self.pods, key[0], key[1], {"uid": uid}, grace=0)
            except st.StatusError:
                pass  # deleted by someone else in between: nothing left to do
            finally:
                self.server.field_manager = manager

    def _stopped_status(self, pod: JSON) -> JSON:
        """Containers stopped cleanly (exit 0), the pod terminal, ``Succeeded`` (the kubelet
        reports a terminal phase for a deleted pod since 1.27), not ready."""
        now = self.server.clock.timestamp()
        status = deep_copy(_dict(pod.get("status")))
        for container in status.get("containerStatuses") or []:
            if not isinstance(container, dict):
                continue
            running = _dict(_dict(container.get("state")).get("running"))
            container["state"] = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": running.get("startedAt", now),
                    "finishedAt": now,
                    "containerID": container.get("containerID", ""),
                }
            }
            container["ready"] = False
            container["started"] = False
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict) and condition.get("type") in (
                "Ready",
                "ContainersReady",
                "PodReadyToStartContainers",
            ):
                condition["status"] = "False"
                condition["lastTransitionTime"] = now
                if condition["type"] != "PodReadyToStartContainers":
                    condition["reason"] = "PodCompleted"
        status["phase"] = "Succeeded" if status.get("containerStatuses") else status.get("phase")
        return status

    def _container_events(self, pod: JSON, group: str, container: JSON, node: str) -> None:
        """What a kubelet reports for each container it starts (the image is already there)."""
        name = str(container.get("name"))
        path = f"spec.{group}{{{name}}}"
        image = container.get("image")
        for reason, message in (
            ("Pulled", f'Container image "{image}" already present on machine'),
            ("Created", f"Created container: {name}"),
            ("Started", f"Started container {name}"),
        ):
            self.server.recorder.record(
                pod, reason, message, component="kubelet", host=node, field_path=path
            )

    def _running_status(self, key: tuple[str, str], pod: JSON, node: JSON) -> JSON | None:
        """The status the kubelet writes once the containers run; None when the node's pod
        network is full (the pod stays ``Pending``, as when a CNI plugin has no address left)."""
        now = self.server.clock.timestamp()
        spec = pod["spec"]
        status = deep_copy(pod.get("status") or {})
        host_ip = node["status"]["addresses"][0]["address"]
        pod_ip = host_ip if spec.get("hostNetwork") else self._pod_ip(key, node)
        if pod_ip is None:
            return None
        scheduled = [
            c
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") == "PodScheduled"
        ]
        conditions = [
            {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
        ]
        status.update(
            {
                "phase": "Running",
                "conditions": conditions + scheduled,
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": now,
                "qosClass": status.get("qosClass") or _qos_class(spec),
            }
        )
        init = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
        if init:
            status["initContainerStatuses"] = [
                self._container_status(c, now, terminated=True) for c in init
            ]
        status["containerStatuses"] = [
            self._container_status(c, now)
            for c in spec.get("containers") or []
            if isinstance(c, dict)
        ]
        return status

    def _container_status(self, container: JSON, now: str, *, terminated: bool = False) -> JSON:
        image = normalized_image(str(container.get("image") or ""))
        state: JSON
        if terminated:
            state = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": now,
                    "finishedAt": now,
                    "containerID": self._container_id(),
                }
            }
            container_id = state["terminated"]["containerID"]
        else:
            container_id = self._container_id()
            state = {"running": {"startedAt": now}}
        return {
            "name": container.get("name"),
            "state": state,
            "lastState": {},
            "ready": not terminated,
            "restartCount": 0,
            "image": image,
            "imageID": image_id(image),
            "containerID": container_id,
            "started": not terminated,
        }

    def _container_id(self) -> str:
        words = integers(self._choices, 0, 0xFFFFFFFF, 8)
        return "containerd://" + "".join(f"{w:08x}" for w in words)

    def _pod_ip(self, key: tuple[str, str], node: JSON) -> str | None:
        """The lowest free address of the node's /24 (.1 is the node's bridge)."""
        cidr = node["spec"]["podCIDR"]
        used = self._ips.setdefault(node["metadata"]["name"], {})
        if key not in used:
            taken = set(used.values())
            host = next((h for h in range(2, 255) if h not in taken), None)
            if host is None:
                return None
            used[key] = host
        return str(cidr).rsplit(".", 1)[0] + f".{used[key]}"

    def _write_status(self, key: tuple[str, str], status: JSON) -> None:
        stored = self.server.storage.get(self.pods, key)
        if stored is None:
            return
        body = {"metadata": {"name": key[1], "namespace": key[0]}, "status": status}
        # A component's write, not the client's whose request caused it: no field manager.
        manager, self.server.field_manager = self.server.field_manager, None
        try:
            self.server.registry.update(self.pods, key[0], key[1], body, "status")
        finally:
            self.server.field_manager = manager


UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def cordoned_for(pod: JSON, node: JSON) -> bool:
    """``node`` is cordoned (``spec.unschedulable``, ``kubectl cordon``/``drain``) and ``pod``
    does not tolerate the ``node.kubernetes.io/unschedulable:NoSchedule`` taint that stands for
    it (the scheduler's NodeUnschedulable filter; DaemonSet pods tolerate it)."""
    if not _dict(node.get("spec")).get("unschedulable"):
        return False
    for toleration in _dict(pod.get("spec")).get("tolerations") or []:
        if not isinstance(toleration, dict) or toleration.get("effect") not in (
            None,
            "",
            "NoSchedule",
        ):
            continue
        key, operator = toleration.get("key") or "", toleration.get("operator") or "Equal"
        if operator == "Exists" and key in ("", UNSCHEDULABLE_TAINT):
            return False
        if key == UNSCHEDULABLE_TAINT and not toleration.get("value"):
            return False
    return True


def fits_node(pod: JSON, node: JSON) -> bool:
    """The pod's ``nodeSelector`` and required node affinity both allow ``node`` (the
    scheduler's NodeAffinity filter): one of the affinity's terms must match, every requirement
    of a term must hold (a label's ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``,
    ``Lt``; a field's ``In``/``NotIn`` on ``metadata.name``, as DaemonSet pods ask)."""
    spec = _dict(pod.get("spec"))
    labels = _dict(node["metadata"].get("labels"))
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict) or any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = _dict(
        _dict(_dict(spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    )
    terms = [t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict)]
    if not terms:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    return any(
        (t.get("matchExpressions") or t.get("matchFields"))
        and all(_requirement_holds(r, labels) for r in t.get("matchExpressions") or [])
        and all(_requirement_holds(r, fields) for r in t.get("matchFields") or [])
        for t in terms
    )


def _requirement_holds(requirement: Any, values: dict[str, Any]) -> bool:
    if not isinstance(requirement, dict):
        return False
    key, operator = str(requirement.get("key")), requirement.get("operator")
    wanted = [str(v) for v in requirement.get("values") or []]
    present = key in values
    value = str(values.get(key, ""))
    if operator == "In":
        return present and value in wanted
    if operator == "NotIn":
        return not present or value not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(value), int(wanted[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _terminating(pod: JSON) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _waiting_to_start(pod: JSON) -> bool:
    status = pod.get("status")
    return (
        isinstance(status, dict)
        and status.get("phase", "Pending") == "Pending"
        and not status.get("containerStatuses")
    )


def _qos_class(spec: JSON) -> str:
    """``Guaranteed`` when every container's limits equal its requests for cpu and memory,
    ``BestEffort`` when none sets either, ``Burstable`` otherwise (pkg/apis/core/helper/qos)."""
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits, requests = r.get("limits") or {}, r.get("requests") or {}
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                return "Burstable"
    return "Guaranteed"


def normalized_image(image: str) -> str:
    """An image reference as containerd reports it: ``busybox`` is
    ``docker.io/library/busybox:latest``."""
    if not image:
        return image
    name, at, digest = image.partition("@")
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}"
    if not at and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return name + at + digest


def image_id(image: str) -> str:
    """A digest that is the same for the same image on every run and every node (a reference
    that carries a digest is its own id)."""
    if "@" in image:
        return image
    repository, _, tag = image.rpartition(":")
    if "/" in tag:  # a registry port, not a tag
        repository = image
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _uuid_text(hex_digits: str) -> str:
    h = hex_digits[:32]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
