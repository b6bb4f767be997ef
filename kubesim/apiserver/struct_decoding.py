"""Values of a shape the kind's Go struct cannot hold, and what decoding them answers.

kube-apiserver decodes every body into the kind's Go struct before anything else reads it, so a
value of the wrong shape (``"labels": "x"``, ``"containers": {}``) fails there, in the words of
the decoder that met it:

- a create or update body: Go's JSON decoder, 400 BadRequest, ``Pod in version "v1" cannot be
  handled as a Pod: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels
  of type map[string]string`` (the struct holding the field, the field's whole path);
- a JSON patch's or a merge patch's result: the same decoder's message, as 422 Invalid on the
  field ``patch`` whose value is the patched object as Go's JSON encoder writes it;
- a strategic merge patch's result: the unstructured converter's ``cannot restore map from
  string``, as 422 Invalid on ``patch`` whose value is the patch as Go's ``%v`` prints it.

Only shapes are compared (a struct or a map, a slice, a scalar), against the kind's schema from
the official client's models (:mod:`kubesim.apiserver.field_validation` reads the same); a scalar of
another scalar type (a number for a string) is not, because several Go types (quantities,
int-or-string, times) take either. Custom resources and kinds without a model are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesim.apiserver import status as st
from kubesim.apiserver.field_validation import kind_schema
from kubesim.apiserver.go_values import go_json, go_quote, go_type, go_value, json_kind
from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_SCALARS = {"string": "string", "boolean": "bool", "integer": "int64", "number": "float64"}


@dataclass(frozen=True)
class Mismatch:
    """One value the struct cannot hold: where, and what the struct has there."""

    struct: str  # the Go struct holding the field, without its package: "ObjectMeta"
    field: str  # the JSON path from the object's root, no indices: "metadata.labels"
    go_type: str  # the field's Go type: "map[string]string", "[]v1.Container", "v1.PodSpec"
    shape: str  # what the struct has there: "map", "slice", "struct" or "scalar"
    value: Any  # what the body has there

    def unmarshal_error(self) -> str:
        """encoding/json's UnmarshalTypeError."""
        return (
            f"json: cannot unmarshal {json_kind(self.value)} into Go struct field "
            f"{self.struct}.{self.field} of type {self.go_type}"
        )

    def restore_error(self) -> str:
        """runtime.DefaultUnstructuredConverter's error (converter.go's fromUnstructured)."""
        kind = _reflect_kind(self.value)
        if self.shape == "map":
            return f"cannot restore map from {kind}"
        if self.shape == "slice":
            return f"cannot restore slice from {kind}"
        if self.shape == "struct":
            return f"cannot restore struct from: {kind}"
        return f"cannot convert {go_type(self.value)} to {self.go_type}"


def find(resource: ResourceType, obj: Any, within: Any = None) -> Mismatch | None:
    """The first value of ``obj`` (in document order) the kind's struct cannot hold.

    ``within``, a merge or strategic merge patch: only the fields it names are looked at (the
    rest is the stored object, which decoded when it was written)."""
    schemas = kind_schema(resource)
    if schemas is None or not isinstance(obj, dict):
        return None
    return _walk(obj, schemas[1], schemas[0], resource.kind, (), within)


def check_body(resource: ResourceType, body: Any) -> None:
    """Refuse a create or update body as the JSON decoder does (400)."""
    mismatch = find(resource, body)
    if mismatch is not None:
        kind, version = resource.kind, resource.version
        raise st.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: '
            f"{mismatch.unmarshal_error()}"
        )


def check_patched(resource: ResourceType, patched: Any, patch: Any, patch_type: str) -> None:
    """Refuse a patch whose result does not decode (422 Invalid on ``patch``, handlers/patch.go)."""
    mismatch = find(resource, patched, patch if isinstance(patch, dict) else None)
    if mismatch is None:
        return
    if patch_type == STRATEGIC_MERGE_PATCH:
        value, detail = go_value(patch), mismatch.restore_error()
    else:
        value, detail = go_json(patched), mismatch.unmarshal_error()
    cause = {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {go_quote(value)}: {detail}",
        "field": "patch",
    }
    raise st.invalid("", "", "", [cause])


def _walk(
    value: Any, schema: JSON, schemas: JSON, struct: str, path: tuple[str, ...], within: Any
) -> Mismatch | None:
    declared = schema
    schema, name = _resolve(schema, schemas)
    if value is None:
        return None
    shape = _shape(schema)
    if shape is None:
        return None  # free-form: RawExtension, IntOrString, JSON
    fits = {
        "struct": isinstance(value, dict),
        "map": isinstance(value, dict),
        "slice": isinstance(value, list),
        "scalar": not isinstance(value, (dict, list)),
    }[shape]
    if not fits:
        return Mismatch(struct, ".".join(path), _go_type(declared, schemas), shape, value)
    if shape == "struct":
        holder = name.rsplit(".", 1)[-1] if name else struct
        properties = schema["properties"]
        named = within if isinstance(within, dict) else None
        for key, item in value.items():
            if key in properties and (named is None or key in named):
                deeper = None if named is None else named[key]
                found = _walk(item, properties[key], schemas, holder, (*path, key), deeper)
                if found is not None:
                    return found
    elif shape == "map":
        for item in value.values():
            found = _walk(item, schema["additionalProperties"], schemas, struct, path, None)
            if found is not None:
                return found
    elif shape == "slice":
        for item in value:
            found = _walk(item, schema["items"], schemas, struct, path, None)
            if found is not None:
                return found
    return None


def _resolve(schema: JSON, schemas: JSON) -> tuple[JSON, str]:
    """The schema a ``$ref`` (or an ``allOf`` of one) names, with its name; else itself."""
    ref = schema.get("$ref") or next(
        (s.get("$ref") for s in schema.get("allOf", ()) if isinstance(s, dict)), None
    )
    if ref is None:
        return schema, ""
    name = ref.rsplit("/", 1)[-1]
    return schemas.get(name, {}), name


def _shape(schema: JSON) -> str | None:
    if schema.get("properties"):
        return "struct"
    if isinstance(schema.get("additionalProperties"), dict):
        return "map"
    if isinstance(schema.get("items"), dict):
        return "slice"
    if schema.get("type") in _SCALARS and schema.get("format") not in ("date-time", "date"):
        return "scalar"
    return None  # free-form, or a Go type with its own decoding (times)


def _go_type(schema: JSON, schemas: JSON) -> str:
    """The Go type a field of ``schema`` has, as reflect prints it (``[]v1.Container``)."""
    schema, name = _resolve(schema, schemas)
    if name:
        package, _, simple = name.rpartition(".")
        return f"{package.rsplit('.', 1)[-1]}.{simple}" if package else simple
    if isinstance(schema.get("additionalProperties"), dict):
        return f"map[string]{_go_type(schema['additionalProperties'], schemas)}"
    if isinstance(schema.get("items"), dict):
        return f"[]{_go_type(schema['items'], schemas)}"
    return _SCALARS.get(schema.get("type", ""), "interface {}")


def _reflect_kind(value: Any) -> str:
    """reflect.Kind of a decoded JSON value, as the converter names it."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    return go_type(value)


__all__ = ["STRATEGIC_MERGE_PATCH", "Mismatch", "check_body", "check_patched", "find"]
