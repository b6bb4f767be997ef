"""The schemas of the built-in kinds, from the official client's models and Kubernetes' protos.

Field validation (:mod:`kubesim.apiserver.field_validation`) and struct decoding
(:mod:`kubesim.apiserver.struct_decoding`) need to know which fields a kind has; the wire's
OpenAPI documents (:mod:`kubesim.wire.openapi`) publish the same schemas. Both come from the
``kubernetes`` package's models when it is installed (``V1Pod.openapi_types``), named as
kube-apiserver names them (``io.k8s.api.core.v1.Pod``) with the help of the message table
generated from Kubernetes' ``generated.proto`` files (``protobuf_schema.json``, which the
wire's protobuf encoding reads too: :func:`generated_messages`). Without the client no kind
is checked.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

_MODEL_PREFIX = re.compile(
    r"^(?P<group>(?:[A-Z][a-z]+)*?)V(?P<major>\d+)(?P<pre>(?:alpha|beta)\d+)?"
)


@functools.cache
def generated_messages() -> dict[str, list[list[Any]]]:
    """Every protobuf message of the built-in kinds by full name, each a list of its fields
    (number, name, type, label), as tools/gen_protobuf_schema.py generated them."""
    text = resources.files("kubesim.apiserver").joinpath("protobuf_schema.json").read_text("utf-8")
    messages: dict[str, list[list[Any]]] = json.loads(text)
    return messages


def kind_schemas(resource: ResourceType, kind: str | None = None) -> tuple[JSON, str] | None:
    """A built-in kind's schemas from the official client's models (every schema it refers
    to, by name) and the name of its own; None without the client or a model for it. ``kind``
    is another kind of the resource's group-version (its list kind); the resource's own by
    default."""
    model = model_class(resource, kind or resource.kind)
    if model is None:
        return None
    out: JSON = {}
    return out, model_schema(model, out)


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
    return model_schema(model, out)


def schema_name(resource: ResourceType, kind: str) -> str:
    """The schema name of ``kind`` (the resource's own or its list kind) in the documents:
    a custom resource's from its group, a built-in kind's from its model, which knows where
    the kind lives (``io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1...``)."""
    if resource.openapi_schema is None:
        model = model_class(resource, kind)
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


def model_class(resource: ResourceType, kind: str) -> Any:
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
    packages: dict[str, list[str]] = {}
    for full in generated_messages():
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


def model_schema(model: Any, out: JSON) -> str:
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
    return {"$ref": f"#/components/schemas/{model_schema(model, out)}"}
