"""OpenAPI documents for kubectl: v3 (index, one document per group-version, schemas from the
client's models) and v2 in gnostic protobuf; byte-stable; custom resources included."""

from __future__ import annotations

import json

import pytest

from kubesim import APIServer
from kubesim.server import openapi
from kubesim.server.protobuf import _records
from kubesim.server.routes import Request, handle


def get(server: APIServer, path: str, accept: str = "application/json") -> tuple[int, bytes, str]:
    target, _, query = path.partition("?")
    response = handle(server, Request("GET", target, query, {"Accept": accept}, b""))
    assert isinstance(response.body, bytes)
    return response.status, response.body, response.content_type


def test_the_v3_index_names_a_hashed_document_per_group_version_and_they_are_stable() -> None:
    first, second = APIServer(seed=0), APIServer(seed=1)
    status, body, _ = get(first, "/openapi/v3")
    assert status == 200
    index = json.loads(body)["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1"} <= set(index)
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    status, doc, content_type = get(first, url)
    assert (status, content_type) == (200, "application/json")
    assert get(second, url)[1] == doc  # the same bytes from another server
    assert get(first, "/openapi/v3/apis/nope.example.com/v1")[0] == 404


def test_every_patch_operation_names_its_kind_and_takes_field_validation() -> None:
    server = APIServer(seed=0)
    doc = json.loads(get(server, "/openapi/v3/apis/apps/v1")[1])
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert "fieldValidation" in [p["name"] for p in patch["parameters"] if p["in"] == "query"]


def test_schemas_come_from_the_client_models_named_as_the_apiserver_names_them() -> None:
    pytest.importorskip("kubernetes")
    server = APIServer(seed=0)
    schemas = json.loads(get(server, "/openapi/v3/api/v1")[1])["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "version": "v1", "kind": "Pod"}]
    assert pod["properties"]["metadata"]["$ref"] == (
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    meta = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    assert meta["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": meta["properties"]["labels"]["description"],
    }
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["type"] == "array"


def test_a_crd_appears_with_its_own_schema() -> None:
    server = APIServer(seed=0)
    schema = {"type": "object", "properties": {"spec": {"type": "object"}}}
    server.create(
        "customresourcedefinitions",
        {
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": schema},
                    }
                ],
            },
        },
    )
    assert "apis/example.com/v1" in json.loads(get(server, "/openapi/v3")[1])["paths"]
    doc = json.loads(get(server, "/openapi/v3/apis/example.com/v1")[1])
    widget = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["properties"] == schema["properties"]


def test_v2_is_gnostic_protobuf_with_a_patch_operation_per_kind() -> None:
    server = APIServer(seed=0)
    status, body, content_type = get(server, "/openapi/v2", accept=openapi.V2_PROTOBUF)
    assert status == 200
    assert "@" not in content_type  # client-go parses it with mime.ParseMediaType
    fields = {number: value for number, _, value in _records(memoryview(body))}
    assert bytes(fields[1]) == b"2.0"
    paths = [v for n, _, v in _records(fields[8]) if n == 2]
    names = {bytes({n: v for n, _, v in _records(item)}[1]).decode() for item in paths}
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" in names
    assert b"fieldValidation" in body
    assert b"x-kubernetes-group-version-kind" in body
    refused = get(server, "/openapi/v2", accept="application/json")
    assert refused[0] == 406
    assert openapi.V2_PROTOBUF in json.loads(refused[1])["message"]
