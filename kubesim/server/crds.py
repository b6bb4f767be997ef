"""CustomResourceDefinitions serve their resource while they exist, as apiextensions-apiserver.

Creating an ``apiextensions.k8s.io/v1`` CustomResourceDefinition registers its resource: group,
names (plural, singular, kind, short names, categories), scope, and ``/status`` and ``/scale``
subresources only when the storage version declares them. Its status then reports the names
accepted and the definition ``Established`` (one more write, as the apiextensions controllers
make it). Deleting the CRD deletes every object of its resource (a ``DELETED`` each), ends the
watches on it and stops serving it.

Simplifications, stated: one version is served, the storage version (kubesim keeps one copy of
each object, so there is nothing to convert between versions); a change to a CRD's names or
versions after its creation is stored but not re-applied; the instances go after the CRD's
own ``DELETED`` (the real ``customresourcecleanup`` finalizer deletes them first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.server.resources import ResourceType
from kubesim.server.storage import ADDED, DELETED, Event

if TYPE_CHECKING:
    from kubesim.server.apiserver import APIServer

JSON = dict[str, Any]
GROUP = "apiextensions.k8s.io"
PLURAL = "customresourcedefinitions"


def is_crd_resource(resource: ResourceType) -> bool:
    return resource.group == GROUP and resource.plural == PLURAL


def served_resource(crd: JSON) -> ResourceType | None:
    """The resource a CRD defines, or None when it defines none kubesim can serve."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return None
    names = _mapping(spec.get("names"))
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served")]
    storage = next((v for v in versions if v.get("storage")), versions[0] if versions else None)
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not (group and plural and kind and storage is not None and storage.get("name")):
        return None
    subresources = _mapping(storage.get("subresources"))
    # subresources.scale names where the replicas and the selector live (customresource/etcd.go
    # ScaleREST); without it the resource has no /scale.
    scale = subresources.get("scale")
    scale_paths = _mapping(scale)
    schema = _mapping(_mapping(storage.get("schema")).get("openAPIV3Schema")) or None
    return ResourceType(
        group=str(group),
        version=str(storage["name"]),
        kind=str(kind),
        plural=str(plural),
        singular=str(names.get("singular") or ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        status_subresource="status" in subresources,
        scale_subresource=isinstance(scale, dict),
        scale_spec_replicas_path=str(scale_paths.get("specReplicasPath") or ".spec.replicas"),
        scale_status_replicas_path=str(scale_paths.get("statusReplicasPath") or ".status.replicas"),
        scale_label_selector_path=scale_paths.get("labelSelectorPath"),
        return_deleted_object=True,
        list_items_have_type=True,
        generation_fields=("spec",),
        openapi_schema=schema,
    )


def _mapping(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def sync(server: APIServer, event: Event) -> None:
    """After a write to a CRD: serve its resource, or stop serving it."""
    crd = event.new.obj
    if event.type == ADDED:
        resource = served_resource(crd)
        if resource is None or server.lookup(resource.group, resource.version, resource.plural):
            return
        server.register(resource)
        _establish(server, event, resource)
    elif event.type == DELETED:
        resource = served_resource(crd)
        if resource is None:
            return
        registered = server.lookup(resource.group, resource.version, resource.plural)
        if registered is not None:
            _withdraw(server, registered)


def _establish(server: APIServer, event: Event, resource: ResourceType) -> None:
    crd = event.new.obj
    now = server.clock.timestamp()
    names = {
        key: value
        for key, value in crd["spec"]["names"].items()
        if key in ("plural", "singular", "kind", "listKind", "shortNames", "categories")
    }
    names.setdefault("singular", resource.singular_name)
    names.setdefault("listKind", f"{resource.kind}List")
    status = {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": [resource.version],
    }
    updated = {**crd, "status": status}
    server._update(event.resource, None, crd["metadata"]["name"], updated, "status")


def _withdraw(server: APIServer, resource: ResourceType) -> None:
    for _, stored in list(server.storage.items(resource)):
        meta = stored.obj["metadata"]
        key = server._key(resource, meta.get("namespace"), meta["name"])
        server._commit_delete(resource, key, stored, dict(stored.obj))
    server.unregister(resource)
