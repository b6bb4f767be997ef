"""A custom resource against its CRD's schema: pruned, defaulted and validated as
apiextensions-apiserver does it.

A CustomResourceDefinition's ``openAPIV3Schema`` is not documentation: the API server applies
it to every write of the resource, and operators' tests rely on what it does. kubesim does, for
the schema of the version stored (:func:`coerce`, then :func:`validate`):

- **Pruning** (``pkg/apiserver/schema/pruning``): a field the schema does not declare is
  dropped: an object's keys not in its ``properties`` (unless it has ``additionalProperties``,
  whose schema then applies to every key), recursively through ``items``; at the root, and in
  an ``x-kubernetes-embedded-resource``, ``apiVersion``, ``kind`` and ``metadata`` are kept;
  under ``x-kubernetes-preserve-unknown-fields: true`` unknown keys stay (declared ones are
  still pruned inside). ``metadata`` keeps only ObjectMeta's fields. A ``null`` the schema
  does not allow (not ``nullable``) and has no ``default`` for is dropped as well. The paths
  dropped are returned, sorted, for ``fieldValidation`` (``unknown field "spec.foo"``).
- **Defaulting** (``pkg/apiserver/schema/defaulting``), after pruning: a property with a
  ``default`` that is absent (or a ``null`` the schema does not allow) gets a copy of it; then
  each present value is defaulted by its own schema, an array's items by ``items``, a map's
  values by ``additionalProperties``.
- **Validation** (kube-openapi's validator, as ``ValidateCustomResource`` turns its results into
  field errors): ``type`` (``nullable``, ``x-kubernetes-int-or-string``), ``enum``, ``minimum``
  and ``maximum`` (``exclusive*``), ``multipleOf``, ``minLength``/``maxLength``, ``pattern``,
  ``minItems``/``maxItems``, ``uniqueItems``, ``minProperties``/``maxProperties``,
  ``required``, ``additionalProperties: false``, ``allOf``/``anyOf``/``oneOf``/``not``, and the
  string ``format``s the API server keeps (:mod:`kubesim.apiserver.crd_formats`). The
  causes read as the API server's, e.g. ``spec.replicas: Invalid value: "string":
  spec.replicas in body must be of type integer: "string"``, ``spec.size: Unsupported value:
  "huge": supported values: "small", "large"``, ``spec.name: Too long: may not be more than 5
  bytes``. Properties are visited in name order (Go visits its map at random, so the real
  order of several causes varies).

Not modelled: the ``x-kubernetes-validations`` CEL rules, list-type and map-type uniqueness
(``x-kubernetes-list-type``), ratcheting of unchanged invalid values on update, and the
schemas of versions other than the stored one.
"""

from __future__ import annotations

import copy
import math
import re
from functools import lru_cache
from typing import Any

from kubesim.apiserver import crd_formats
from kubesim.apiserver.encoding import METADATA_ORDER
from kubesim.apiserver.go_values import go_float, go_json, go_quote, go_syntax, go_value

JSON = dict[str, Any]

# ObjectMeta's JSON fields: anything else under metadata is dropped as unknown.
OBJECT_META_FIELDS = frozenset(METADATA_ORDER)
_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_EMBEDDED = "x-kubernetes-embedded-resource"
_INT_OR_STRING = "x-kubernetes-int-or-string"


# -- pruning and defaulting ---------------------------------------------------------------


def coerce(obj: JSON, schema: JSON) -> list[str]:
    """Prune ``obj`` (a whole custom resource) by ``schema`` in place, drop the nulls it does
    not allow, then apply its defaults. Returns the dropped fields' paths, sorted."""
    unknown: list[str] = []
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in [k for k in meta if k not in OBJECT_META_FIELDS]:
            del meta[key]
            unknown.append(f"metadata.{key}")
    _prune(obj, schema, "", unknown, embedded=True)
    _prune_nulls(obj, schema)
    _default(obj, schema)
    return sorted(unknown)


def _properties(schema: JSON | None) -> JSON:
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _additional(schema: JSON | None) -> JSON | None:
    """The schema of an object's other keys: ``additionalProperties`` as a schema (``true``
    allows anything: an empty schema)."""
    if not isinstance(schema, dict):
        return None
    extra = schema.get("additionalProperties")
    if extra is True:
        return {_PRESERVE: True}
    return extra if isinstance(extra, dict) else None


