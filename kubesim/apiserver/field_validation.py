"""Unknown fields in a write's body, and what ``fieldValidation`` does about them.

kube-apiserver decodes a built-in kind into its Go struct, so a field the struct lacks cannot be
stored. ``fieldValidation`` (on create, update and patch; apiserver ``handlers/rest.go``) says
what happens to it:

- ``Strict``: the request fails, 400 BadRequest, ``Pod in version "v1" cannot be handled as a
  Pod: strict decoding error: unknown field "spec.foo", unknown field "spec.bar"``. kubectl
  1.27+ sends it with its default ``--validate=strict`` when the OpenAPI document offers the
  parameter.
- ``Warn`` (also when the parameter is absent): the field is dropped and named in a
  ``Warning: 299 - "unknown field \\"spec.foo\\""`` response header.
- ``Ignore``: the field is dropped silently.

Any other value is 422 on the request's options, as apimachinery's ValidateFieldValidation has it.

The fields a kind has come from the official client's models (the schemas OpenAPI serves, see
:mod:`kubesim.apiserver.schemas`); a custom resource's from its CRD's schema, by the pruning of
:mod:`kubesim.apiserver.crd_schema` (``metadata`` included: ``unknown field "metadata.foo"``).
Kinds without a model are not checked; nor are patch bodies (the real server checks the
patched object). Requests are checked where they
enter the routes (HTTP and the in-process client transports alike); ``APIServer``'s Python
methods take what they are given.
"""

from __future__ import annotations

import functools
from typing import Any

from kubesim.apiserver import crd_schema
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.schemas import kind_schemas

JSON = dict[str, Any]

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
DIRECTIVES = (IGNORE, STRICT, WARN)


def directive(value: str | None, options_kind: str) -> str:
    """The request's ``fieldValidation``, defaulted as the apiserver does; 422 when unknown."""
    if value is None or value == "":
        return WARN
    if value not in DIRECTIVES:
        raise st.unsupported_option(options_kind, "fieldValidation", value, list(DIRECTIVES))
    return value


def check(resource: ResourceType, body: Any, mode: str) -> tuple[Any, list[str]]:
    """Apply ``mode`` to ``body``: the body to store (unknown fields dropped unless Strict
    refused it) and the ``Warning`` header values to answer with."""
    if not isinstance(body, dict):
        return body, []
    unknown: list[str] = []
    if resource.openapi_schema is not None:
        # A custom resource: pruned by the schema of the version the request names, which
        # also applies that version's defaults (kubesim.apiserver.crd_schema).
        pruned = deep_copy(body)
        unknown = crd_schema.coerce(pruned, dict(resource.openapi_schema))
    else:
        schemas = kind_schema(resource)
        if schemas is None:
            return body, []
        pruned = _walk(body, schemas[1], schemas[0], "", unknown)
    if not unknown:
        return (pruned if resource.openapi_schema is not None else body), []
    if mode == STRICT:
        fields = ", ".join(f'unknown field "{path}"' for path in unknown)
        kind, version = resource.kind, resource.api_version
        raise st.bad_request(
            f'{kind} in version "{version.rsplit("/", 1)[-1]}" cannot be handled as a {kind}: '
            f"strict decoding error: {fields}"
        )
    warnings = [] if mode == IGNORE else [st.warning(f'unknown field "{p}"') for p in unknown]
    return pruned, warnings


def kind_schema(resource: ResourceType) -> tuple[JSON, JSON] | None:
    """(every schema by name, the kind's own schema), or None when the kind is not checked."""
    if resource.openapi_schema is not None:
        return None  # a custom resource: its CRD's schema decides (see check)
    # Keyed by what names a built-in kind, not by the ResourceType: every server (one per
    # example of a campaign) has its own, and the schema is the same for all of them.
    return _builtin_kind_schema(resource.group, resource.version, resource.kind)


@functools.cache
def _builtin_kind_schema(group: str, version: str, kind: str) -> tuple[JSON, JSON] | None:
    found = kind_schemas(ResourceType(group=group, version=version, kind=kind, plural=""))
    if found is None:
        return None
    schemas, top = found
    return schemas, schemas[top]


def _walk(value: Any, schema: JSON, schemas: JSON, path: str, unknown: list[str]) -> Any:
    """``value`` without the fields ``schema`` lacks (recorded in ``unknown``, in order)."""
    ref = schema.get("$ref") or next(
        (s.get("$ref") for s in schema.get("allOf", ()) if isinstance(s, dict)), None
    )
    if ref is not None:
        schema = schemas.get(ref.rsplit("/", 1)[-1], {})
    if isinstance(value, dict):
        properties = schema.get("properties")
        if properties is not None:
            out: JSON = {}
            for key, item in value.items():
                field = f"{path}.{key}" if path else key
                if key not in properties:
                    unknown.append(field)
                    continue
                out[key] = _walk(item, properties[key], schemas, field, unknown)
            return out
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return {
                key: _walk(item, values, schemas, f"{path}[{key}]", unknown)
                for key, item in value.items()
            }
        return value  # free-form (RawExtension, IntOrString and the like)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [
            _walk(item, schema["items"], schemas, f"{path}[{index}]", unknown)
            for index, item in enumerate(value)
        ]
    return value
