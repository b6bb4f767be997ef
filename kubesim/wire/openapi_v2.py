"""OpenAPI v2 (``/openapi/v2``), as kube-apiserver serves it: Swagger 2.0 JSON, or gnostic protobuf.

Two readers, two encodings, one negotiation (kube-openapi's handler): the Accept header's media
ranges in order, the first that names one of the two wins, and no Accept header means ``*/*``.

- **JSON**, what tools that generate clients or JSON schemas fetch, and what kubectl's own test
  suite greps. Every path of every served resource (custom resources included) with its
  operations as the real document names them (``listCoreV1NamespacedService``, "list or watch
  objects of kind Service"), their query parameters described in the words the official
  client documents them in, and ``definitions``: each kind, its list kind, and every schema they
  refer to, generated from the official client's models as the v3 documents are (so they need
  the ``kubernetes`` package; without it the paths are served with no definitions). A custom
  resource's definition is its CRD's ``openAPIV3Schema`` with what Swagger 2.0 cannot say
  (``nullable``, ``anyOf``, ``oneOf``, ``not``) left out, as the CRD handler's v2 conversion
  leaves it out.
- **Protobuf** (gnostic's ``openapi_v2.Document``), the only encoding client-go reads: kubectl
  1.27 and 1.28 look in it, before a write, for the kind's PATCH operation with a
  ``fieldValidation`` parameter, and then leave validation to the server as later versions do
  with v3. It holds those operations only.

Both are built once per set of served resources and are byte-stable.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubesim.wire import openapi
from kubesim.wire.discovery import SERVER_VERSION

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

JSON_TYPE = "application/json"
PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what clients Accept
# What the protobuf answer is labelled (kube-openapi's handler): "@" is not allowed in a
# Content-Type, and client-go parses it with mime.ParseMediaType.
PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
ACCEPTED = (JSON_TYPE, PROTOBUF)

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_PRODUCES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
_WATCH_PRODUCES = [
    *_PRODUCES,
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
]
_PATCH_CONSUMES = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]
# The query parameters of each action, as kube-apiserver's document lists them.
_LIST = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_DELETE = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
_DELETE_COLLECTION = tuple(sorted({*_DELETE, *_LIST} - {"allowWatchBookmarks", "watch"}))
_BOOLEAN = {"allowWatchBookmarks", "force", "orphanDependents", "sendInitialEvents", "watch"}
_BOOLEAN |= {"ignoreStoreReadErrorWithClusterBreakingPotential"}
_INTEGER = {"gracePeriodSeconds", "limit", "timeoutSeconds"}
# CRD schema keywords Swagger 2.0 has no word for.
_NOT_IN_V2 = frozenset({"nullable", "anyOf", "oneOf", "not"})


def negotiate(accept: str) -> str | None:
    """The media type to answer ``accept`` with (:data:`JSON_TYPE` or :data:`PROTOBUF`), or None
    when the header names neither (the caller answers 406)."""
    for part in (accept or "*/*").split(","):
        pieces = [p.strip() for p in part.split(";")]
        media = pieces[0].lower()
        if any(p.replace(" ", "") in ("q=0", "q=0.0") for p in pieces[1:]):
            continue
        if media in ("*/*", "application/*", JSON_TYPE):
            return JSON_TYPE
        if media == PROTOBUF:
            return PROTOBUF
    return None


def document(resources: list[ResourceType], media_type: str) -> bytes:
    """``/openapi/v2`` in ``media_type`` (one of :data:`ACCEPTED`)."""
    served = tuple(sorted(resources, key=lambda r: (r.group, r.version, r.plural)))
    return _json_bytes(served) if media_type == JSON_TYPE else _protobuf_bytes(served)


# -- JSON --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _json_bytes(resources: tuple[ResourceType, ...]) -> bytes:
    paths: JSON = {}
    definitions: JSON = {}
    for resource in resources:
        paths.update(_paths(resource))
        definitions.update(_definitions(resource))
    if definitions:
        definitions.update(_shared_definitions())
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
        "paths": paths,
        "definitions": _v2_refs(definitions),
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey",
            }
        },
        "security": [{"BearerToken": []}],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _friendly(group: str) -> list[str]:
    """A group's words, as operation ids and tags spell it: ``rbac.authorization.k8s.io`` ->
    ``[rbac, authorization]``, the legacy group ``core``."""
    return [w for w in re.split(r"[.\-]", group.removesuffix(".k8s.io") or "core") if w]


def _names(resource: ResourceType) -> tuple[str, str]:
    """(``CoreV1``, ``core_v1``): the operation id's group-version and the tag."""
    words = _friendly(resource.group)
    camel = "".join(w[:1].upper() + w[1:] for w in words)
    tag = words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])
    return (
        f"{camel}{resource.version[:1].upper()}{resource.version[1:]}",
        f"{tag}_{resource.version}",
    )


