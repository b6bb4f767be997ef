"""The StatefulSet controller: pods with stable names, made and replaced in order.

What pkg/controller/statefulset does that clients and tests see, without its timing:

- Pods are named ``{set}-{ordinal}`` for ordinals ``0 .. spec.replicas-1`` (from
  ``spec.ordinals.start``), owned by the set, labelled with the template's labels,
  ``controller-revision-hash`` (the revision's name), ``statefulset.kubernetes.io/pod-name``
  and ``apps.kubernetes.io/pod-index``, with ``hostname`` the pod's name and ``subdomain`` the
  set's ``serviceName``.
- Each ``volumeClaimTemplates`` entry becomes a PersistentVolumeClaim ``{claim}-{pod}``,
  created before its pod, labelled with the set's selector, and mounted as the pod's volume of
  that name. Claims are kept when pods and the set go (the default ``Retain`` policy); nothing
  provisions them, so they stay ``Pending``.
- ``podManagementPolicy: OrderedReady`` (the default) creates one pod at a time, the next once
  every lower ordinal is running and ready, and scales down from the highest ordinal, one pod
  at a time; ``Parallel`` does both at once.
- A changed template is a new ControllerRevision (:mod:`kubesim.cluster.revisions`). With the
  ``RollingUpdate`` strategy, once every pod is ready, the highest-ordinal pod of an older
  revision (at or above ``partition``) is deleted and made again from the new template, one at a
  time; ``OnDelete`` waits for the client to delete pods.
- ``status``: ``replicas``, ``readyReplicas``, ``availableReplicas``, ``currentReplicas``,
  ``updatedReplicas``, ``currentRevision`` (it becomes ``updateRevision`` once every pod runs
  it), ``updateRevision``, ``collisionCount`` and ``observedGeneration``: what ``kubectl
  rollout status statefulset`` reads. ``minReadySeconds`` is not waited for.

Events: ``SuccessfulCreate`` (``create Pod web-0 in StatefulSet web successful``, and the claim's
``create Claim ...``) and ``SuccessfulDelete``, as the controller words them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.objects import as_dict, as_int, deleting, is_ready, owner_reference
from kubesim.apiserver.storage import Key
from kubesim.cluster import revisions

if TYPE_CHECKING:
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


class StatefulSets:
    """The StatefulSet controller of one server's
    :class:`~kubesim.cluster.workloads.Controllers`."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.pods = self.server.resource("pods")
        self.sets = self.server.resource("statefulsets")
        self.claims = self.server.resource("persistentvolumeclaims")

    def sync(self, key: Key) -> None:
        target = revisions.sync_target(self.controllers, self.sets, key)
        if target is None:
            return
        owner, update_revision, _ = target
        spec = as_dict(owner.get("spec"))
        start = as_int(as_dict(spec.get("ordinals")).get("start"))
        wanted = range(start, start + as_int(spec.get("replicas"), 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        pods = self._pods(owner)
        # Make the missing pods, lowest ordinal first; in order, only past ready ones.
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is None:
                self._create_pod(owner, ordinal, update_revision)
                if ordered:
                    break
            elif ordered and (deleting(pod) or not is_ready(pod)):
                break
        else:
            # Every wanted pod exists (and, in order, is ready): scale down, then update.
            surplus = sorted((o for o in pods if o not in wanted), reverse=True)
            for ordinal in surplus:
                if not deleting(pods[ordinal]):
                    self._delete_pod(owner, pods[ordinal])
                if ordered:
                    break
            if not surplus:
                self._roll(owner, pods, wanted, update_revision)
        stored = self.server.storage.get(self.sets, key)
        if stored is not None:
            self._write_status(stored.obj, update_revision)

    def _pods(self, owner: JSON) -> dict[int, JSON]:
        """The set's pods by ordinal (a pod whose name is not ``{set}-{n}`` is not one)."""
        prefix = f"{owner['metadata']['name']}-"
        pods: dict[int, JSON] = {}
        for pod in self.controllers.owned(self.pods, owner["metadata"]["namespace"], owner):
            suffix = str(pod["metadata"]["name"]).removeprefix(prefix)
            if suffix.isdigit() and f"{prefix}{int(suffix)}" == pod["metadata"]["name"]:
                pods[int(suffix)] = pod
        return pods

    def _roll(self, owner: JSON, pods: dict[int, JSON], wanted: range, revision: str) -> None:
        strategy = as_dict(as_dict(owner.get("spec")).get("updateStrategy"))
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        if any(deleting(p) or not is_ready(p) for p in pods.values()):
            return  # one pod at a time, each replaced only once the others are ready
        partition = as_int(as_dict(strategy.get("rollingUpdate")).get("partition"))
        for ordinal in sorted(wanted, reverse=True):
            pod = pods.get(ordinal)
            if ordinal < partition or pod is None:
                continue
            if as_dict(pod["metadata"].get("labels")).get(revisions.POD_REVISION_LABEL) != revision:
                self._delete_pod(owner, pod)
                return

    def _create_pod(self, owner: JSON, ordinal: int, revision: str) -> None:
        name = f"{owner['metadata']['name']}-{ordinal}"
        template = deep_copy(as_dict(as_dict(owner.get("spec")).get("template")))
        meta = as_dict(template.get("metadata"))
        pod_spec = as_dict(template.get("spec"))
        pod_spec["hostname"] = name
        service = as_dict(owner.get("spec")).get("serviceName")
        if service:
            pod_spec["subdomain"] = service
        volumes = [v for v in pod_spec.get("volumes") or [] if isinstance(v, dict)]
        for claim in as_dict(owner.get("spec")).get("volumeClaimTemplates") or []:
            claim_name = str(as_dict(as_dict(claim).get("metadata")).get("name") or "")
            if not claim_name:
                continue
            self._ensure_claim(owner, as_dict(claim), f"{claim_name}-{name}", name)
            if all(v.get("name") != claim_name for v in volumes):
                volumes.append(
                    {
                        "name": claim_name,
                        "persistentVolumeClaim": {"claimName": f"{claim_name}-{name}"},
                    }
                )
        if volumes:
            pod_spec["volumes"] = volumes
        labels = {
            **as_dict(meta.get("labels")),
            revisions.POD_REVISION_LABEL: revision,
            POD_NAME_LABEL: name,
            POD_INDEX_LABEL: str(ordinal),
        }
        body: JSON = {
            "metadata": {
                "name": name,
                "labels": labels,
                **({"annotations": meta["annotations"]} if meta.get("annotations") else {}),
                "ownerReferences": [owner_reference(owner)],
            },
            "spec": pod_spec,
        }
        of_set = f"in StatefulSet {owner['metadata']['name']}"
        self.controllers.create_recorded(
            owner,
            self.pods,
            body,
            f"create Pod {{name}} {of_set} successful",
            f"create Pod {{name}} {of_set} failed error: {{error}}",
        )

    def _ensure_claim(self, owner: JSON, template: JSON, name: str, pod: str) -> None:
        namespace = owner["metadata"]["namespace"]
        if self.server.storage.get(self.claims, (namespace, name)) is not None:
            return
        selector = as_dict(as_dict(as_dict(owner.get("spec")).get("selector")).get("matchLabels"))
        meta = as_dict(template.get("metadata"))
        body = {
            "metadata": {
                "name": name,
                "labels": {**as_dict(meta.get("labels")), **selector},
                **({"annotations": meta["annotations"]} if meta.get("annotations") else {}),
            },
            "spec": deep_copy(as_dict(template.get("spec"))),
        }
        of_set = f"in StatefulSet {owner['metadata']['name']}"
        self.controllers.create_recorded(
            owner,
            self.claims,
            body,
            f"create Claim {{name}} Pod {pod} {of_set} success",
            f"create Claim {{name}} for Pod {pod} {of_set} failed error: {{error}}",
        )

    def _delete_pod(self, owner: JSON, pod: JSON) -> None:
        message = f"delete Pod {{name}} in StatefulSet {owner['metadata']['name']} successful"
        self.controllers.delete_recorded(owner, self.pods, pod, message)

    def _write_status(self, owner: JSON, update_revision: str) -> None:
        pods = [p for p in self._pods(owner).values() if not deleting(p)]
        spec = as_dict(owner.get("spec"))
        before = as_dict(owner.get("status"))

        def running(revision: str) -> int:
            return sum(
                1
                for p in pods
                if as_dict(p["metadata"].get("labels")).get(revisions.POD_REVISION_LABEL)
                == revision
            )

        ready = sum(1 for p in pods if is_ready(p))
        updated = running(update_revision)
        current_revision = str(before.get("currentRevision") or update_revision)
        replicas = as_int(spec.get("replicas"), 1)
        if updated == len(pods) == replicas:
            current_revision = update_revision  # the update is complete
        status: JSON = {
            "observedGeneration": as_int(owner["metadata"].get("generation"), 1),
            "replicas": len(pods),
            "readyReplicas": ready,
            "currentReplicas": running(current_revision),
            "updatedReplicas": updated,
            "currentRevision": current_revision,
            "updateRevision": update_revision,
            "collisionCount": as_int(before.get("collisionCount")),
            "availableReplicas": ready,
        }
        for zero in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if not status[zero]:
                del status[zero]  # omitempty, as the API encodes them
        self.controllers.write_status(self.sets, owner, status)
