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
import importlib
import json
import re
from typing import TYPE_CHECKING, Any

from kubesim.server.discovery import SERVER_VERSION

if TYPE_CHECKING:
    from kubesim.server.resources import ResourceType

JSON = dict[str, Any]

_WRITE_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation")
_MODEL_PREFIX = re.compile(
    r"^(?P<group>(?:[A-Z][a-z]+)*?)V(?P<major>\d+)(?P<pre>(?:alpha|beta)\d+)?"
)


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
    model = _model_class(resource, resource.kind)
    if model is None:
        return {}
    out: JSON = {}
    top = _model_schema(model, out)
    out[top]["x-kubernetes-group-version-kind"] = [gvk]
    return out


def kind_schemas(resource: ResourceType, kind: str | None = None) -> tuple[JSON, str] | None:
    """A built-in kind's schemas from the official client's models (every schema it refers
    to, by name) and the name of its own; None without the client or a model for it. ``kind``
    is another kind of the resource's group-version (its list kind); the resource's own by
    default."""
    model = _model_class(resource, kind or resource.kind)
    if model is None:
        return None
    out: JSON = {}
    return out, _model_schema(model, out)


def model_schemas(model_name: str, out: JSON) -> str | None:
    """Add the schema of the official client's model ``model_name`` (``V1Status``) and those it
    refers to to ``out``; its name, or None without the client or the model."""
    try:
        models = importlib.import_module("kubernetes.client.models")
    except ImportError:
        return None
    model = getattr(models, model_name, None)
    if model is None or not hasattr(model, "openapi_types"):
        return None
    return _model_schema(model, out)


def schema_name(resource: ResourceType, kind: str) -> str:
    """The schema name of ``kind`` (the resource's own or its list kind) in the documents:
    a custom resource's from its group, a built-in kind's from its model, which knows where
    the kind lives (``io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1...``)."""
    if resource.openapi_schema is None:
        model = _model_class(resource, kind)
        if model is not None:
            return _openapi_name(model.__name__)
        group = resource.group.split(".")[0] or "core"
        return f"io.k8s.api.{group}.{resource.version}.{kind}"
    return definition_name(resource.group, resource.version, kind)


def definition_name(group: str, version: str, kind: str) -> str:
    """A kind's schema name as kube-apiserver's documents name it: the group reversed
    (``io.k8s.api.core.v1.Pod`` for the core group, ``com.example.v1.Widget``)."""
    reversed_group = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
    return f"{reversed_group}.{version}.{kind}"


def _model_class(resource: ResourceType, kind: str) -> Any:
    try:
        models = importlib.import_module("kubernetes.client.models")
    except ImportError:
        return None
    major = resource.version.capitalize()
    prefix = "".join(part.capitalize() for part in (resource.group.split(".")[0] or "core",))
    for name in (f"{major}{kind}", f"{prefix}{major}{kind}"):
        model = getattr(models, name, None)
        if model is not None and hasattr(model, "openapi_types"):
            return model
    return None


@functools.cache
def _message_packages() -> dict[str, list[str]]:
    """Simple name -> protobuf packages that define it (``Pod`` -> ``k8s.io.api.core.v1``)."""
    from kubesim.server.protobuf import _schema

    packages: dict[str, list[str]] = {}
    for full in _schema():
        package, _, name = full.rpartition(".")
        packages.setdefault(name, []).append(package)
    return packages


def _openapi_name(model_name: str) -> str:
    """``V1ObjectMeta`` -> ``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``; a name kubesim
    cannot place keeps the client's own (``io.k8s.kubesim.V1Foo``)."""
    match = _MODEL_PREFIX.match(model_name)
    if match is None:
        return f"io.k8s.kubesim.{model_name}"
    simple = model_name[match.end() :]
    version = f"v{match['major']}{match['pre'] or ''}"
    candidates = [p for p in _message_packages().get(simple, []) if p.endswith(f".{version}")]
    hint = match["group"].lower()
    if len(candidates) > 1 and hint:
        candidates = [p for p in candidates if f".{hint}." in p] or candidates
    if len(candidates) != 1:
        return f"io.k8s.kubesim.{model_name}"
    return f"io.k8s.{candidates[0].removeprefix('k8s.io.')}.{simple}"


_SCALARS = {
    "str": {"type": "string"},
    "StrictStr": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "StrictInt": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "StrictBool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "object": {"type": "object"},
    "bytearray": {"type": "string", "format": "byte"},
}
_LIST = re.compile(r"^(?:List\[|list\[)(.*)\]$")
_DICT = re.compile(r"^(?:Dict\[str, |dict\(str, )(.*)[\])]$")


def _model_schema(model: Any, out: JSON) -> str:
    """Add ``model``'s schema (and those it refers to) to ``out``; return its name."""
    name = _openapi_name(model.__name__)
    if name in out:
        return name
    schema: JSON = {"type": "object", "properties": {}}
    out[name] = schema
    doc = (model.__doc__ or "").strip().split("\n\n")[0].strip()
    if doc and not doc.startswith("NOTE:") and "Attributes:" not in doc:
        schema["description"] = " ".join(doc.split())
    fields = getattr(model, "model_fields", {})
    for attribute, type_name in model.openapi_types.items():
        json_name = model.attribute_map.get(attribute, attribute)
        prop = _type_schema(str(type_name), out)
        description = getattr(fields.get(attribute), "description", None)
        if description:
            prop = (
                {**prop, "description": description}
                if "$ref" not in prop
                else {
                    "allOf": [prop],
                    "description": description,
                }
            )
        schema["properties"][json_name] = prop
    return name


def _type_schema(type_name: str, out: JSON) -> JSON:
    type_name = type_name.strip()
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    listed = _LIST.match(type_name)
    if listed:
        return {"type": "array", "items": _type_schema(listed.group(1), out)}
    mapped = _DICT.match(type_name)
    if mapped:
        return {"type": "object", "additionalProperties": _type_schema(mapped.group(1), out)}
    models = importlib.import_module("kubernetes.client.models")
    model = getattr(models, type_name, None)
    if model is None or not hasattr(model, "openapi_types"):
        return {"type": "object"}
    return {"$ref": f"#/components/schemas/{_model_schema(model, out)}"}