def _paths(resource: ResourceType) -> JSON:
    kind, verbs = resource.kind, set(resource.verbs)
    gvk = {"group": resource.group, "version": resource.version, "kind": kind}
    group_version, tag = _names(resource)
    own = _definition(resource, kind)
    listed = _definition(resource, resource.list_kind)
    status = f"{_META}.Status"

    def operation(action: str, verb: str, suffix: str, description: str, **extra: Any) -> JSON:
        scope = "Namespaced" if resource.namespaced and "ForAllNamespaces" not in suffix else ""
        name = suffix.replace("*", f"{scope}{kind}")
        infix = "Collection" if action == "deletecollection" else ""
        op: JSON = {
            "consumes": ["*/*"],
            "description": description,
            "operationId": f"{verb}{group_version}{infix}{name}",
            "produces": _PRODUCES,
            "schemes": ["https"],
            "tags": [tag],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }
        op.update(extra)
        return op

    def answer(ref: str, *codes: str) -> JSON:
        schema = {"$ref": f"#/definitions/{ref}"}
        out: JSON = {code: {"description": _CODES[code], "schema": schema} for code in codes}
        out["401"] = {"description": "Unauthorized"}
        return out

    def body(ref: str) -> JSON:
        return {
            "in": "body",
            "name": "body",
            "required": True,
            "schema": {"$ref": f"#/definitions/{ref}"},
        }

    base = resource.path_prefix()
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = f"{base}{scope}/{resource.plural}"
    item = f"{collection}/{{name}}"
    scoped = [_path_parameter("namespace", resource)] if resource.namespaced else []
    named = [_path_parameter("name", resource), *scoped]
    pretty = [_query_parameter("pretty")]
    paths: JSON = {}

    listing: JSON = {"parameters": [*scoped, *pretty]}
    if "list" in verbs:
        listing["get"] = operation(
            "list", "list", "*", f"list or watch objects of kind {kind}",
            parameters=_query_parameters(_LIST), produces=_WATCH_PRODUCES,
            responses=answer(listed, "200"),
        )  # fmt: skip
        if resource.namespaced:
            paths[f"{base}/{resource.plural}"] = {
                "parameters": pretty,
                "get": operation(
                    "list", "list", f"{kind}ForAllNamespaces",
                    f"list or watch objects of kind {kind}",
                    parameters=_query_parameters(_LIST), produces=_WATCH_PRODUCES,
                    responses=answer(listed, "200"),
                ),
            }  # fmt: skip
    if "create" in verbs:
        listing["post"] = operation(
            "post", "create", "*", f"create a {kind}",
            parameters=[body(own), *_query_parameters(_WRITE)],
            responses=answer(own, "200", "201", "202"),
        )  # fmt: skip
    if "deletecollection" in verbs:
        listing["delete"] = operation(
            "deletecollection", "delete", "*", f"delete collection of {kind}",
            parameters=[_delete_body(), *_query_parameters(_DELETE_COLLECTION)],
            responses=answer(status, "200"),
        )  # fmt: skip
    if len(listing) > 1:
        paths[collection] = listing

    single: JSON = {"parameters": [*named, *pretty]}
    if "get" in verbs:
        single["get"] = operation(
            "get", "read", "*", f"read the specified {kind}", responses=answer(own, "200")
        )
    if "update" in verbs:
        single["put"] = operation(
            "put", "replace", "*", f"replace the specified {kind}",
            parameters=[body(own), *_query_parameters(_WRITE)],
            responses=answer(own, "200", "201"),
        )  # fmt: skip
    if "patch" in verbs:
        single["patch"] = operation(
            "patch", "patch", "*", f"partially update the specified {kind}",
            consumes=_PATCH_CONSUMES,
            parameters=[body(f"{_META}.Patch"), *_query_parameters((*_WRITE, "force"))],
            responses=answer(own, "200", "201"),
        )  # fmt: skip
    if "delete" in verbs:
        single["delete"] = operation(
            "delete", "delete", "*", f"delete a {kind}",
            parameters=[_delete_body(), *_query_parameters(_DELETE)],
            responses=answer(own if resource.return_deleted_object else status, "200", "202"),
        )  # fmt: skip
    if len(single) > 1:
        paths[item] = single

    for subresource, enabled in (
        ("status", resource.status_subresource),
        ("scale", resource.scale_subresource),
    ):
        if not enabled:
            continue
        schema = own if subresource == "status" else "io.k8s.api.autoscaling.v1.Scale"
        title = subresource.capitalize()
        paths[f"{item}/{subresource}"] = {
            "parameters": [*named, *pretty],
            "get": operation(
                "get", "read", f"*{title}", f"read {subresource} of the specified {kind}",
                responses=answer(schema, "200"),
            ),
            "put": operation(
                "put", "replace", f"*{title}", f"replace {subresource} of the specified {kind}",
                parameters=[body(schema), *_query_parameters(_WRITE)],
                responses=answer(schema, "200", "201"),
            ),
            "patch": operation(
                "patch", "patch", f"*{title}",
                f"partially update {subresource} of the specified {kind}",
                consumes=_PATCH_CONSUMES,
                parameters=[body(f"{_META}.Patch"), *_query_parameters((*_WRITE, "force"))],
                responses=answer(schema, "200", "201"),
            ),
        }  # fmt: skip
    return paths


