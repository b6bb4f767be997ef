"""The DaemonSet controller: one pod on every node that fits.

What pkg/controller/daemon does that clients and tests see, without its timing:

- For each node whose labels match the template's ``nodeSelector``, one pod from the template
  (``generateName: {set}-``, owned by the set), pinned to the node by the required node affinity
  the controller writes (``matchFields`` on ``metadata.name``), which the scheduler
  (:mod:`kubesim.cluster.kubelet`) honours; with the tolerations the controller adds
  (``not-ready`` and ``unreachable`` ``NoExecute``; disk, memory and PID pressure and
  ``unschedulable`` ``NoSchedule``; ``network-unavailable`` for host-network pods), and the
  labels ``controller-revision-hash`` and ``pod-template-generation``.
- A node with a ``NoSchedule`` or ``NoExecute`` taint the pod (with those tolerations) does not
  tolerate gets no pod (NodeShouldRunDaemonPod); a pod already on it stays unless the taint is
  ``NoExecute``, and counts as misscheduled.
- A pod on a node that no longer fits, or a second pod on one node, is deleted; a node added
  later gets its pod.
- A changed template is a new ControllerRevision (:mod:`kubesim.cluster.revisions`); with the
  ``RollingUpdate`` strategy (``maxUnavailable`` 1), once every pod is ready, one pod of an older
  revision is deleted at a time and made again from the new template; ``OnDelete`` waits.
- ``status``: ``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberMisscheduled``,
  ``numberReady``, ``numberAvailable``, ``numberUnavailable``, ``updatedNumberScheduled`` and
  ``observedGeneration``: what ``kubectl rollout status daemonset`` reads.

Taints are not modelled (no node has any), so every node that matches the selector fits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.admission.tolerations import untolerated_taint
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.objects import as_dict, as_int, deleting, is_ready, owner_reference
from kubesim.apiserver.storage import Key
from kubesim.cluster import revisions
from kubesim.cluster.kubelet import fits_node

if TYPE_CHECKING:
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]

TEMPLATE_GENERATION_LABEL = "pod-template-generation"
# pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations, in the order it adds them.
_TOLERATIONS = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
]
_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def pinned_node(pod: JSON) -> str | None:
    """The node a daemon pod is for: its ``nodeName``, else its affinity's ``metadata.name``."""
    spec = as_dict(pod.get("spec"))
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = as_dict(
        as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    )
    for term in required.get("nodeSelectorTerms") or []:
        for field in as_dict(term).get("matchFields") or []:
            field = as_dict(field)
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and values:
                return str(values[0])
    return None


