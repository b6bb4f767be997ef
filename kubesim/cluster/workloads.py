"""The workload controllers and the garbage collector's cascade, on one queue.

On a cluster, kube-controller-manager turns a Deployment into a ReplicaSet per pod template
and each ReplicaSet into pods, and writes back how many are ready; deleting an owner deletes
what it owns. Tests written for a real cluster wait for these (``kubectl rollout status``,
a loop on ``status.readyReplicas``), and stores that watch pods see a Deployment's pods come
and go. kubesim plays the three controllers, without the timing of the real ones:

- **The Deployment controller** (pkg/controller/deployment) names the ReplicaSet of the
  current template ``{deployment}-{pod-template-hash}`` (FNV-32a of the template, encoded as
  ``rand.SafeEncodeString`` encodes it), owned by the Deployment, its selector and template
  labelled with the hash, its revision in ``deployment.kubernetes.io/revision``. A rollout scales
  the new ReplicaSet to ``spec.replicas`` at once and the old ones to zero once the new one is
  fully available (``Recreate``: old ones first); ``maxSurge`` and ``maxUnavailable`` steps
  are not taken. ``status`` sums the ReplicaSets' counts, with the ``Available`` and
  ``Progressing`` conditions that ``kubectl rollout status`` reads. A paused Deployment only
  gets its status.
- **The ReplicaSet controller** (pkg/controller/replicaset) creates pods from the template
  (``generateName: {replicaset}-``, a controller owner reference) until ``spec.replicas`` run,
  deletes the surplus (pending before running, newest first), and counts ready ones in
  ``status``. Orphan pods that match a selector are not adopted; ``minReadySeconds`` is not
  waited for (a ready pod is available).
- **The StatefulSet and DaemonSet controllers** (:mod:`kubesim.cluster.statefulsets`,
  :mod:`kubesim.cluster.daemonsets`), with their ControllerRevisions.
- **The Job controller** runs a Job's pods, counts them and finishes the Job
  (:mod:`kubesim.cluster.jobs`); **the CronJob controller** makes a Job at each time a
  CronJob's schedule names, on the server's clock (:mod:`kubesim.cluster.cronjobs`).
- **The resource quota controller** keeps each ResourceQuota's ``status.used``
  (:mod:`kubesim.admission.resource_quotas`).
- **The Endpoints and EndpointSlice controllers** keep each selector Service's addresses
  (:mod:`kubesim.cluster.endpoints`).
- **The disruption controller** keeps each PodDisruptionBudget's status
  (:mod:`kubesim.cluster.disruption`), which the eviction subresource reads.
- **The ClusterRole aggregation controller** gives ``admin``, ``edit``, ``view`` and any other
  role with an ``aggregationRule`` the rules of the roles it selects
  (:mod:`kubesim.cluster.role_aggregation`).
- **The garbage collector** (pkg/controller/garbagecollector) deletes, in the background, every
  object whose owners are all gone, for any kind. An owner deleted with ``propagationPolicy:
  Orphan`` keeps its ``orphan`` finalizer until the collector has removed it from its
  dependents' ``ownerReferences``; one deleted with ``Foreground`` keeps its
  ``foregroundDeletion`` finalizer while the collector deletes its dependents (in the
  foreground those that have dependents of their own) and until the ones whose reference has
  ``blockOwnerDeletion`` are gone (:mod:`kubesim.apiserver.propagation`).

The controllers work like real ones from a queue of keys: each write the server commits queues
what it concerns (a pod its ReplicaSet, a ReplicaSet its Deployment), and the queue is drained
right after, under the server's lock, as the next writes. A run stays a function of its seed
(pod names come from the server's ``generateName`` choices). ``kubesim serve`` runs them;
simulations do not by default (a scenario writes its own pods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import propagation
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.objects import (
    as_dict,
    as_int,
    controller_of,
    deleting,
    is_ready,
    owner_reference,
    pod_template_hash,
)
from kubesim.apiserver.storage import DELETED, Event, Key
from kubesim.cluster import endpoints, events
from kubesim.cluster.cronjobs import CronJobs
from kubesim.cluster.daemonsets import DaemonSets
from kubesim.cluster.disruption import DisruptionController
from kubesim.cluster.jobs import Jobs
from kubesim.cluster.resource_quotas import QuotaController
from kubesim.cluster.role_aggregation import ClusterRoleAggregation
from kubesim.cluster.statefulsets import StatefulSets

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.cluster.cluster import Cluster

JSON = dict[str, Any]

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
# deployment/util: the revisions a ReplicaSet rolled back to again keeps, in characters.
MAX_REVISION_HISTORY_CHARS = 2000
# A guard against controllers that keep writing to each other (a bug, or a status that never
# settles): past this many syncs in one drain, the rest stay queued for the next write, as a
# workqueue's rate limiter would hold them back, and the client's request completes.
MAX_SYNCS_PER_DRAIN = 10_000


class Controllers:
    """The workload and endpoints controllers and the garbage collector of one server (see the
    module docstring). ``owned``, ``live``, ``write``, ``write_status`` and ``record_event`` are
    what the controllers in other modules use."""

    def __init__(self, server: Cluster) -> None:
        self.server = server
        self.pods = server.resource("pods")
        self.replica_sets = server.resource("replicasets")
        self.deployments = server.resource("deployments")
        self.services = server.resource("services")
        self.nodes = server.resource("nodes")
        self.stateful_sets = StatefulSets(self)
        self.daemon_sets = DaemonSets(self)
        self.disruption = DisruptionController(self)
        self.role_aggregation = ClusterRoleAggregation(self)
        self.jobs = Jobs(self)
        self.cron_jobs = CronJobs(self)
        self.quota = QuotaController(self)
        # Keys to sync, in the order they were queued, without duplicates (a workqueue).
        self._queue: dict[tuple[str, Key], None] = {}
        self._draining = False
        # Owner uid -> the objects whose ownerReferences name it.
        self._dependents: dict[str, set[tuple[ResourceType, Key]]] = {}
        # Uid -> an object being deleted with the orphan or foregroundDeletion finalizer.
        self._finalizing: dict[str, tuple[ResourceType, Key]] = {}

    # -- the queue ------------------------------------------------------------------------
    def sync(self, event: Event) -> None:
        """React to one committed write (called by the server, its lock held)."""
        self._index_owners(event)
        obj = event.new.obj
        if event.resource is self.deployments:
            self._queue[("deployment", event.key)] = None
        elif event.resource is self.replica_sets:
            self._queue[("replicaset", event.key)] = None
            self._queue_controller(event.key[0], obj, "Deployment", "deployment")
        elif event.resource is self.stateful_sets.sets:
            self._queue[("statefulset", event.key)] = None
        elif event.resource is self.daemon_sets.sets:
            self._queue[("daemonset", event.key)] = None
        elif event.resource is self.jobs.jobs:
            self._queue[("job", event.key)] = None
            self._queue_controller(event.key[0], obj, "CronJob", "cronjob")
        elif event.resource is self.cron_jobs.cron_jobs:
            self._queue[("cronjob", event.key)] = None
        elif event.resource is self.nodes:
            # A node added, relabelled or removed: every DaemonSet may want a pod more or less.
            for key, _ in self.server.storage.items(self.daemon_sets.sets):
                self._queue[("daemonset", key)] = None
        elif event.resource is self.pods:
            self._queue_controller(event.key[0], obj, "ReplicaSet", "replicaset")
            self._queue_controller(event.key[0], obj, "StatefulSet", "statefulset")
            self._queue_controller(event.key[0], obj, "DaemonSet", "daemonset")
            self._queue_controller(event.key[0], obj, "Job", "job")
            # The Deployment controller watches pods too: a Recreate rollout waits for the
            # old pods to be gone.
            owner = controller_of(obj)
            if owner is not None and owner.get("kind") == "ReplicaSet":
                rs = self.server.storage.get(self.replica_sets, (event.key[0], str(owner["name"])))
                if rs is not None:
                    self._queue_controller(event.key[0], rs.obj, "Deployment", "deployment")
            self._queue_services(event)
            self._queue_budgets(event)
        elif event.resource is self.disruption.budgets:
            self._queue[("budget", event.key)] = None
        elif event.resource is self.services:
            self._queue[("service", event.key)] = None
        elif event.resource is self.role_aggregation.roles:
            for key in self.role_aggregation.aggregating():
                self._queue[("clusterrole", key)] = None
        if event.type == DELETED:
            self._queue[("collect", ("", str(obj["metadata"].get("uid", ""))))] = None
        for key in self.quota.quotas_in(event.key[0]):
            self._queue[("quota", key)] = None  # anything in a namespace may count in its quotas
        self._queue_finalizing(event)
        self._drain()

    def requeue(self, kind: str, key: Key) -> None:
        """Sync ``key`` of the ``kind`` controller now, as a timer asks (the server's lock
        held): a CronJob whose schedule came due."""
        self._queue[(kind, key)] = None
        self._drain()

    def _drain(self) -> None:
        if self._draining:
            return  # a write made while draining: the loop below picks its keys up
        self._draining = True
        try:
            for _ in range(MAX_SYNCS_PER_DRAIN):
                if not self._queue:
                    break
                kind, key = self._pop()
                try:
                    if kind == "deployment":
                        self._sync_deployment(key)
                    elif kind == "replicaset":
                        self._sync_replica_set(key)
                    elif kind == "statefulset":
                        self.stateful_sets.sync(key)
                    elif kind == "daemonset":
                        self.daemon_sets.sync(key)
                    elif kind == "job":
                        self.jobs.sync(key)
                    elif kind == "cronjob":
                        self.cron_jobs.sync(key)
                    elif kind == "quota":
                        self.quota.sync(key)
                    elif kind == "service":
                        endpoints.sync_service(self.server, self.write, key)
                    elif kind == "budget":
                        self.disruption.sync(key)
                    elif kind == "clusterrole":
                        self.role_aggregation.sync(key)
                    elif kind == "finalize":
                        self._finalize(key[1])
                    else:
                        self._collect(key[1])
                except st.StatusError as exc:
                    # The server refused a controller's write (its object changed or went away
                    # meanwhile): the client's request that set this off still succeeds, and
                    # the next write to the object syncs it again, as a requeue would.
                    self.server.trace.record("controller-refused", kind, key[0], key[1], exc.code)
        finally:
            self._draining = False

    def _pop(self) -> tuple[str, Key]:
        """The key queued first (a dict keeps insertion order; popitem would take the last)."""
        first = next(iter(self._queue))
        del self._queue[first]
        return first

    def _queue_controller(self, namespace: str, obj: JSON, kind: str, queue_kind: str) -> None:
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == kind and ref.get("name"):
            self._queue[(queue_kind, (namespace, str(ref["name"])))] = None

    def _queue_services(self, event: Event) -> None:
        """A pod's change concerns the Services whose selector picks it, before or after."""
        labels = [as_dict(event.new.obj["metadata"].get("labels"))]
        if event.old is not None:
            labels.append(as_dict(event.old.obj["metadata"].get("labels")))
        for key, stored in self.server.storage.items(self.services, namespace=event.key[0]):
            if any(endpoints.selects(stored.obj, each) for each in labels):
                self._queue[("service", key)] = None

    def _queue_budgets(self, event: Event) -> None:
        """A pod's change concerns the PodDisruptionBudgets that pick it, before or after."""
        labels = [event.new.obj["metadata"].get("labels")]
        if event.old is not None:
            labels.append(event.old.obj["metadata"].get("labels"))
        for each in labels:
            for key in self.disruption.budgets_of(event.key[0], each):
                self._queue[("budget", key)] = None

    # -- the garbage collector ------------------------------------------------------------
    def _index_owners(self, event: Event) -> None:
        refs = as_dict(event.new.obj.get("metadata")).get("ownerReferences") or []
        old_refs: list[Any] = []
        if event.old is not None:
            old_refs = as_dict(event.old.obj.get("metadata")).get("ownerReferences") or []
        if not refs and not old_refs:
            return
        entry = (event.resource, event.key)
        for ref in old_refs:
            if isinstance(ref, dict):
                self._dependents.get(str(ref.get("uid")), set()).discard(entry)
        if event.type == DELETED:
            return
        for ref in refs:
            if isinstance(ref, dict) and ref.get("uid"):
                self._dependents.setdefault(str(ref["uid"]), set()).add(entry)

    def _collect(self, owner_uid: str) -> None:
        """Delete what ``owner_uid`` owned, unless another owner it names still exists."""
        for resource, key in sorted(
            self._dependents.pop(owner_uid, set()), key=lambda e: (e[0].plural, e[1])
        ):
            self._delete_dependent(resource, key, owner_uid, foreground=False)

    # -- deletion propagation: the orphan and foregroundDeletion finalizers ---------------
    def _queue_finalizing(self, event: Event) -> None:
        """An owner marked with a propagation finalizer, or a change to one of its dependents,
        queues the owner's finalization."""
        meta = as_dict(event.new.obj.get("metadata"))
        uid = str(meta.get("uid", ""))
        if event.type != DELETED and deleting(event.new.obj):
            finalizers = meta.get("finalizers") or []
            if propagation.ORPHAN_FINALIZER in finalizers or (
                propagation.FOREGROUND_FINALIZER in finalizers
            ):
                self._finalizing[uid] = (event.resource, event.key)
                self._queue[("finalize", ("", uid))] = None
        if not self._finalizing:
            return
        for refs in (meta.get("ownerReferences"), _owner_refs(event.old)):
            for ref in refs or []:
                if isinstance(ref, dict) and str(ref.get("uid")) in self._finalizing:
                    self._queue[("finalize", ("", str(ref["uid"])))] = None

    def _finalize(self, uid: str) -> None:
        """garbagecollector.go attemptToOrphan and processDeletingDependentsItem for one owner."""
        entry = self._finalizing.get(uid)
        stored = None if entry is None else self.server.storage.get(*entry)
        if (
            entry is None
            or stored is None
            or stored.obj["metadata"].get("uid") != uid
            or not deleting(stored.obj)
        ):
            self._finalizing.pop(uid, None)
            return
        resource, key = entry
        finalizers = stored.obj["metadata"].get("finalizers") or []
        dependents = sorted(self._dependents.get(uid, set()), key=lambda e: (e[0].plural, e[1]))
        if propagation.ORPHAN_FINALIZER in finalizers:
            for dependent in dependents:
                self._drop_owner(dependent, uid)
            self._remove_finalizer(resource, key, propagation.ORPHAN_FINALIZER)
        elif propagation.FOREGROUND_FINALIZER in finalizers:
            for dependent_resource, dependent_key in dependents:
                self._delete_dependent(dependent_resource, dependent_key, uid, foreground=True)
            if not any(self._blocks(dependent, uid) for dependent in dependents):
                self._remove_finalizer(resource, key, propagation.FOREGROUND_FINALIZER)
        else:
            self._finalizing.pop(uid, None)

    def _delete_dependent(
        self, resource: ResourceType, key: Key, owner_uid: str, *, foreground: bool
    ) -> None:
        """Delete a dependent of an owner that is gone (or deleted in the ``foreground``). One
        that another existing owner holds stays, without its reference to this owner. In the
        foreground, one with dependents of its own is deleted in the foreground too
        (garbagecollector.go attemptToDeleteItem)."""
        stored = self.server.storage.get(resource, key)
        if stored is None or deleting(stored.obj):
            return
        refs = _owner_refs(stored)
        if any(r.get("uid") != owner_uid and self._exists(r, key[0]) for r in refs):
            self._drop_owner((resource, key), owner_uid)
            return
        own_uid = str(stored.obj["metadata"].get("uid", ""))
        if foreground and self._dependents.get(own_uid):
            policy: str | None = propagation.FOREGROUND
        else:
            policy = _collected_policy(stored.obj)
        try:
            self.server.registry.delete(resource, key[0] or None, key[1], {}, policy=policy)
        except st.StatusError:
            return  # gone meanwhile, or immortal (a namespace): nothing to collect

    def _blocks(self, dependent: tuple[ResourceType, Key], owner_uid: str) -> bool:
        """The dependent still exists and its reference to the owner blocks its deletion."""
        stored = self.server.storage.get(*dependent)
        return stored is not None and any(
            r.get("uid") == owner_uid and r.get("blockOwnerDeletion") is True
            for r in _owner_refs(stored)
        )

    def _drop_owner(self, dependent: tuple[ResourceType, Key], owner_uid: str) -> None:
        """Remove the owner from a dependent's ``ownerReferences`` (the collector's patch)."""
        resource, key = dependent
        stored = self.server.storage.get(resource, key)
        if stored is None:
            return
        obj = deep_copy(stored.obj)
        refs = [r for r in _owner_refs(stored) if r.get("uid") != owner_uid]
        if refs:
            obj["metadata"]["ownerReferences"] = refs
        else:
            obj["metadata"].pop("ownerReferences", None)
        self.write(self.server.registry.update, resource, key[0] or None, key[1], obj, None)

    def _remove_finalizer(self, resource: ResourceType, key: Key, finalizer: str) -> None:
        """Take the collector's finalizer off: the object goes if nothing else holds it."""
        stored = self.server.storage.get(resource, key)
        if stored is None:
            return
        obj = deep_copy(stored.obj)
        obj["metadata"]["finalizers"] = [
            f for f in obj["metadata"].get("finalizers") or [] if f != finalizer
        ]
        if not obj["metadata"]["finalizers"]:
            del obj["metadata"]["finalizers"]
        self.write(self.server.registry.update, resource, key[0] or None, key[1], obj, None)

    def _exists(self, ref: JSON, namespace: str) -> bool:
        group, _, version = str(ref.get("apiVersion", "")).rpartition("/")
        for resource in self.server.resources:
            if (resource.group, resource.version, resource.kind) == (
                group,
                version,
                ref.get("kind"),
            ):
                key = (namespace if resource.namespaced else "", str(ref.get("name", "")))
                stored = self.server.storage.get(resource, key)
                return stored is not None and stored.obj["metadata"].get("uid") == ref.get("uid")
        return False

    # -- writes, as a controller makes them -----------------------------------------------
    def write(self, write: Any, *args: Any) -> Any:
        """Make one write with no field manager: the controller's, not the client's whose
        request caused it."""
        manager, self.server.field_manager = self.server.field_manager, None
        try:
            return write(*args)
        finally:
            self.server.field_manager = manager

    def write_status(self, resource: ResourceType, obj: JSON, status: JSON) -> None:
        if obj.get("status") == status:
            return
        body = {"metadata": {"name": obj["metadata"]["name"]}, "status": status}
        self.write(
            self.server.registry.update,
            resource,
            obj["metadata"]["namespace"],
            obj["metadata"]["name"],
            body,
            "status",
        )

    def live(self, resource: ResourceType, key: Key) -> JSON | None:
        """The object to sync: None when it is gone or being deleted (the collector's job)."""
        stored = self.server.storage.get(resource, key)
        return None if stored is None or deleting(stored.obj) else stored.obj

    def create_recorded(
        self, owner: JSON, resource: ResourceType, body: JSON, succeeded: str, failed: str
    ) -> JSON | None:
        """Create ``body`` in ``owner``'s namespace and record the controller's Event on the
        owner: ``SuccessfulCreate`` with ``succeeded``, or, when the server refuses, a
        ``FailedCreate`` Warning with ``failed`` (both formatted with the object's ``name`` and
        the refusal's ``error``). The created object, or None."""
        name = body["metadata"].get("name") or body["metadata"].get("generateName", "")
        try:
            made = self.write(
                self.server.registry.create, resource, body, owner["metadata"]["namespace"]
            )
        except st.StatusError as exc:
            message = failed.format(name=name, error=exc)
            self.record_event(owner, "FailedCreate", message, warning=True)
            return None
        created: JSON = made.obj
        message = succeeded.format(name=created["metadata"]["name"], error="")
        self.record_event(owner, "SuccessfulCreate", message)
        return created

    def delete_recorded(self, owner: JSON, resource: ResourceType, obj: JSON, message: str) -> None:
        """Delete ``obj`` and record ``SuccessfulDelete`` on ``owner`` (``message`` formatted
        with the object's ``name``)."""
        name = obj["metadata"]["name"]
        self.write(self.server.registry.delete, resource, obj["metadata"]["namespace"], name, {})
        self.record_event(owner, "SuccessfulDelete", message.format(name=name))

    def record_event(self, obj: JSON, reason: str, message: str, *, warning: bool = False) -> None:
        component = f"{obj['kind'].lower()}-controller"
        kind = events.WARNING if warning else events.NORMAL
        self.server.recorder.record(obj, reason, message, component=component, kind=kind)

    def _scaled(self, rs_meta: JSON, before: int, after: int) -> None:
        """The Deployment controller's ScalingReplicaSet Event, on the Deployment."""
        owner = controller_of({"metadata": rs_meta})
        if owner is None or owner.get("kind") != "Deployment":
            return
        deployment = self.server.storage.get(
            self.deployments, (rs_meta["namespace"], str(owner["name"]))
        )
        if deployment is None:
            return
        way = "up" if after > before else "down"
        message = f"Scaled {way} replica set {rs_meta['name']} from {before} to {after}"
        self.server.recorder.record(
            deployment.obj, "ScalingReplicaSet", message, component="deployment-controller"
        )

    def owned(self, resource: ResourceType, namespace: str, owner: JSON) -> list[JSON]:
        uid = owner["metadata"]["uid"]
        return [
            stored.obj
            for _, stored in self.server.storage.items(resource, namespace=namespace)
            if (controller_of(stored.obj) or {}).get("uid") == uid
        ]

    # -- the ReplicaSet controller --------------------------------------------------------
    def _sync_replica_set(self, key: Key) -> None:
        rs = self.live(self.replica_sets, key)
        if rs is None:
            return
        spec = as_dict(rs.get("spec"))
        wanted = as_int(spec.get("replicas"), 1)
        pods = [p for p in self.owned(self.pods, key[0], rs) if not deleting(p)]
        failure: str | None = None
        if len(pods) < wanted:
            for _ in range(wanted - len(pods)):
                try:
                    made = self.write(
                        self.server.registry.create, self.pods, self._pod_from(rs), key[0]
                    )
                except st.StatusError as exc:
                    failure = str(exc)  # e.g. a namespace being deleted, a missing account
                    self.record_event(
                        rs, "FailedCreate", f"Error creating: {failure}", warning=True
                    )
                    break
                self.record_event(
                    rs, "SuccessfulCreate", f"Created pod: {made.obj['metadata']['name']}"
                )
        elif len(pods) > wanted:
            # getPodsToDelete: unscheduled, then pending, then not ready, then the newest.
            def rank(pod: JSON) -> tuple[Any, ...]:
                pod_spec, status = as_dict(pod.get("spec")), as_dict(pod.get("status"))
                return (
                    bool(pod_spec.get("nodeName")),
                    status.get("phase") == "Running",
                    is_ready(pod),
                    _reversed(str(pod["metadata"].get("creationTimestamp", ""))),
                    _reversed(str(pod["metadata"]["name"])),
                )

            for pod in sorted(pods, key=rank)[: len(pods) - wanted]:
                self.write(
                    self.server.registry.delete, self.pods, key[0], pod["metadata"]["name"], {}
                )
                self.record_event(rs, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        stored = self.server.storage.get(self.replica_sets, key)
        if stored is None:
            return
        rs = stored.obj
        pods = [p for p in self.owned(self.pods, key[0], rs) if not deleting(p)]
        template_labels = as_dict(
            as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
        )
        ready = sum(1 for p in pods if is_ready(p))
        status: JSON = {"replicas": len(pods)}
        labelled = sum(
            1
            for p in pods
            if all(
                as_dict(p["metadata"].get("labels")).get(k) == v for k, v in template_labels.items()
            )
        )
        for field, count in (
            ("fullyLabeledReplicas", labelled),
            ("readyReplicas", ready),
            ("availableReplicas", ready),
        ):
            if count:
                status[field] = count
        status["observedGeneration"] = as_int(rs["metadata"].get("generation"), 1)
        if failure is not None:
            # The ReplicaFailure condition the controller sets when a pod create fails.
            before = [
                c
                for c in as_dict(rs.get("status")).get("conditions") or []
                if isinstance(c, dict) and c.get("type") == "ReplicaFailure"
            ]
            status["conditions"] = [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": before[0].get("lastTransitionTime")
                    if before
                    else self.server.clock.timestamp(),
                    "reason": "FailedCreate",
                    "message": failure,
                }
            ]
        self.write_status(self.replica_sets, rs, status)

    def _pod_from(self, rs: JSON) -> JSON:
        template = deep_copy(as_dict(as_dict(rs.get("spec")).get("template")))
        meta = as_dict(template.get("metadata"))
        pod_meta: JSON = {"generateName": f"{rs['metadata']['name']}-"}
        for field in ("labels", "annotations", "finalizers"):
            if meta.get(field):
                pod_meta[field] = meta[field]
        pod_meta["ownerReferences"] = [owner_reference(rs)]
        return {"metadata": pod_meta, "spec": as_dict(template.get("spec"))}

    # -- the Deployment controller --------------------------------------------------------
    def _sync_deployment(self, key: Key) -> None:
        deployment = self.live(self.deployments, key)
        if deployment is None:
            return
        spec = as_dict(deployment.get("spec"))
        wanted = as_int(spec.get("replicas"), 1)
        owned = self.owned(self.replica_sets, key[0], deployment)
        template = as_dict(spec.get("template"))
        status_in = as_dict(deployment.get("status"))
        collisions = status_in.get("collisionCount")
        hash_ = pod_template_hash(template, collisions if isinstance(collisions, int) else None)
        # FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's, the
        # hash label aside (a rollback makes an old one current again).
        new = next(
            (
                rs
                for rs in sorted(owned, key=_created_order)
                if same_template_ignoring_hash(
                    as_dict(as_dict(rs.get("spec")).get("template")), template
                )
            ),
            None,
        )
        if new is not None:
            hash_ = str(as_dict(new["metadata"].get("labels")).get(POD_TEMPLATE_HASH, hash_))
        olds = [rs for rs in owned if rs is not new]
        created = False
        if not spec.get("paused"):
            recreate = as_dict(spec.get("strategy")).get("type") == "Recreate"
            if recreate:
                for rs in olds:
                    self._scale(rs, 0)
            if recreate and any(self.owned(self.pods, key[0], rs) for rs in olds):
                pass  # the new ReplicaSet waits until no old pod is left, terminating or not
            elif new is None:
                new = self._new_replica_set(deployment, template, hash_, olds, wanted)
                created = True
            else:
                self._revise(new, deployment, olds)
                self._scale(new, wanted)
                new = self._current(self.replica_sets, new)
            new_status = as_dict(new.get("status")) if new is not None else {}
            if new is not None and as_int(new_status.get("availableReplicas")) >= wanted:
                for rs in olds:
                    self._scale(rs, 0)
            self._annotate_revision(key, new)
        stored = self.server.storage.get(self.deployments, key)
        if stored is None:
            return
        deployment = stored.obj
        owned = self.owned(self.replica_sets, key[0], deployment)
        new = next(
            (
                rs
                for rs in owned
                if as_dict(rs["metadata"].get("labels")).get(POD_TEMPLATE_HASH) == hash_
            ),
            None,
        )
        self.write_status(
            self.deployments, deployment, self._deployment_status(deployment, owned, new, created)
        )

    def _current(self, resource: ResourceType, obj: JSON) -> JSON | None:
        stored = self.server.storage.get(
            resource, (obj["metadata"]["namespace"], obj["metadata"]["name"])
        )
        return stored.obj if stored is not None else None

    def _scale(self, rs: JSON, replicas: int) -> None:
        current = self._current(self.replica_sets, rs)
        if current is None or as_int(as_dict(current.get("spec")).get("replicas"), 1) == replicas:
            return
        before = as_int(as_dict(current.get("spec")).get("replicas"), 1)
        body = deep_copy(current)
        body["spec"]["replicas"] = replicas
        annotations = body["metadata"].setdefault("annotations", {})
        if replicas:
            annotations[DESIRED_REPLICAS] = str(replicas)
        meta = body["metadata"]
        self.write(
            self.server.registry.update,
            self.replica_sets,
            meta["namespace"],
            meta["name"],
            body,
            None,
        )
        self._scaled(meta, before, replicas)

    def _new_replica_set(
        self, deployment: JSON, template: JSON, hash_: str, olds: list[JSON], wanted: int
    ) -> JSON | None:
        name = f"{deployment['metadata']['name']}-{hash_}"
        namespace = deployment["metadata"]["namespace"]
        revisions = [
            int(str(as_dict(rs["metadata"].get("annotations")).get(REVISION, "0")) or 0)
            for rs in olds
            if str(as_dict(rs["metadata"].get("annotations")).get(REVISION, "0")).isdigit()
        ]
        revision = max(revisions, default=0) + 1
        new_template = deep_copy(template)
        template_meta = new_template.setdefault("metadata", {})
        template_meta["labels"] = {**as_dict(template_meta.get("labels")), POD_TEMPLATE_HASH: hash_}
        selector = deep_copy(as_dict(as_dict(deployment.get("spec")).get("selector")))
        selector["matchLabels"] = {**as_dict(selector.get("matchLabels")), POD_TEMPLATE_HASH: hash_}
        spec = as_dict(deployment.get("spec"))
        body: JSON = {
            "metadata": {
                "name": name,
                "labels": template_meta["labels"],
                "annotations": {
                    DESIRED_REPLICAS: str(wanted),
                    MAX_REPLICAS: str(wanted + _surge(spec, wanted)),
                    REVISION: str(revision),
                },
                "ownerReferences": [owner_reference(deployment)],
            },
            "spec": {
                "replicas": wanted,
                "minReadySeconds": as_int(spec.get("minReadySeconds")),
                "selector": selector,
                "template": new_template,
            },
        }
        try:
            stored = self.write(self.server.registry.create, self.replica_sets, body, namespace)
        except st.StatusError:
            return None  # a name taken by an object this Deployment does not own
        self._scaled(stored.obj["metadata"], 0, wanted)
        return self._current(self.replica_sets, stored.obj)

    def _revise(self, rs: JSON, deployment: JSON, olds: list[JSON]) -> None:
        """SetNewReplicaSetAnnotations for a ReplicaSet that is current again (a rollback):
        the next revision, its former ones kept in ``revision-history``, and the Deployment's
        ``minReadySeconds``."""
        annotations = as_dict(rs["metadata"].get("annotations"))
        revision = max((_revision(old) for old in olds), default=0) + 1
        body = deep_copy(rs)
        changed = as_int(as_dict(deployment.get("spec")).get("minReadySeconds")) != as_int(
            as_dict(rs.get("spec")).get("minReadySeconds")
        )
        body["spec"]["minReadySeconds"] = as_int(
            as_dict(deployment.get("spec")).get("minReadySeconds")
        )
        if _revision(rs) < revision:
            updated = body["metadata"].setdefault("annotations", {})
            updated[REVISION] = str(revision)
            former = annotations.get(REVISION)
            if former is not None:
                updated[REVISION_HISTORY] = _revision_history(
                    str(annotations.get(REVISION_HISTORY, "")), str(former)
                )
            changed = True
        if changed:
            meta = body["metadata"]
            self.write(
                self.server.registry.update,
                self.replica_sets,
                meta["namespace"],
                meta["name"],
                body,
                None,
            )

    def _annotate_revision(self, key: Key, new: JSON | None) -> None:
        if new is None:
            return
        revision = as_dict(new["metadata"].get("annotations")).get(REVISION)
        stored = self.server.storage.get(self.deployments, key)
        if stored is None or revision is None:
            return
        annotations = as_dict(stored.obj["metadata"].get("annotations"))
        if annotations.get(REVISION) == revision:
            return
        body = deep_copy(stored.obj)
        body["metadata"]["annotations"] = {**annotations, REVISION: revision}
        self.write(self.server.registry.update, self.deployments, key[0], key[1], body, None)

    def _deployment_status(
        self, deployment: JSON, owned: list[JSON], new: JSON | None, created: bool
    ) -> JSON:
        spec = as_dict(deployment.get("spec"))
        wanted = as_int(spec.get("replicas"), 1)
        old_status = as_dict(deployment.get("status"))
        counts = [as_dict(rs.get("status")) for rs in owned]
        replicas = sum(as_int(s.get("replicas")) for s in counts)
        ready = sum(as_int(s.get("readyReplicas")) for s in counts)
        available = sum(as_int(s.get("availableReplicas")) for s in counts)
        updated = as_int(as_dict(new.get("status")).get("replicas")) if new is not None else 0
        status: JSON = {"observedGeneration": as_int(deployment["metadata"].get("generation"), 1)}
        for field, count in (
            ("replicas", replicas),
            ("updatedReplicas", updated),
            ("readyReplicas", ready),
            ("availableReplicas", available),
            ("unavailableReplicas", max(replicas - available, wanted - available, 0)),
        ):
            if count:
                status[field] = count
        now = self.server.clock.timestamp()
        previous = {
            c.get("type"): c for c in old_status.get("conditions") or [] if isinstance(c, dict)
        }

        def condition(kind: str, true: bool, reason: str, message: str) -> JSON:
            before = previous.get(kind, {})
            state = "True" if true else "False"
            same = before.get("status") == state
            return {
                "type": kind,
                "status": state,
                "lastUpdateTime": before.get("lastUpdateTime", now)
                if same and before.get("reason") == reason
                else now,
                "lastTransitionTime": before.get("lastTransitionTime", now) if same else now,
                "reason": reason,
                "message": message,
            }

        minimum = wanted - _max_unavailable(spec, wanted)
        if available >= minimum:
            availability = condition(
                "Available",
                True,
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            availability = condition(
                "Available",
                False,
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        name = new["metadata"]["name"] if new is not None else ""
        complete = (
            new is not None and updated == wanted and replicas == updated and available >= wanted
        )
        if complete:
            progress = condition(
                "Progressing",
                True,
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
            )
        elif created:
            progress = condition(
                "Progressing", True, "NewReplicaSetCreated", f'Created new replica set "{name}"'
            )
        else:
            progress = condition(
                "Progressing", True, "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.'
            )
        status["conditions"] = [availability, progress]
        if isinstance(old_status.get("collisionCount"), int):
            status["collisionCount"] = old_status["collisionCount"]
        return status


def _percent_or_int(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value or "0")
    if text.endswith("%") and text[:-1].isdigit():
        scaled = int(text[:-1]) * total
        return -(-scaled // 100) if round_up else scaled // 100
    return int(text) if text.isdigit() else 0


def _surge(spec: JSON, wanted: int) -> int:
    strategy = as_dict(spec.get("strategy"))
    if strategy.get("type") == "Recreate":
        return 0
    return _percent_or_int(
        as_dict(strategy.get("rollingUpdate")).get("maxSurge", "25%"), wanted, round_up=True
    )


def _max_unavailable(spec: JSON, wanted: int) -> int:
    strategy = as_dict(spec.get("strategy"))
    if strategy.get("type") == "Recreate":
        return 0
    value = _percent_or_int(
        as_dict(strategy.get("rollingUpdate")).get("maxUnavailable", "25%"), wanted, round_up=False
    )
    return min(value, wanted)


def same_template_ignoring_hash(a: JSON, b: JSON) -> bool:
    """deployment/util EqualIgnoreHash: two pod templates are the same apart from the
    ``pod-template-hash`` label, as decoded Go structs compare, where an unset field is its
    zero value. kubectl's rollback writes the template back as Go prints it
    (``creationTimestamp: null``, zero values left out), and kubectl 1.32+ creates it in
    protobuf, whose zero values kubesim keeps (``stdin: false``)."""
    return bool(_unhashed(a) == _unhashed(b))


def _unhashed(template: JSON) -> Any:
    copy = _without_zeros(template)
    labels = as_dict(as_dict(copy.get("metadata")).get("labels"))
    labels.pop(POD_TEMPLATE_HASH, None)
    return copy


def _without_zeros(value: Any) -> Any:
    """``value`` with every null, false, 0, empty string, map and list left out, at any depth
    (a pointer field set to its zero value compares equal to an unset one: close enough to
    pick the ReplicaSet a rollback returns to)."""
    if isinstance(value, dict):
        kept = {k: _without_zeros(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, False, 0, "", {}, [])}
    if isinstance(value, list):
        return [_without_zeros(item) for item in value]
    return value


def _created_order(obj: JSON) -> tuple[str, str]:
    meta = obj["metadata"]
    return (str(meta.get("creationTimestamp", "")), str(meta.get("name", "")))


def _revision(rs: JSON) -> int:
    text = str(as_dict(rs["metadata"].get("annotations")).get(REVISION, "0"))
    return int(text) if text.isdigit() else 0


def _revision_history(history: str, former: str) -> str:
    """``history`` with ``former`` appended, the oldest dropped to stay within the limit."""
    revisions = [r for r in history.split(",") if r] if history else []
    while revisions and len(",".join([*revisions, former])) > MAX_REVISION_HISTORY_CHARS:
        revisions.pop(0)
    return ",".join([*revisions, former])


def _owner_refs(stored: Any) -> list[JSON]:
    """The ownerReferences of a stored version (none for None), the well-formed ones."""
    if stored is None:
        return []
    refs = as_dict(stored.obj.get("metadata")).get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)]


def _collected_policy(obj: JSON) -> str | None:
    """How the collector deletes a dependent (garbagecollector.go attemptToDeleteItem): as its
    own propagation finalizer says, else in the background, whatever the kind's default."""
    finalizers = as_dict(obj.get("metadata")).get("finalizers") or []
    if propagation.ORPHAN_FINALIZER in finalizers or propagation.FOREGROUND_FINALIZER in finalizers:
        return None  # the finalizer decides
    return propagation.BACKGROUND


def _reversed(text: str) -> tuple[int, ...]:
    """A sort key that orders ``text`` descending (the newest first)."""
    return (*(-ord(c) for c in text), 1)
