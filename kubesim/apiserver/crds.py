"""CustomResourceDefinitions serve their resource while they exist, as apiextensions-apiserver.

Creating an ``apiextensions.k8s.io/v1`` CustomResourceDefinition registers its resource: group,
names (plural, singular, kind, short names, categories), scope, and per version its
``/status`` and ``/scale`` subresources, its schema and whether it is deprecated. Its status then
reports the names accepted and the definition ``Established`` (one more write, as the
apiextensions controllers make it). Deleting the CRD deletes every object of its resource (a
``DELETED`` each), ends the watches on it and stops serving it.

Every served version is served. kubesim keeps one copy of each object, in the storage version
the CRD named when it was created; the other served versions are views of it
(:mod:`kubesim.apiserver.conversion`) whose objects differ in ``apiVersion`` alone, as the
conversion strategy ``None`` has it (a ``Webhook`` strategy is served the same way: no webhook
is called). A request to a version marked ``deprecated`` is answered with its
``deprecationWarning``, or ``<group>/<version> <Kind> is deprecated``, in a ``Warning`` header.
An update that serves another version, or stops serving one, takes effect; other changes to
the names, the scope or the storage version after creation are stored but not re-applied. The
instances go after the CRD's own ``DELETED`` (the real ``customresourcecleanup`` finalizer
deletes them first).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kubesim.apiserver.resources import EVERY_FIELD, ResourceType
from kubesim.apiserver.storage import ADDED, DELETED, Event

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]
GROUP = "apiextensions.k8s.io"
PLURAL = "customresourcedefinitions"


def is_crd_resource(resource: ResourceType) -> bool:
    return resource.group == GROUP and resource.plural == PLURAL


def served_resources(crd: JSON) -> list[ResourceType]:
    """The resources a CRD defines, the storage version's first and then a view per other
    served version; empty when it defines none kubesim can serve."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return []
    names = _mapping(spec.get("names"))
    versions = [
        v
        for v in spec.get("versions") or []
        if isinstance(v, dict) and v.get("served") and v.get("name")
    ]
    storage = next((v for v in versions if v.get("storage")), versions[0] if versions else None)
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not (group and plural and kind and storage is not None):
        return []
    stored = ResourceType(
        group=str(group),
        version=str(storage["name"]),
        kind=str(kind),
        plural=str(plural),
        singular=str(names.get("singular") or ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        return_deleted_object=True,
        list_items_have_type=True,
        generation_fields=EVERY_FIELD,
        **_per_version(str(group), str(kind), storage),
    )
    views = [
        dataclasses.replace(
            stored, version=str(v["name"]), stored_as=stored, **_per_version(group, kind, v)
        )
        for v in versions
        if v is not storage
    ]
    return [stored, *views]


def _per_version(group: str, kind: str, version: JSON) -> dict[str, Any]:
    """What a CRD declares version by version: subresources, schema, deprecation."""
    subresources = _mapping(version.get("subresources"))
    # subresources.scale names where the replicas and the selector live (customresource/etcd.go
    # ScaleREST); without it the resource has no /scale.
    scale = subresources.get("scale")
    scale_paths = _mapping(scale)
    warning = None
    if version.get("deprecated"):
        warning = version.get("deprecationWarning")
        if not isinstance(warning, str):
            warning = f"{group}/{version['name']} {kind} is deprecated"
    return {
        "status_subresource": "status" in subresources,
        "scale_subresource": isinstance(scale, dict),
        "scale_spec_replicas_path": str(scale_paths.get("specReplicasPath") or ".spec.replicas"),
        "scale_status_replicas_path": str(
            scale_paths.get("statusReplicasPath") or ".status.replicas"
        ),
        "scale_label_selector_path": scale_paths.get("labelSelectorPath"),
        "openapi_schema": _mapping(_mapping(version.get("schema")).get("openAPIV3Schema")) or None,
        "deprecation_warning": warning,
    }


def _mapping(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def sync(server: APIServer, event: Event) -> None:
    """After a write to a CRD: serve its versions, or stop serving them."""
    crd = event.new.obj
    served = served_resources(crd)
    if not served:
        return
    stored = _registered_storage(server, served[0])
    if event.type == DELETED:
        if stored is not None:
            _withdraw(server, stored)
        return
    if event.type == ADDED:
        if stored is not None or server.lookup(
            served[0].group, served[0].version, served[0].plural
        ):
            return  # served already, by another CRD or as a built-in kind
        stored = server.register(served[0])
        for view in served[1:]:
            server.register(view)
        _establish(server, event, stored)
        return
    if stored is None:
        return
    # An update: serve the versions it serves now, as views of the storage registered first.
    wanted = {view.version: view for view in served if view.version != stored.version}
    for resource in server.resources:
        if resource.stored_as is stored and resource.version not in wanted:
            server.unregister(resource)
    for version, view in wanted.items():
        current = server.lookup(stored.group, version, stored.plural)
        if current is not None and current.stored_as is stored:
            if _declared(current) == _declared(view):
                continue
            server.unregister(current)
        elif current is not None:
            continue  # another resource holds that version
        server.register(dataclasses.replace(view, stored_as=stored))


def _declared(resource: ResourceType) -> tuple[Any, ...]:
    """What a CRD version declares, to tell whether an update changed it."""
    return tuple(getattr(resource, name) for name in _PER_VERSION)


_PER_VERSION = (
    "status_subresource",
    "scale_subresource",
    "scale_spec_replicas_path",
    "scale_status_replicas_path",
    "scale_label_selector_path",
    "openapi_schema",
    "deprecation_warning",
)


def _registered_storage(server: APIServer, resource: ResourceType) -> ResourceType | None:
    """The resource a CRD's objects are kept in, whichever of its versions it was created with."""
    for registered in server.resources:
        if (
            registered.group == resource.group
            and registered.plural == resource.plural
            and registered.stored_as is None
            and registered.list_items_have_type
        ):
            return registered
    return None


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
    server.registry.update(event.resource, None, crd["metadata"]["name"], updated, "status")


def _withdraw(server: APIServer, resource: ResourceType) -> None:
    for _, stored in list(server.storage.items(resource)):
        meta = stored.obj["metadata"]
        key = server.registry.key(resource, meta.get("namespace"), meta["name"])
        server.registry.commit_delete(resource, key, stored, dict(stored.obj))
    for view in [r for r in server.resources if r.stored_as is resource]:
        server.unregister(view)
    server.unregister(resource)