def _items(schema: JSON | None) -> JSON | None:
    if not isinstance(schema, dict):
        return None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def _path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _prune(
    value: Any, schema: JSON | None, path: str, unknown: list[str], *, embedded: bool
) -> None:
    preserve = isinstance(schema, dict) and schema.get(_PRESERVE) is True
    if isinstance(value, dict):
        if schema is None:
            for key in list(value):
                unknown.append(_path(path, key))
                del value[key]
            return
        properties, extra = _properties(schema), _additional(schema)
        embedded = embedded or schema.get(_EMBEDDED) is True
        for key in list(value):
            if embedded and key in _META_FIELDS:
                continue
            if key in properties:
                _prune(value[key], properties[key], _path(path, key), unknown, embedded=False)
            elif extra is not None:
                _prune(value[key], extra, _path(path, key), unknown, embedded=False)
            elif not preserve:
                unknown.append(_path(path, key))
                del value[key]
    elif isinstance(value, list):
        items = _items(schema)
        if schema is not None and items is None and preserve:
            return
        for index, item in enumerate(value):
            _prune(item, items, f"{path}[{index}]", unknown, embedded=False)


def _allows_null(schema: JSON | None) -> bool:
    return schema is None or schema.get("nullable") is True


def _field_schema(schema: JSON | None, key: str) -> JSON | None:
    properties = _properties(schema)
    if key in properties:
        prop: JSON | None = properties[key]
        return prop
    return _additional(schema)


def _prune_nulls(value: Any, schema: JSON | None) -> None:
    """PruneNonNullableNullsWithoutDefaults."""
    if isinstance(value, dict):
        for key in list(value):
            sub = _field_schema(schema, key)
            if value[key] is None and not _allows_null(sub) and "default" not in (sub or {}):
                del value[key]
            else:
                _prune_nulls(value[key], sub)
    elif isinstance(value, list):
        items = _items(schema)
        for item in value:
            _prune_nulls(item, items)


def _default(value: Any, schema: JSON | None) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        for key, prop in _properties(schema).items():
            if not isinstance(prop, dict) or prop.get("default") is None:
                continue  # a null default is none (Default.Object == nil)
            if key not in value or (value[key] is None and not _allows_null(prop)):
                value[key] = copy.deepcopy(prop["default"])
        properties, extra = _properties(schema), _additional(schema)
        for key in value:
            if key in properties:
                _default(value[key], properties[key])
            elif extra is not None:
                if value[key] is None and not _allows_null(extra) and "default" in extra:
                    value[key] = copy.deepcopy(extra["default"])
                _default(value[key], extra)
    elif isinstance(value, list):
        items = _items(schema)
        if items is None:
            return
        for index, item in enumerate(value):
            if item is None and not _allows_null(items) and "default" in items:
                value[index] = copy.deepcopy(items["default"])
            _default(value[index], items)


# -- validation ---------------------------------------------------------------------------


class _Failure:
    """One kube-openapi validation error: its code, the validator's path, the value it
    reports, and its message."""

    __slots__ = ("code", "detail", "limit", "path", "value", "values")

    def __init__(
        self,
        code: str,
        path: str,
        detail: str,
        value: Any = "",
        *,
        limit: int = -1,
        values: list[Any] | None = None,
    ) -> None:
        self.code, self.path, self.detail, self.value = code, path, detail, value
        self.limit, self.values = limit, values or []


def validate(obj: JSON, schema: JSON) -> list[JSON]:
    """The field causes ``obj`` fails ``schema`` with, as the API server words them."""
    failures: list[_Failure] = []
    _validate(obj, schema, "", failures)
    return [_cause(failure) for failure in failures]


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _types(schema: JSON) -> list[str]:
    if schema.get(_INT_OR_STRING) is True:
        return ["integer", "string"]
    declared = schema.get("type")
    if isinstance(declared, str) and declared:
        return [declared]
    if isinstance(declared, list):
        return [str(t) for t in declared]
    return []


def _type_fits(value: Any, types: list[str]) -> bool:
    actual = _json_type(value)
    if actual in types:
        return True
    if actual == "integer" and "number" in types:
        return True
    return actual == "number" and "integer" in types and float(value).is_integer()