_CODES = {"200": "OK", "201": "Created", "202": "Accepted"}


def _delete_body() -> JSON:
    return {
        "in": "body",
        "name": "body",
        "schema": {"$ref": f"#/definitions/{_META}.DeleteOptions"},
    }


def _path_parameter(name: str, resource: ResourceType) -> JSON:
    description = (
        f"name of the {resource.kind}"
        if name == "name"
        else _parameter_descriptions().get("namespace", "")
    )
    parameter = {
        "in": "path",
        "name": name,
        "required": True,
        "type": "string",
        "uniqueItems": True,
    }
    if description:
        parameter["description"] = description
    return parameter


def _query_parameter(name: str) -> JSON:
    kind = "boolean" if name in _BOOLEAN else "integer" if name in _INTEGER else "string"
    parameter: JSON = {"in": "query", "name": name, "type": kind, "uniqueItems": True}
    description = _parameter_descriptions().get(name)
    if description:
        parameter["description"] = description
    return parameter


def _query_parameters(names: tuple[str, ...]) -> list[JSON]:
    return [_query_parameter(name) for name in names]


@functools.cache
def _parameter_descriptions() -> dict[str, str]:
    """Each query parameter's description, from the official client's API methods (generated
    from kube-apiserver's own document, so the same words); empty without the client."""
    try:
        client = importlib.import_module("kubernetes.client")
    except ImportError:
        return {}
    api = getattr(client, "CoreV1Api", None)
    out: dict[str, str] = {}
    for method in ("list", "create", "patch", "delete"):
        function = getattr(api, f"{method}_namespaced_pod", None)
        for name, description in _described(function) if function is not None else ():
            out.setdefault(name, description)
    return out


def _described(function: Any) -> Iterator[tuple[str, str]]:
    """(camelCase name, description) of a generated method's parameters: from pydantic's
    ``Annotated[..., Field(description=...)]`` (client 34 on), else from ``:param`` lines."""
    found = False
    for name, parameter in inspect.signature(function).parameters.items():
        for meta in getattr(parameter.annotation, "__metadata__", ()):
            description = getattr(meta, "description", None)
            if description:
                found = True
                yield _camel(name), description
    if found:
        return
    for match in re.finditer(r":param \w+ (\w+): (.+)", function.__doc__ or ""):
        yield _camel(match[1]), match[2].strip()