class DaemonSets:
    """The DaemonSet controller of one server's :class:`~kubesim.cluster.workloads.Controllers`."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.pods = self.server.resource("pods")
        self.sets = self.server.resource("daemonsets")
        self.nodes = self.server.resource("nodes")

    def sync(self, key: Key) -> None:
        target = revisions.sync_target(self.controllers, self.sets, key)
        if target is None:
            return
        owner, _, hash_ = target
        template = as_dict(as_dict(owner.get("spec")).get("template"))
        fitting, staying = self._fitting_nodes(template)
        by_node: dict[str, list[JSON]] = {}
        for pod in self.controllers.owned(self.pods, key[0], owner):
            if not deleting(pod):
                by_node.setdefault(pinned_node(pod) or "", []).append(pod)
        for node in fitting:
            if node not in by_node:
                self._create_pod(owner, node, hash_)
        for node, pods in sorted(by_node.items()):
            # On a node that no longer fits, every pod goes; on one that fits, all but the
            # oldest (the controller keeps the oldest running one; creation time, then name).
            surplus = pods if node not in staying else sorted(pods, key=_age_order)[1:]
            for pod in surplus:
                self._delete_pod(owner, pod)
        self._roll(owner, by_node, fitting, hash_)
        stored = self.server.storage.get(self.sets, key)
        if stored is not None:
            self._write_status(stored.obj, fitting, hash_)

    def _fitting_nodes(self, template: JSON) -> tuple[list[str], set[str]]:
        """The nodes that should run a daemon pod, and those where one may stay running: the
        template's ``nodeSelector`` fits, and no untolerated taint (any, or ``NoExecute``)."""
        spec = as_dict(template.get("spec"))
        probe = {
            "spec": {
                "nodeSelector": spec.get("nodeSelector"),
                "tolerations": _with_daemon_tolerations(spec),
            }
        }
        fitting: list[str] = []
        staying: set[str] = set()
        for key, stored in self.server.storage.items(self.nodes):
            if deleting(stored.obj) or not fits_node(probe, stored.obj):
                continue
            if untolerated_taint(probe, stored.obj, ("NoExecute",)) is None:
                staying.add(key[1])
                if untolerated_taint(probe, stored.obj) is None:
                    fitting.append(key[1])
        return fitting, staying

    def _roll(
        self, owner: JSON, by_node: dict[str, list[JSON]], fitting: list[str], hash_: str
    ) -> None:
        strategy = as_dict(as_dict(owner.get("spec")).get("updateStrategy"))
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        current = [min(by_node[n], key=_age_order) for n in fitting if n in by_node]
        if len(current) < len(fitting) or any(not is_ready(p) for p in current):
            return  # maxUnavailable 1: one pod replaced at a time, the others ready
        for pod in sorted(current, key=_name):
            if as_dict(pod["metadata"].get("labels")).get(revisions.POD_REVISION_LABEL) != hash_:
                self._delete_pod(owner, pod)
                return

    def _create_pod(self, owner: JSON, node: str, hash_: str) -> None:
        template = deep_copy(as_dict(as_dict(owner.get("spec")).get("template")))
        meta = as_dict(template.get("metadata"))
        spec = as_dict(template.get("spec"))
        affinity = as_dict(spec.get("affinity"))
        affinity["nodeAffinity"] = {
            **as_dict(affinity.get("nodeAffinity")),
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
        spec["affinity"] = affinity
        spec["tolerations"] = _with_daemon_tolerations(spec)
        generation = as_int(owner["metadata"].get("generation"), 1)
        labels = {
            **as_dict(meta.get("labels")),
            revisions.POD_REVISION_LABEL: hash_,
            TEMPLATE_GENERATION_LABEL: str(generation),
        }
        body: JSON = {
            "metadata": {
                "generateName": f"{owner['metadata']['name']}-",
                "labels": labels,
                **({"annotations": meta["annotations"]} if meta.get("annotations") else {}),
                "ownerReferences": [owner_reference(owner)],
            },
            "spec": spec,
        }
        self.controllers.create_recorded(
            owner, self.pods, body, "Created pod: {name}", "Error creating: {error}"
        )

    def _delete_pod(self, owner: JSON, pod: JSON) -> None:
        self.controllers.delete_recorded(owner, self.pods, pod, "Deleted pod: {name}")

    def _write_status(self, owner: JSON, fitting: list[str], hash_: str) -> None:
        pods = [
            p
            for p in self.controllers.owned(self.pods, owner["metadata"]["namespace"], owner)
            if not deleting(p)
        ]
        on_fitting = [p for p in pods if pinned_node(p) in fitting]
        scheduled = {pinned_node(p) for p in on_fitting if as_dict(p.get("spec")).get("nodeName")}
        ready = sum(1 for p in on_fitting if is_ready(p))
        updated = sum(
            1
            for p in on_fitting
            if as_dict(p["metadata"].get("labels")).get(revisions.POD_REVISION_LABEL) == hash_
        )
        status: JSON = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": len(pods) - len(on_fitting),
            "desiredNumberScheduled": len(fitting),
            "numberReady": ready,
            "observedGeneration": as_int(owner["metadata"].get("generation"), 1),
            "updatedNumberScheduled": updated,
            "numberAvailable": ready,
            "numberUnavailable": len(fitting) - ready,
        }
        for zero in ("observedGeneration", "updatedNumberScheduled", "numberAvailable"):
            if not status[zero]:
                del status[zero]  # omitempty, as the API encodes them
        if not status["numberUnavailable"]:
            del status["numberUnavailable"]
        self.controllers.write_status(self.sets, owner, status)


def _with_daemon_tolerations(spec: JSON) -> list[JSON]:
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    wanted = list(_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(_HOST_NETWORK_TOLERATION)
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return tolerations


def _name(pod: JSON) -> str:
    return str(pod["metadata"]["name"])


def _age_order(pod: JSON) -> tuple[str, str]:
    return (str(pod["metadata"].get("creationTimestamp", "")), _name(pod))
