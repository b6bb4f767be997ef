"""Deletion as kube-apiserver runs it: finalizers, graceful deletion, and namespaces.

- An object with finalizers is not deleted: it is marked (``deletionTimestamp``, a zero grace
  period) and its ``generation`` is bumped (``rest.BeforeDelete`` in
  staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go: a controller must see that the
  object changed). While it is being deleted no finalizer may be added
  (``ValidateNoNewFinalizers``, apimachinery/pkg/api/validation/objectmeta.go). The update that
  removes the last finalizer is not written: the object is deleted, and ``DELETED`` carries the
  last state that was stored (``deleteWithoutFinalizers`` in registry/generic/registry/store.go).
- A namespace is held by its ``spec.finalizers`` (``kubernetes``): a delete marks it
  ``Terminating``; the NamespaceLifecycle admission plugin then refuses new content in it, and
  refuses to delete ``default``, ``kube-system`` and ``kube-public`` at all
  (plugin/pkg/admission/namespace/lifecycle/admission.go). The namespace controller
  (pkg/controller/namespace/deletion) deletes everything inside, waits for what finalizers
  hold, then removes its finalizer, and the namespace is gone.

The controller runs on the server's clock, ``NAMESPACE_SYNC_SECONDS`` after the delete and then
every ``NAMESPACE_RETRY_SECONDS`` while finalizers hold content: a client sees the namespace
``Terminating`` first, as it would on a cluster, and a simulation's run stays a function of its
seed (the timers are virtual; under ``kubesim serve`` they follow the wall clock).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st

if TYPE_CHECKING:
    from kubesim._core.clock import VirtualClock
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

# NamespaceLifecycle's immortal namespaces.
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# The finalizer a namespace is created with (namespace strategy PrepareForCreate).
NAMESPACE_FINALIZER = "kubernetes"
NAMESPACE_SYNC_SECONDS = 1.0
NAMESPACE_RETRY_SECONDS = 5.0


def _is_namespace(resource: ResourceType) -> bool:
    return resource.group == "" and resource.kind == "Namespace"


def prepare_for_create(resource: ResourceType, obj: JSON) -> None:
    """A new namespace is ``Active``, held by the ``kubernetes`` finalizer, and labelled with
    its name, whatever the client sent (namespace strategy PrepareForCreate, and the
    ``kubernetes.io/metadata.name`` label of pkg/registry/core/namespace/strategy.go)."""
    if not _is_namespace(resource):
        return
    spec = obj.get("spec")
    obj["spec"] = {**(spec if isinstance(spec, dict) else {}), "finalizers": [NAMESPACE_FINALIZER]}
    obj["status"] = {"phase": "Active"}
    meta = obj["metadata"]
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    meta["labels"] = {**labels, "kubernetes.io/metadata.name": meta["name"]}


def admit_create(server: APIServer, resource: ResourceType, namespace: str, name: str) -> None:
    """Refuse new content in a namespace that is being deleted (403, as admission does)."""
    stored = server.storage.get(server.namespace_resource, ("", namespace))
    if stored is None or not stored.obj["metadata"].get("deletionTimestamp"):
        return
    raise st.forbidden(
        resource.plural,
        resource.group,
        name,
        f"unable to create new content in namespace {namespace} because it is being terminated",
    )


def admit_delete(resource: ResourceType, name: str) -> None:
    if _is_namespace(resource) and name in IMMORTAL_NAMESPACES:
        raise st.forbidden(resource.plural, "", name, "this namespace may not be deleted")


def held_by_spec_finalizers(resource: ResourceType, obj: JSON) -> bool:
    """A namespace whose ``spec.finalizers`` are not done yet cannot be deleted outright."""
    if not _is_namespace(resource):
        return False
    spec = obj.get("spec")
    return isinstance(spec, dict) and bool(spec.get("finalizers"))


def finalized(resource: ResourceType, obj: JSON) -> bool:
    """Marked for deletion with nothing left to hold it: the update must become a delete.
    Only at a zero grace period (store.go shouldDeleteDuringUpdate): a pod in its grace period
    takes status updates from its kubelet until the kubelet deletes it."""
    meta = obj["metadata"]
    return (
        bool(meta.get("deletionTimestamp"))
        and not meta.get("deletionGracePeriodSeconds")
        and not (meta.get("finalizers") or held_by_spec_finalizers(resource, obj))
    )


def mark_deleted(resource: ResourceType, obj: JSON, clock: VirtualClock) -> JSON:
    """The graceful deletion of an object that finalizers hold (``rest.BeforeDelete``)."""
    meta = obj["metadata"]
    meta["deletionTimestamp"] = clock.timestamp()
    meta["deletionGracePeriodSeconds"] = 0
    if int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    if _is_namespace(resource):
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status["phase"] = "Terminating"
    return obj


def check_no_new_finalizers(resource: ResourceType, old: JSON, new: JSON) -> None:
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or ())
    added = sorted(set(new["metadata"].get("finalizers") or ()) - before)
    if not added:
        return
    listed = ", ".join(f'"{f}"' for f in added)
    raise st.invalid(
        resource.kind,
        resource.group,
        str(new["metadata"].get("name") or ""),
        [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: no new finalizers can be added if the object is being "
                f"deleted, found new finalizers []string{{{listed}}}",
                "field": "metadata.finalizers",
            }
        ],
    )


def terminate_namespace_later(server: APIServer, name: str) -> None:
    server.clock.call_later(NAMESPACE_SYNC_SECONDS, lambda: _sync_namespace(server, name))


def _sync_namespace(server: APIServer, name: str) -> None:
    """One pass of the namespace controller over a terminating namespace."""
    with server.lock:
        stored = server.storage.get(server.namespace_resource, ("", name))
        if stored is None or not stored.obj["metadata"].get("deletionTimestamp"):
            return  # gone already (or recreated): nothing to finish
        remaining = 0
        for resource in server.resources:
            if not resource.namespaced:
                continue
            for _, held in list(server.storage.items(resource, namespace=name)):
                meta = held.obj["metadata"]
                if not meta.get("deletionTimestamp"):
                    server.registry.delete(resource, name, meta["name"], {})
                if server.storage.get(resource, (name, meta["name"])) is not None:
                    remaining += 1  # held by finalizers: wait for their controllers
        if remaining:
            server.clock.call_later(NAMESPACE_RETRY_SECONDS, lambda: _sync_namespace(server, name))
            return
        # Everything inside is gone: remove the namespace's own finalizer (its /finalize
        # subresource); with no finalizer left, the update deletes the namespace.
        finalize = {**stored.obj, "spec": {**stored.obj.get("spec", {}), "finalizers": []}}
        finalize["metadata"] = dict(stored.obj["metadata"])
        server.registry.update(server.namespace_resource, None, name, finalize, None)
        server.notify_changed()