def _camel(snake: str) -> str:
    first, *rest = snake.lstrip("_").split("_")
    return first + "".join(word.capitalize() for word in rest)


# -- definitions -------------------------------------------------------------------------------
def _definition(resource: ResourceType, kind: str) -> str:
    return openapi.schema_name(resource, kind)


def _definitions(resource: ResourceType) -> JSON:
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    custom = resource.openapi_schema
    if custom is not None:
        name = _definition(resource, resource.kind)
        schema = {**_swagger_schema(dict(custom)), "x-kubernetes-group-version-kind": [gvk]}
        listed = _definition(resource, resource.list_kind)
        return {name: schema, listed: _custom_list(resource, name)}
    out: JSON = {}
    for kind in (resource.kind, resource.list_kind):
        found = openapi.kind_schemas(resource, kind)
        if found is None:
            continue
        schemas, top = found
        schemas[top] = {**schemas[top], "x-kubernetes-group-version-kind": [{**gvk, "kind": kind}]}
        out.update(schemas)
    return out


def _custom_list(resource: ResourceType, item: str) -> JSON:
    return {
        "description": f"{resource.list_kind} is a list of {resource.kind}",
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {"items": {"$ref": f"#/definitions/{item}"}, "type": "array"},
            "kind": {"type": "string"},
            "metadata": {"$ref": f"#/definitions/{_META}.ListMeta"},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": resource.group, "version": resource.version, "kind": resource.list_kind}
        ],
    }


def _shared_definitions() -> JSON:
    """What every path refers to: Status, DeleteOptions, ListMeta, Patch and Scale."""
    out: JSON = {}
    for model in ("V1Status", "V1DeleteOptions", "V1ListMeta", "V1Scale"):
        openapi.model_schemas(model, out)
    out[f"{_META}.Patch"] = {
        "description": "Patch is provided to give a concrete name and type to the Kubernetes "
        "PATCH request body.",
        "type": "object",
    }
    return out


def _swagger_schema(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _swagger_schema(v) for k, v in value.items() if k not in _NOT_IN_V2}
    if isinstance(value, list):
        return [_swagger_schema(v) for v in value]
    return value


def _v2_refs(value: Any) -> Any:
    """The v3 schemas' ``#/components/schemas/`` references, as v2 spells them."""
    if isinstance(value, dict):
        return {
            k: v.replace("#/components/schemas/", "#/definitions/")
            if k == "$ref" and isinstance(v, str)
            else _v2_refs(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_v2_refs(v) for v in value]
    return value


# -- protobuf ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _protobuf_bytes(resources: tuple[ResourceType, ...]) -> bytes:
    paths = b""
    for resource in resources:
        if "patch" not in resource.verbs:
            continue
        scope = "/namespaces/{namespace}" if resource.namespaced else ""
        path = f"{resource.path_prefix()}{scope}/{resource.plural}/{{name}}"
        gvk = f"group: {resource.group!r}\nkind: {resource.kind}\nversion: {resource.version}\n"
        extension = _pb(1, "x-kubernetes-group-version-kind") + _pb(2, _pb(2, gvk))
        parameter = _pb(4, "fieldValidation") + _pb(2, "query") + _pb(6, "string")
        item = _pb(1, _pb(2, _pb(3, parameter)))  # ParametersItem.parameter.non_body.query
        operation = _pb(8, item) + _pb(13, extension)
        paths += _pb(2, _pb(1, path) + _pb(2, _pb(8, operation)))  # NamedPathItem{name, patch}
    info = _pb(1, "Kubernetes") + _pb(2, SERVER_VERSION["gitVersion"])
    return _pb(1, "2.0") + _pb(2, info) + _pb(8, paths)


def _pb(number: int, payload: str | bytes) -> bytes:
    """One length-delimited protobuf field (strings and embedded messages are all it needs)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


__all__ = ["ACCEPTED", "JSON_TYPE", "PROTOBUF", "PROTOBUF_CONTENT_TYPE", "document", "negotiate"]
