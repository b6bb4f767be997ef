"""DELETE as the registry serves it: preconditions, graceful deletion, finalizers.

One function, :func:`delete`, for :meth:`Registry.delete
<kubesim.apiserver.registry.Registry.delete>` (the caller holds the server's lock). An object
goes at once, as with a zero grace period, unless something holds it:

- a pod on a node whose kubelet this server knows (:attr:`Registry.kubelets`) is marked with
  its grace period, and its kubelet deletes it once its containers stop;
- with a garbage collector (:attr:`Registry.garbage_collector`), ``propagationPolicy`` may
  leave the object a finalizer (``foregroundDeletion``, ``orphan``) for the collector to act
  on (:mod:`kubesim.apiserver.propagation`);
- finalizers (a namespace's ``kubernetes`` one included) keep it, marked with a
  ``deletionTimestamp``, until they are removed (:mod:`kubesim.apiserver.lifecycle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import lifecycle, propagation
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import canonical_object, deep_copy
from kubesim.apiserver.lists import selected
from kubesim.apiserver.storage import MODIFIED

if TYPE_CHECKING:
    from kubesim.apiserver.registry import Registry
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.selectors import FieldSelector, LabelSelector

JSON = dict[str, Any]


def delete(
    registry: Registry,
    resource: ResourceType,
    namespace: str | None,
    name: str,
    preconditions: JSON,
    *,
    dry_run: bool = False,
    whole: bool = False,
    grace: int | None = None,
    policy: str | None = None,
) -> JSON:
    """``whole``: answer with the object even for kinds whose DELETE answers a Status;
    ``grace``: DeleteOptions' ``gracePeriodSeconds`` (pods on this server's nodes);
    ``policy``: DeleteOptions' ``propagationPolicy`` (kubesim.apiserver.propagation)."""
    key = registry.key(resource, namespace, name)
    current = registry.storage.get(resource, key)
    if current is None:
        raise st.not_found(resource.plural, resource.group, name)
    meta = current.obj["metadata"]
    if preconditions.get("resourceVersion") not in (None, "") and str(
        preconditions["resourceVersion"]
    ) != str(current.rv):
        raise st.conflict(
            resource.plural,
            resource.group,
            name,
            "Precondition failed: ResourceVersion in precondition: "
            f"{preconditions['resourceVersion']}, "
            f"ResourceVersion in object meta: {current.rv}",
        )
    if preconditions.get("uid") not in (None, "") and preconditions["uid"] != meta["uid"]:
        raise st.conflict(
            resource.plural,
            resource.group,
            name,
            f"Precondition failed: UID in precondition: {preconditions['uid']}, "
            f"UID in object meta: {meta['uid']}",
        )
    lifecycle.admit_delete(resource, name)
    kubelets = registry.kubelets
    if kubelets is not None and resource is kubelets.pods:
        period = kubelets.grace_period(current.obj, grace)
        if period:
            marked = kubelets.mark_terminating(deep_copy(current.obj), period)
            if marked is None:
                return deep_copy(current.obj)  # already terminating, as soon or sooner
            stored = registry.commit(
                resource, key, MODIFIED, canonical_object(marked), current, dry_run=dry_run
            )
            return deep_copy(stored.obj)
    if registry.garbage_collector and resource is not registry.namespace_resource:
        # The garbage collector runs: the policy may leave it a finalizer to act on.
        before = list(meta.get("finalizers") or [])
        after = propagation.finalizers_after_delete(resource, before, policy)
        if set(after) != set(before):
            marked = deep_copy(current.obj)
            marked["metadata"]["finalizers"] = after
            if not meta.get("deletionTimestamp"):
                marked = lifecycle.mark_deleted(resource, marked, registry.clock)
            stored = registry.commit(
                resource, key, MODIFIED, canonical_object(marked), current, dry_run=dry_run
            )
            return deep_copy(stored.obj)
    if meta.get("finalizers") or lifecycle.held_by_spec_finalizers(resource, current.obj):
        if meta.get("deletionTimestamp"):
            if not meta.get("deletionGracePeriodSeconds"):
                return deep_copy(current.obj)  # already terminating: nothing more to do
            # A pod in its grace period deleted at once (its kubelet's final DELETE): the
            # grace period drops to zero, and the finalizers still hold it.
            shortened = deep_copy(current.obj)
            shortened["metadata"]["deletionGracePeriodSeconds"] = 0
            stored = registry.commit(
                resource, key, MODIFIED, canonical_object(shortened), current, dry_run=dry_run
            )
            return deep_copy(stored.obj)
        marked = lifecycle.mark_deleted(resource, deep_copy(current.obj), registry.clock)
        stored = registry.commit(
            resource, key, MODIFIED, canonical_object(marked), current, dry_run=dry_run
        )
        if resource is registry.namespace_resource and not dry_run:
            lifecycle.terminate_namespace_later(registry.server, name)
        return deep_copy(stored.obj)
    deleted = registry.commit_delete(
        resource, key, current, deep_copy(current.obj), dry_run=dry_run
    )
    if resource.return_deleted_object or whole:
        return deep_copy(deleted.obj)
    return st.success(
        {"name": name, "group": resource.group, "kind": resource.plural, "uid": meta["uid"]}
        if resource.group
        else {"name": name, "kind": resource.plural, "uid": meta["uid"]}
    )


def delete_collection(
    registry: Registry,
    resource: ResourceType,
    namespace: str | None,
    labels: LabelSelector,
    fields: FieldSelector,
    dry_run: bool,
    policy: str | None,
) -> JSON:
    """DELETE on a collection: every selected object deleted one by one (one DELETED event
    each, at its own resourceVersion, as store.go DeleteCollection), finalizers honoured. The
    answer is the list of what was deleted (or marked for deletion)."""
    if resource.namespaced and namespace is not None:
        registry.require_namespace(resource, namespace)
    chosen = [
        stored
        for _, stored in registry.storage.items(resource, namespace=namespace)
        if selected(resource, stored, labels, fields)
    ]
    items = []
    for stored in chosen:
        meta = stored.obj["metadata"]
        items.append(
            delete(
                registry,
                resource,
                meta.get("namespace"),
                meta["name"],
                {},
                dry_run=dry_run,
                whole=True,
                policy=policy,
            )
        )
    return {
        "kind": f"{resource.kind}List",
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": str(registry.storage.rv)},
        "items": items,
    }