def _validate(value: Any, schema: JSON, path: str, failures: list[_Failure]) -> None:
    """kube-openapi's SchemaValidator.Validate: every validator that applies to the value, in
    its order (type, the composition keywords, string, number, array, enum, object)."""
    types = _types(schema)
    if value is None:
        if types and "null" not in types and schema.get("nullable") is not True:
            failures.append(_type_failure(path, types, "null"))
        _validate_enum(value, schema, path, failures)
        return
    if types and not _type_fits(value, types):
        failures.append(_type_failure(path, types, _json_type(value)))
    _validate_composition(value, schema, path, failures)
    if isinstance(value, str):
        _validate_string(value, schema, path, failures)
        declared = schema.get("format")
        if isinstance(declared, str) and crd_formats.fails(declared, value):
            # InvalidType with the format's name and the string itself.
            detail = f"{path} in body must be of type {declared}: {go_quote(value)}"
            failures.append(_Failure("type", path, detail, value))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, schema, path, failures)
    elif isinstance(value, list):
        _validate_array(value, schema, path, failures)
    _validate_enum(value, schema, path, failures)
    if isinstance(value, dict):
        _validate_object(value, schema, path, failures)


def _type_failure(path: str, types: list[str], actual: str) -> _Failure:
    detail = f"{path} in body must be of type {','.join(types)}: {go_quote(actual)}"
    return _Failure("type", path, detail, actual)


def _validate_composition(value: Any, schema: JSON, path: str, failures: list[_Failure]) -> None:
    def run(sub: Any) -> list[_Failure]:
        found: list[_Failure] = []
        if isinstance(sub, dict):
            _validate(value, sub, path, found)
        return found

    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        results = [run(sub) for sub in any_of]
        if all(results):
            failures.append(
                _composite(f"{go_quote(path)} must validate at least one schema (anyOf)")
            )
            failures.extend(_fewest(results))
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        results = [run(sub) for sub in one_of]
        valid = sum(1 for r in results if not r)
        if valid != 1:
            found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            failures.append(
                _composite(
                    f"{go_quote(path)} must validate one and only one schema (oneOf). {found}"
                )
            )
            if valid == 0:
                failures.extend(_fewest(results))
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        results = [run(sub) for sub in all_of]
        for result in results:
            failures.extend(result)
        valid = sum(1 for r in results if not r)
        if valid != len(all_of):
            none = ". None validated" if valid == 0 else ""
            failures.append(
                _composite(f"{go_quote(path)} must validate all the schemas (allOf){none}")
            )
    not_schema = schema.get("not")
    if isinstance(not_schema, dict) and not run(not_schema):
        failures.append(_composite(f"{go_quote(path)} must not validate the schema (not)"))


def _fewest(results: list[list[_Failure]]) -> list[_Failure]:
    """The failed alternative that came closest, whose failures are reported. kube-openapi
    keeps the one that passed the most checks: an alternative of the value's own type first,
    then the one with the fewest failures."""
    return sorted(results, key=lambda found: (found[0].code == "type", len(found)))[0]


def _composite(detail: str) -> _Failure:
    """An error kube-openapi does not attach to a field: reported on the nil path."""
    return _Failure("composite", "", detail)


def _validate_string(value: str, schema: JSON, path: str, failures: list[_Failure]) -> None:
    max_length, min_length = schema.get("maxLength"), schema.get("minLength")
    length = len(value)  # kube-openapi counts runes, as Python counts code points
    if isinstance(max_length, int) and length > max_length:
        detail = f"{path} in body should be at most {max_length} chars long"
        failures.append(_Failure("tooLong", path, detail, value, limit=max_length))
    if isinstance(min_length, int) and length < min_length:
        detail = f"{path} in body should be at least {min_length} chars long"
        failures.append(_Failure("invalid", path, detail, value))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and _search(pattern, value) is False:
        detail = f"{path} in body should match '{pattern}'"
        failures.append(_Failure("invalid", path, detail, value))


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # the CRD's validation refuses such a pattern; nothing to match here


def _search(pattern: str, value: str) -> bool | None:
    compiled = _compiled(pattern)
    return None if compiled is None else compiled.search(value) is not None


def _validate_number(value: float, schema: JSON, path: str, failures: list[_Failure]) -> None:
    multiple = schema.get("multipleOf")
    if isinstance(multiple, (int, float)) and not isinstance(multiple, bool) and multiple > 0:
        quotient = value / multiple
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            detail = f"{path} in body should be a multiple of {go_float(multiple)}"
            failures.append(_Failure("invalid", path, detail, value))
    maximum = schema.get("maximum")
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool):
        exclusive = schema.get("exclusiveMaximum") is True
        if value > maximum or (exclusive and value == maximum):
            relation = "less than" if exclusive else "less than or equal to"
            detail = f"{path} in body should be {relation} {go_float(maximum)}"
            failures.append(_Failure("invalid", path, detail, value))
    minimum = schema.get("minimum")
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        exclusive = schema.get("exclusiveMinimum") is True
        if value < minimum or (exclusive and value == minimum):
            relation = "greater than" if exclusive else "greater than or equal to"
            detail = f"{path} in body should be {relation} {go_float(minimum)}"
            failures.append(_Failure("invalid", path, detail, value))


