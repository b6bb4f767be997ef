"""OpenAPI documents: v3 (index, one document per group-version, schemas from the client's
models) and v2 in gnostic protobuf (for kubectl) and as Swagger JSON; byte-stable; custom
resources included."""

from __future__ import annotations

import json
import re

import pytest

from kubesim import APIServer
from kubesim.wire import openapi_v2
from kubesim.wire.protobuf import _records
from kubesim.wire.routes import Request, handle


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


def widget_crd(schema: dict[str, object], scope: str = "Namespaced") -> dict[str, object]:
    """A one-version CRD for ``widgets.example.com`` with ``schema`` as its openAPIV3Schema."""
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    return {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [version],
        },
    }


def test_a_crd_appears_with_its_own_schema() -> None:
    server = APIServer(seed=0)
    schema = {"type": "object", "properties": {"spec": {"type": "object"}}}
    server.create("customresourcedefinitions", widget_crd(schema))
    assert "apis/example.com/v1" in json.loads(get(server, "/openapi/v3")[1])["paths"]
    doc = json.loads(get(server, "/openapi/v3/apis/example.com/v1")[1])
    widget = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["properties"] == schema["properties"]


def test_v2_is_gnostic_protobuf_with_a_patch_operation_per_kind() -> None:
    server = APIServer(seed=0)
    status, body, content_type = get(server, "/openapi/v2", accept=openapi_v2.PROTOBUF)
    assert status == 200
    assert "@" not in content_type  # client-go parses it with mime.ParseMediaType
    fields = {number: value for number, _, value in _records(memoryview(body))}
    assert bytes(fields[1]) == b"2.0"
    paths = [v for n, _, v in _records(fields[8]) if n == 2]
    names = {bytes({n: v for n, _, v in _records(item)}[1]).decode() for item in paths}
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" in names
    assert b"fieldValidation" in body
    assert b"x-kubernetes-group-version-kind" in body
    # What kubectl 1.27 and 1.28 send: protobuf first, JSON as the fallback.
    both = f"{openapi_v2.PROTOBUF}, application/json"
    assert get(server, "/openapi/v2", accept=both)[1] == body


@pytest.mark.parametrize("accept", ["application/json", "*/*", "", "text/html, */*;q=0.8"])
def test_v2_is_swagger_json_by_default(accept: str) -> None:
    status, body, content_type = get(APIServer(seed=0), "/openapi/v2", accept=accept)
    assert (status, content_type) == (200, "application/json")
    doc = json.loads(body)
    assert doc["swagger"] == "2.0"
    assert doc["info"]["title"] == "Kubernetes"


def test_v2_json_refuses_what_it_cannot_write_naming_both_encodings() -> None:
    status, body, _ = get(APIServer(seed=0), "/openapi/v2", accept="text/html")
    assert status == 406
    message = json.loads(body)["message"]
    assert openapi_v2.PROTOBUF in message
    assert "application/json" in message


def test_v2_json_names_operations_as_the_apiserver_does() -> None:
    doc = json.loads(get(APIServer(seed=0), "/openapi/v2")[1])
    paths = doc["paths"]
    services = paths["/api/v1/namespaces/{namespace}/services"]
    assert services["get"]["operationId"] == "listCoreV1NamespacedService"
    assert services["get"]["description"] == "list or watch objects of kind Service"
    assert services["get"]["x-kubernetes-action"] == "list"
    assert services["post"]["operationId"] == "createCoreV1NamespacedService"
    assert services["delete"]["operationId"] == "deleteCoreV1CollectionNamespacedService"
    assert {p["name"] for p in services["parameters"]} == {"namespace", "pretty"}
    listed = services["get"]["responses"]["200"]["schema"]["$ref"]
    assert listed == "#/definitions/io.k8s.api.core.v1.ServiceList"
    every = paths["/api/v1/services"]["get"]
    assert every["operationId"] == "listCoreV1ServiceForAllNamespaces"
    bindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}"
    assert paths[bindings]["put"]["operationId"] == "replaceRbacAuthorizationV1ClusterRoleBinding"
    assert paths[bindings]["put"]["tags"] == ["rbacAuthorization_v1"]
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["patch"]["operationId"] == "patchAppsV1NamespacedDeploymentScale"
    assert scale["patch"]["consumes"][-1] == "application/apply-patch+yaml"
    status = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"
    assert paths[status]["get"]["description"] == "read status of the specified Deployment"
    ids = [
        op["operationId"] for item in paths.values() for k, op in item.items() if k != "parameters"
    ]
    assert len(ids) == len(set(ids))
    assert "/api/v1/namespaces/{namespace}/configmaps/{name}/status" not in paths


def test_v2_json_definitions_cover_every_reference_and_carry_the_clients_words() -> None:
    pytest.importorskip("kubernetes")
    server = APIServer(seed=0)
    body = get(server, "/openapi/v2")[1]
    doc = json.loads(body)
    definitions = doc["definitions"]
    refs = set(re.findall(r'"#/definitions/([^"]+)"', body.decode()))
    assert refs <= set(definitions)
    assert "#/components/" not in body.decode()
    service_list = definitions["io.k8s.api.core.v1.ServiceList"]
    assert service_list["properties"]["items"]["description"] == "List of services"
    assert service_list["x-kubernetes-group-version-kind"] == [
        {"group": "", "version": "v1", "kind": "ServiceList"}
    ]
    # What kubectl's own test suite greps the document for (test/cmd's swagger test).
    for text in (b"list of returned", b"List of services", b"Watch for changes to the described"):
        assert text in body
    watch = {p["name"]: p for p in doc["paths"]["/api/v1/pods"]["get"]["parameters"]}["watch"]
    assert watch["type"] == "boolean"
    assert watch["description"].startswith("Watch for changes to the described resources")


def test_v2_json_follows_crds_as_they_come_and_go() -> None:
    server = APIServer(seed=0)
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "nullable": True, "properties": {}}},
    }
    server.create("customresourcedefinitions", widget_crd(schema, scope="Cluster"))
    doc = json.loads(get(server, "/openapi/v2")[1])
    widget = doc["definitions"]["com.example.v1.Widget"]
    assert widget["properties"]["spec"] == {"type": "object", "properties": {}}  # no nullable
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "version": "v1", "kind": "Widget"}
    ]
    listed = doc["paths"]["/apis/example.com/v1/widgets"]["get"]
    assert listed["operationId"] == "listExampleComV1Widget"
    assert "com.example.v1.WidgetList" in doc["definitions"]
    server.delete("customresourcedefinitions", "widgets.example.com")
    doc = json.loads(get(server, "/openapi/v2")[1])
    assert "com.example.v1.Widget" not in doc["definitions"]
    assert "/apis/example.com/v1/widgets" not in doc["paths"]
