"""A custom resource against its CRD's schema (kubesim.apiserver.crd_schema): pruned, defaulted
and validated as apiextensions-apiserver does, with its messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver import crd_schema
from kubesim.apiserver import status as st
from kubesim.apiserver.go_values import go_float

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "size": {"type": "string", "enum": ["small", "large"]},
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1.5},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {
                    "type": "array",
                    "maxItems": 2,
                    "uniqueItems": True,
                    "items": {"type": "string"},
                },
                "env": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "value": {"type": "string", "default": "unset"},
                        },
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {}}},
                },
                "note": {"type": "string", "nullable": True},
                "mode": {"type": "string"},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def widget(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
        **extra,
    }


# -- pruning ------------------------------------------------------------------------------


def test_pruning_drops_what_the_schema_does_not_declare_and_names_each_path() -> None:
    obj = widget(
        {
            "size": "small",
            "extra": 1,
            "env": [{"name": "A", "junk": True}],
            "labels": {"a": "b"},
            "free": {"anything": {"goes": [1]}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}, "spec": {"y": 2}},
        },
        top=1,
    )
    obj["metadata"]["bogus"] = "field"
    unknown = crd_schema.coerce(obj, SCHEMA)
    assert unknown == [
        "metadata.bogus",
        "spec.env[0].junk",
        "spec.extra",
        "spec.template.spec.y",
        "top",
    ]
    spec = obj["spec"]
    assert "extra" not in spec
    assert "top" not in obj
    assert "bogus" not in obj["metadata"]
    assert spec["env"] == [{"name": "A", "value": "unset"}]
    assert spec["labels"] == {"a": "b"}  # additionalProperties keep every key
    assert spec["free"] == {"anything": {"goes": [1]}}  # preserved unknown fields
    # An embedded resource keeps its apiVersion, kind and metadata.
    assert spec["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}, "spec": {}}


def test_nulls_the_schema_does_not_allow_are_dropped_unless_defaulted() -> None:
    obj = widget({"size": "small", "mode": None, "note": None, "replicas": None})
    assert crd_schema.coerce(obj, SCHEMA) == []
    # mode: not nullable, no default: dropped; note: nullable: kept; replicas: defaulted.
    assert obj["spec"] == {"size": "small", "note": None, "replicas": 1}


# -- defaulting ---------------------------------------------------------------------------


def test_defaults_fill_what_is_absent_and_leave_what_was_sent() -> None:
    obj = widget({"size": "large", "env": [{"name": "A"}, {"name": "B", "value": "b"}]})
    crd_schema.coerce(obj, SCHEMA)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["env"] == [{"name": "A", "value": "unset"}, {"name": "B", "value": "b"}]
    sent = widget({"size": "large", "replicas": 7})
    crd_schema.coerce(sent, SCHEMA)
    assert sent["spec"]["replicas"] == 7
    # A default is copied: two objects never share it.
    schema = {"type": "object", "properties": {"spec": {"type": "object", "default": {"a": []}}}}
    first, second = {"metadata": {}}, {"metadata": {}}
    crd_schema.coerce(first, schema)
    crd_schema.coerce(second, schema)
    first["spec"]["a"].append(1)
    assert second["spec"] == {"a": []}
    assert schema["properties"]["spec"]["default"] == {"a": []}


# -- validation ---------------------------------------------------------------------------


def causes(spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (c["field"], c["reason"], c["message"]) for c in crd_schema.validate(widget(spec), SCHEMA)
    ]


def test_a_valid_object_has_no_causes() -> None:
    assert causes({"size": "small", "replicas": 3, "ratio": 1.0, "port": "http"}) == []
    assert causes({"size": "small", "port": 8080, "replicas": 2.0}) == []  # an integral number


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        (
            {"replicas": "3"},
            (
                "spec.replicas",
                "FieldValueTypeInvalid",
                'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
            ),
        ),
        (
            {"replicas": 0},
            (
                "spec.replicas",
                "FieldValueInvalid",
                "Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            ),
        ),
        (
            {"replicas": 11},
            (
                "spec.replicas",
                "FieldValueInvalid",
                "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            ),
        ),
        (
            {"ratio": 1.5},
            (
                "spec.ratio",
                "FieldValueInvalid",
                "Invalid value: 1.5: spec.ratio in body should be less than 1.5",
            ),
        ),
        (
            {"size": "huge"},
            (
                "spec.size",
                "FieldValueNotSupported",
                'Unsupported value: "huge": supported values: "small", "large"',
            ),
        ),
        (
            {"name": "toolong"},
            ("spec.name", "FieldValueTooLong", "Too long: may not be more than 5 bytes"),
        ),
        (
            {"name": "a"},
            (
                "spec.name",
                "FieldValueInvalid",
                'Invalid value: "a": spec.name in body should be at least 2 chars long',
            ),
        ),
        (
            {"name": "AB"},
            (
                "spec.name",
                "FieldValueInvalid",
                "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'",
            ),
        ),
        (
            {"port": True},
            (
                "spec.port",
                "FieldValueTypeInvalid",
                'Invalid value: "boolean": spec.port in body must be of type integer,string: '
                '"boolean"',
            ),
        ),
        (
            {"tags": ["a", "b", "c"]},
            ("spec.tags", "FieldValueTooMany", "Too many: 3: must have at most 2 items"),
        ),
        (
            {"tags": ["a", "a"]},
            (
                "spec.tags",
                "FieldValueInvalid",
                'Invalid value: []interface {}{"a", "a"}: spec.tags in body shouldn\'t contain '
                "duplicates",
            ),
        ),
        (
            {"tags": [1]},
            (
                "spec.tags[0]",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": spec.tags[0] in body must be of type string: "integer"',
            ),
        ),
        (
            {"labels": {"a": 1}},
            (
                "spec.labels.a",
                "FieldValueTypeInvalid",
                'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
            ),
        ),
        (
            {"mode": None},
            (
                "spec.mode",
                "FieldValueTypeInvalid",
                'Invalid value: "null": spec.mode in body must be of type string: "null"',
            ),
        ),
    ],
)
def test_each_failure_reads_as_the_api_servers(
    spec: dict[str, Any], cause: tuple[str, str, str]
) -> None:
    assert causes({"size": "small", **spec}) == [cause]


def test_a_missing_required_field_and_several_failures_are_all_reported() -> None:
    assert causes({"replicas": "x", "name": "toolong"}) == [
        ("spec.name", "FieldValueTooLong", "Too long: may not be more than 5 bytes"),
        (
            "spec.replicas",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        ),
        ("spec.size", "FieldValueRequired", "Required value"),
    ]


def test_composition_and_closed_objects() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "a": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]},
                    "b": {"not": {"type": "string", "enum": ["no"]}},
                },
            }
        },
    }
    obj = {"metadata": {"name": "w"}, "spec": {"a": "xy", "b": "no", "c": 1}}
    got = [(c["field"], c["message"]) for c in crd_schema.validate(obj, schema)]
    assert got == [
        ("spec", 'Invalid value: "c": spec.c in body is a forbidden property'),
        ("<nil>", 'Invalid value: "": "spec.a" must validate at least one schema (anyOf)'),
        ("spec.a", "Too long: may not be more than 1 bytes"),
        ("<nil>", 'Invalid value: "": "spec.b" must not validate the schema (not)'),
    ]


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (1, "1"),
        (1.5, "1.5"),
        (100000, "100000"),
        (1e6, "1e+06"),
        (1.5e6, "1.5e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.25, "-2.25"),
        (123456789.0, "1.23456789e+08"),
    ],
)
def test_limits_print_as_go_prints_a_float64(value: float, printed: str) -> None:
    assert go_float(value) == printed


# -- through the server -------------------------------------------------------------------


def crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


@pytest.fixture
def server() -> APIServer:
    server = APIServer()
    server.create("customresourcedefinitions", crd(SCHEMA))
    return server


def test_the_server_stores_a_custom_resource_pruned_and_defaulted(server: APIServer) -> None:
    body = widget({"size": "small", "extra": True}, top=1)
    sent = copy.deepcopy(body)
    created = server.create("widgets", body, namespace="default")
    assert body == sent  # the caller's body is not pruned in place
    assert created["spec"] == {"size": "small", "replicas": 1}
    assert "top" not in created
    assert server.get("widgets", "w", namespace="default")["spec"] == created["spec"]
    # An update and a patch are pruned and defaulted too.
    created["spec"] = {"size": "large", "more": 1}
    updated = server.update("widgets", created, namespace="default")
    assert updated["spec"] == {"size": "large", "replicas": 1}
    patched = server.patch(
        "widgets", "w", {"spec": {"junk": 1, "replicas": 4}}, namespace="default"
    )
    assert patched["spec"] == {"size": "large", "replicas": 4}
    # So is a status write.
    status = server.patch(
        "widgets",
        "w",
        {"status": {"ready": True, "phase": "Up"}},
        namespace="default",
        subresource="status",
    )
    assert status["status"] == {"ready": True}


def test_the_server_refuses_an_invalid_custom_resource_with_the_causes(server: APIServer) -> None:
    with pytest.raises(st.StatusError) as refused:
        server.create("widgets", widget({"replicas": 0}), namespace="default")
    status = refused.value.status
    assert refused.value.code == 422
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Widget.example.com "w" is invalid: [spec.replicas: Invalid value: 0: spec.replicas in '
        "body should be greater than or equal to 1, spec.size: Required value]"
    )
    assert server.list("widgets") == []
    server.create("widgets", widget({"size": "small"}), namespace="default")
    with pytest.raises(st.StatusError) as refused:
        server.patch("widgets", "w", {"spec": {"size": "huge"}}, namespace="default")
    assert refused.value.code == 422
    assert server.get("widgets", "w", namespace="default")["spec"]["size"] == "small"
    with pytest.raises(st.StatusError) as refused:
        server.patch(
            "widgets", "w", {"status": {"ready": "yes"}}, namespace="default", subresource="status"
        )
    assert refused.value.status["details"]["causes"][0]["field"] == "status.ready"


@pytest.mark.parametrize("status_subresource", [True, False])
def test_any_change_but_metadata_bumps_a_custom_resources_generation(
    status_subresource: bool,
) -> None:
    server = APIServer()
    definition = crd({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    if not status_subresource:
        del definition["spec"]["versions"][0]["subresources"]
    server.create("customresourcedefinitions", definition)
    server.create("widgets", {"metadata": {"name": "w"}, "data": {"a": "1"}}, namespace="default")

    def write(change: dict[str, Any]) -> int:
        obj = server.get("widgets", "w", namespace="default")
        obj.update(change)
        generation: int = server.update("widgets", obj, namespace="default")["metadata"][
            "generation"
        ]
        return generation

    assert write({"data": {"a": "2"}}) == 2  # a top-level field other than spec
    assert (
        write(
            {
                "metadata": {
                    **server.get("widgets", "w", namespace="default")["metadata"],
                    "labels": {"x": "y"},
                }
            }
        )
        == 2
    )
    # status: ignored on the main resource with the subresource; content without it.
    assert write({"status": {"ready": True}}) == (2 if status_subresource else 3)


@pytest.mark.parametrize(
    ("format_name", "good", "bad"),
    [
        (
            "date-time",
            ["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.123+01:00"],
            ["yesterday", "2024-01-02", "2024-01-02T25:00:00Z"],
        ),
        ("date", ["2024-02-29"], ["2023-02-29", "24-01-01"]),
        (
            "uuid",
            ["0C2BD3A1-9F7A-4D2A-8D3B-2F8F3B1B2C3D", "0c2bd3a19f7a4d2a8d3b2f8f3b1b2c3d"],
            ["0c2bd3a1"],
        ),
        (
            "uuid4",
            ["0c2bd3a1-9f7a-4d2a-8d3b-2f8f3b1b2c3d"],
            ["0c2bd3a1-9f7a-3d2a-8d3b-2f8f3b1b2c3d"],
        ),
        ("byte", ["aGVsbG8="], ["hello!", "aGVsbG8"]),
        ("ipv4", ["10.0.0.1"], ["10.0.0", "::1"]),
        ("ipv6", ["::1", "fe80::1"], ["10.0.0.1"]),
        ("cidr", ["10.0.0.0/8", "fd00::/64"], ["10.0.0.1"]),
        ("mac", ["00:1a:2b:3c:4d:5e"], ["00:1a:2b"]),
        ("hostname", ["example.com", "node-1"], ["-bad-.com", "a..b"]),
        ("duration", ["1h30m", "3 days"], ["soon"]),
        ("int32", ["anything goes: the server strips the format"], []),
        ("password", ["*"], []),
    ],
)
def test_a_string_is_held_to_the_format_the_api_server_keeps(
    format_name: str, good: list[str], bad: list[str]
) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": format_name}}}
    for value in good:
        assert crd_schema.validate({"v": value}, schema) == [], value
    for value in bad:
        (cause,) = crd_schema.validate({"v": value}, schema)
        assert cause == {
            "reason": "FieldValueTypeInvalid",
            "message": f'Invalid value: "{value}": v in body must be of type {format_name}: '
            f'"{value}"',
            "field": "v",
        }
