"""OpenAPI v3 documents, as kube-apiserver serves them under ``/openapi/v3``, for kubectl.

kubectl reads them for two things:

- ``apply``, ``create`` and ``replace`` with their default ``--validate=strict`` ask whether the
  server validates fields itself: in the group-version's document, the PATCH operation of the
  kind (found by its ``x-kubernetes-group-version-kind``) must take a ``fieldValidation`` query
  parameter (cli-runtime's query-param verifier). Then kubectl sends ``fieldValidation=Strict``
  and leaves validation to the server.
- ``explain`` renders the kind's schema from ``components.schemas``.

The index (``/openapi/v3``) names one document per served group-version with a content hash in
its URL, as the real server does (clients cache by it). Paths cover every verb of every served
resource, custom resources included. Schemas of built-in kinds are generated from the official
client's models (field names, types, descriptions) when the ``kubernetes`` package is installed,
named as kube-apiserver names them (``io.k8s.api.core.v1.Pod``, with the packages of the
protobuf table); a custom resource's schema is its CRD's ``openAPIV3Schema``. Documents are
built once per set of served resources and are byte-stable.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING, Any

from kubesim.apiserver.schemas import (
    definition_name,
    kind_schemas,
    model_class,
    model_schema,
    model_schemas,
    schema_name,
)
from kubesim.wire.discovery import SERVER_VERSION

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

_WRITE_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation")


def index(resources: list[ResourceType]) -> JSON:
    """``/openapi/v3``: one entry per group-version, its URL carrying the document's hash."""
    paths = {}
    for group, version in sorted({(r.group, r.version) for r in resources}):
        body = document_bytes(tuple(_of(resources, group, version)), group, version)
        digest = hashlib.sha512(body).hexdigest()[:64].upper()
        prefix = f"apis/{group}/{version}" if group else f"api/{version}"
        paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
    return {"paths": paths}


def _of(resources: list[ResourceType], group: str, version: str) -> list[ResourceType]:
    return sorted(
        (r for r in resources if r.group == group and r.version == version), key=lambda r: r.plural
    )


def group_version_document(resources: list[ResourceType], group: str, version: str) -> bytes | None:
    """The document of one group-version (JSON bytes), or None when none is served."""
    served = _of(resources, group, version)
    if not served:
        return None
    return document_bytes(tuple(served), group, version)


@functools.lru_cache(maxsize=64)
def document_bytes(served: tuple[ResourceType, ...], group: str, version: str) -> bytes:
    paths: JSON = {}
    schemas: JSON = {}
    for resource in served:
        gvk = {"group": group, "version": version, "kind": resource.kind}
        paths.update(_paths(resource, gvk))
        schemas.update(_schemas(resource, gvk))
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


# -- paths -------------------------------------------------------------------------------------
def _parameter(name: str) -> JSON:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _operation(action: str, gvk: JSON, parameters: tuple[str, ...] = ()) -> JSON:
    return {
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": [_parameter(p) for p in parameters],
        "responses": {"200": {"description": "OK"}},
    }


def _paths(resource: ResourceType, gvk: JSON) -> JSON:
    base = resource.path_prefix()
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = f"{base}{scope}/{resource.plural}"
    item = f"{collection}/{{name}}"
    verbs = set(resource.verbs)
    listing: JSON = {}
    if "list" in verbs:
        listing["get"] = _operation("list", gvk, ("labelSelector", "fieldSelector", "watch"))
    if "create" in verbs:
        listing["post"] = _operation("post", gvk, _WRITE_PARAMETERS)
    if "deletecollection" in verbs:
        listing["delete"] = _operation("deletecollection", gvk, ("dryRun",))
    single: JSON = {}
    if "get" in verbs:
        single["get"] = _operation("get", gvk)
    if "update" in verbs:
        single["put"] = _operation("put", gvk, _WRITE_PARAMETERS)
    if "patch" in verbs:
        single["patch"] = _operation("patch", gvk, (*_WRITE_PARAMETERS, "force"))
    if "delete" in verbs:
        single["delete"] = _operation("delete", gvk, ("dryRun",))
    paths = {collection: listing, item: single}
    if resource.status_subresource:
        status = {
            "get": _operation("get", gvk),
            "put": _operation("put", gvk, _WRITE_PARAMETERS),
            "patch": _operation("patch", gvk, (*_WRITE_PARAMETERS, "force")),
        }
        paths[f"{item}/status"] = status
    return paths


# -- schemas -----------------------------------------------------------------------------------
def _schemas(resource: ResourceType, gvk: JSON) -> JSON:
    custom = resource.openapi_schema
    if custom is not None:
        name = definition_name(resource.group, resource.version, resource.kind)
        return {name: {**custom, "x-kubernetes-group-version-kind": [gvk]}}
    model = model_class(resource, resource.kind)
    if model is None:
        return {}
    out: JSON = {}
    top = model_schema(model, out)
    out[top]["x-kubernetes-group-version-kind"] = [gvk]
    return out


__all__ = [
    "definition_name",
    "document_bytes",
    "index",
    "kind_schemas",
    "model_schemas",
    "schema_name",
]