def _validate_array(value: list[Any], schema: JSON, path: str, failures: list[_Failure]) -> None:
    items = _items(schema)
    if items is not None:
        for index, item in enumerate(value):
            _validate(item, items, f"{path}[{index}]", failures)
    size = len(value)
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if isinstance(min_items, int) and size < min_items:
        detail = f"{path} in body should have at least {min_items} items"
        failures.append(_Failure("invalid", path, detail, size))
    if isinstance(max_items, int) and size > max_items:
        detail = f"{path} in body should have at most {max_items} items"
        failures.append(_Failure("tooMany", path, detail, size, limit=max_items))
    if schema.get("uniqueItems") is True:
        seen: list[Any] = []
        for item in value:
            if item in seen:
                detail = f"{path} in body shouldn't contain duplicates"
                failures.append(_Failure("invalid", path, detail, value))
                break
            seen.append(item)


def _validate_enum(value: Any, schema: JSON, path: str, failures: list[_Failure]) -> None:
    allowed = schema.get("enum")
    if not isinstance(allowed, list) or not allowed:
        return
    if any(value == option and type(value) is type(option) for option in allowed) or any(
        _type_fits(value, ["number"]) and _type_fits(option, ["number"]) and value == option
        for option in allowed
    ):
        return
    detail = f"{path} in body should be one of [{' '.join(go_value(v) for v in allowed)}]"
    failures.append(_Failure("enum", path, detail, value, values=allowed))


def _validate_object(value: JSON, schema: JSON, path: str, failures: list[_Failure]) -> None:
    count = len(value)
    min_properties, max_properties = schema.get("minProperties"), schema.get("maxProperties")
    if isinstance(min_properties, int) and count < min_properties:
        detail = f"{path} in body should have at least {min_properties} properties"
        failures.append(_Failure("invalid", path, detail, count))
    if isinstance(max_properties, int) and count > max_properties:
        detail = f"{path} in body should have at most {max_properties} properties"
        failures.append(_Failure("tooMany", path, detail, count, limit=max_properties))
    properties = _properties(schema)
    extra = schema.get("additionalProperties")
    if extra is False:
        for key in sorted(value):
            if key not in properties:
                detail = f"{path}.{key} in body is a forbidden property"
                failures.append(_Failure("invalid", path, detail, key))
    elif isinstance(extra, dict):
        for key in sorted(value):
            if key not in properties:
                _validate(value[key], extra, f"{path}.{key}", failures)
    for key in sorted(properties):
        if key in value and isinstance(properties[key], dict):
            _validate(value[key], properties[key], _path(path, key), failures)
    required = schema.get("required")
    for key in required if isinstance(required, list) else []:
        if key not in value:
            failures.append(_Failure("required", f"{path}.{key}", ""))


def _cause(failure: _Failure) -> JSON:
    """kubeOpenAPIResultToFieldErrors: the field error each kind of failure becomes."""
    field = failure.path.removeprefix(".") if failure.path not in ("", ".") else "<nil>"
    if failure.code == "required":
        return {"reason": "FieldValueRequired", "message": "Required value", "field": field}
    if failure.code == "enum":
        values = ", ".join(
            go_quote(v if isinstance(v, str) else go_json(v)) for v in failure.values
        )
        message = f"Unsupported value: {_body_value(failure.value)}: supported values: {values}"
        return {"reason": "FieldValueNotSupported", "message": message, "field": field}
    if failure.code == "tooLong":
        message = f"Too long: may not be more than {failure.limit} bytes"
        return {"reason": "FieldValueTooLong", "message": message, "field": field}
    if failure.code == "tooMany":
        message = f"Too many: {failure.value}: must have at most {failure.limit} items"
        return {"reason": "FieldValueTooMany", "message": message, "field": field}
    reason = "FieldValueTypeInvalid" if failure.code == "type" else "FieldValueInvalid"
    message = f"Invalid value: {_body_value(failure.value)}: {failure.detail}"
    return {"reason": reason, "message": message, "field": field}


def _body_value(value: Any) -> str:
    """How field.Error's ErrorBody prints a bad value: strings quoted, numbers and booleans
    with %v, lists and maps in Go syntax (%#v)."""
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, (list, dict)):
        return go_syntax(value)
    return go_value(value)


__all__ = ["OBJECT_META_FIELDS", "coerce", "validate"]
