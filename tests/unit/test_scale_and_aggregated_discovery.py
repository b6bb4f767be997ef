"""The ``/scale`` subresource (autoscaling/v1 Scale) where the kind has one, and aggregated
discovery (apidiscovery.k8s.io v2 and v2beta1) as kubectl 1.26+ asks for it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim import APIServer
from kubesim.wire.routes import Request, Response, handle

JSON = dict[str, Any]
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
MERGE = {"Content-Type": "application/merge-patch+json"}


def call(server: APIServer, method: str, target: str, body: Any = None, **headers: str) -> Response:
    data = orjson.dumps(body) if body is not None else b""
    return handle(server, Request.from_target(method, target, headers, data))


WORKLOAD: JSON = {
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web", "tier": "front"}},
        "template": {
            "metadata": {"labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


@pytest.mark.parametrize(
    ("prefix", "plural"),
    [
        ("/apis/apps/v1", "deployments"),
        ("/apis/apps/v1", "replicasets"),
        ("/apis/apps/v1", "statefulsets"),
        ("/api/v1", "replicationcontrollers"),
    ],
)
def test_scale_gets_puts_and_patches_the_replicas(
    server: APIServer, prefix: str, plural: str
) -> None:
    body: JSON = orjson.loads(orjson.dumps(WORKLOAD))
    body["spec"]["replicas"] = 1
    if plural == "replicationcontrollers":
        body["spec"]["selector"] = {"app": "web", "tier": "front"}
    path = f"{prefix}/namespaces/default/{plural}"
    assert call(server, "POST", path, body).status == 201
    scale = call(server, "GET", f"{path}/web/scale").json()
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["metadata"]["name"] == "web"
    assert scale["spec"] == {"replicas": 1}
    assert scale["status"]["selector"] == "app=web,tier=front"
    scale["spec"]["replicas"] = 4
    put = call(server, "PUT", f"{path}/web/scale", scale)
    assert put.status == 200
    assert put.json()["spec"]["replicas"] == 4
    stale = call(server, "PUT", f"{path}/web/scale", scale)
    assert (stale.status, stale.json()["reason"]) == (409, "Conflict")
    patched = call(server, "PATCH", f"{path}/web/scale", {"spec": {"replicas": 2}}, **MERGE)
    assert patched.status == 200
    assert patched.json()["spec"]["replicas"] == 2
    parent = call(server, "GET", f"{path}/web").json()
    assert parent["spec"]["replicas"] == 2
    assert parent["metadata"]["resourceVersion"] == patched.json()["metadata"]["resourceVersion"]
    negative = call(server, "PUT", f"{path}/web/scale", {"spec": {"replicas": -1}})
    assert (negative.status, negative.json()["reason"]) == (422, "Invalid")
    assert call(server, "DELETE", f"{path}/web/scale").status == 405


def test_scale_is_404_where_the_kind_has_none(server: APIServer) -> None:
    call(server, "POST", "/apis/batch/v1/namespaces/default/jobs", {"metadata": {"name": "j"}})
    missing = call(server, "GET", "/apis/batch/v1/namespaces/default/jobs/j/scale")
    assert (missing.status, missing.json()["reason"]) == (404, "NotFound")
    call(server, "POST", "/apis/apps/v1/namespaces/default/daemonsets", WORKLOAD)
    assert (
        call(server, "GET", "/apis/apps/v1/namespaces/default/daemonsets/web/scale").status == 404
    )
    absent = call(server, "GET", "/apis/apps/v1/namespaces/default/deployments/nope/scale")
    assert (absent.status, absent.json()["reason"]) == (404, "NotFound")


def crd(scale: bool) -> JSON:
    subresources: JSON = {"status": {}}
    if scale:
        subresources["scale"] = {
            "specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.size",
            "labelSelectorPath": ".status.selector",
        }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "subresources": subresources}
            ],
        },
    }


@pytest.mark.parametrize("declared", [True, False])
def test_a_crd_serves_scale_only_when_declared_at_its_paths(
    server: APIServer, declared: bool
) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert call(server, "POST", crds, crd(scale=declared)).status == 201
    path = "/apis/example.com/v1/namespaces/default/widgets"
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    call(server, "POST", path, {**widget, "spec": {"size": 1}})
    status = {**widget, "status": {"size": 3, "selector": "app=w"}}
    assert call(server, "PUT", f"{path}/w/status", status).status == 200
    scale = call(server, "GET", f"{path}/w/scale")
    if not declared:
        assert scale.status == 404
        return
    assert scale.json()["spec"] == {"replicas": 1}
    assert scale.json()["status"] == {"replicas": 3, "selector": "app=w"}
    call(server, "PATCH", f"{path}/w/scale", {"spec": {"replicas": 5}}, **MERGE)
    assert call(server, "GET", f"{path}/w").json()["spec"]["size"] == 5


def test_aggregated_discovery_lists_every_served_resource_with_its_subresources(
    server: APIServer,
) -> None:
    apis = call(server, "GET", "/apis", Accept=AGGREGATED_V2)
    assert apis.content_type == AGGREGATED_V2
    doc = apis.json()
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    served = {
        (item["metadata"]["name"], version["version"], r["resource"]): r
        for item in doc["items"]
        for version in item["versions"]
        for r in version["resources"]
    }
    core = call(server, "GET", "/api", Accept=AGGREGATED_V2).json()["items"][0]["versions"][0]
    served.update({("", "v1", r["resource"]): r for r in core["resources"]})
    assert set(served) == {(r.group, r.version, r.plural) for r in server.resources}
    deploy = served[("apps", "v1", "deployments")]
    assert deploy["categories"] == ["all"]
    assert deploy["shortNames"] == ["deploy"]
    assert deploy["scope"] == "Namespaced"
    assert {s["subresource"] for s in deploy["subresources"]} == {"scale", "status"}
    scale = next(s for s in deploy["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert "subresources" not in served[("", "v1", "configmaps")]
    assert served[("", "v1", "namespaces")]["scope"] == "Cluster"


def test_aggregated_discovery_answers_the_version_asked_for_or_the_legacy_documents(
    server: APIServer,
) -> None:
    beta = AGGREGATED_V2.replace("v=v2", "v=v2beta1")
    both = call(server, "GET", "/apis", Accept=f"{AGGREGATED_V2},{beta},application/json")
    assert both.json()["apiVersion"] == "apidiscovery.k8s.io/v2"
    old = call(server, "GET", "/apis", Accept=f"{beta},application/json")
    assert old.content_type == beta
    assert old.json()["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    plain = call(server, "GET", "/apis", Accept="application/json")
    assert plain.json()["kind"] == "APIGroupList"
    assert call(server, "GET", "/api").json()["kind"] == "APIVersions"
    unknown = call(server, "GET", "/apis", Accept=AGGREGATED_V2.replace("v=v2", "v=v9"))
    assert unknown.json()["kind"] == "APIGroupList"


def test_legacy_discovery_lists_the_scale_subresource(server: APIServer) -> None:
    listing = call(server, "GET", "/apis/apps/v1").json()["resources"]
    names = {r["name"]: r for r in listing}
    assert names["deployments/scale"]["kind"] == "Scale"
    assert names["deployments/scale"]["group"] == "autoscaling"
    assert "daemonsets/scale" not in names
    assert "daemonsets/status" in names


def test_workload_defaults_on_create_follow_the_api_groups_defaulting(server: APIServer) -> None:
    ns = "/namespaces/default"
    sts = call(server, "POST", f"/apis/apps/v1{ns}/statefulsets", WORKLOAD).json()
    assert sts["spec"]["replicas"] == 1
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    ds = call(server, "POST", f"/apis/apps/v1{ns}/daemonsets", WORKLOAD).json()
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
    rs_body = {**WORKLOAD, "status": {"replicas": 7}}
    rs = call(server, "POST", f"/apis/apps/v1{ns}/replicasets", rs_body).json()
    assert (rs["spec"]["replicas"], rs["status"]) == (1, {"replicas": 0})  # status is the server's
    cron = call(server, "POST", f"/apis/batch/v1{ns}/cronjobs", {"metadata": {"name": "c"}}).json()
    assert cron["spec"]["concurrencyPolicy"] == "Allow"
    assert (cron["spec"]["successfulJobsHistoryLimit"], cron["spec"]["failedJobsHistoryLimit"]) == (
        3,
        1,
    )
    # A work-queue Job (parallelism alone) keeps completions unset.
    queue = {"metadata": {"name": "q"}, "spec": {"parallelism": 3}}
    job = call(server, "POST", f"/apis/batch/v1{ns}/jobs", queue).json()
    assert job["spec"]["parallelism"] == 3
    assert "completions" not in job["spec"]
    plain = call(server, "POST", f"/apis/batch/v1{ns}/jobs", {"metadata": {"name": "p"}}).json()
    assert (plain["spec"]["completions"], plain["spec"]["parallelism"]) == (1, 1)


def test_a_verb_the_kind_does_not_serve_is_405(server: APIServer) -> None:
    created = call(server, "POST", "/api/v1/componentstatuses", {"metadata": {"name": "x"}})
    assert (created.status, created.json()["reason"]) == (405, "MethodNotAllowed")
    assert call(server, "GET", "/api/v1/componentstatuses").status == 200


@pytest.mark.parametrize(
    "body",
    [
        {"spec": 5},
        {"spec": {"replicas": "3"}},
        {"spec": {"replicas": True}},
        {"spec": {"replicas": 1.5}},
        {"metadata": "x"},
        {"kind": "Deployment", "spec": {"replicas": 1}},
    ],
)
def test_a_scale_body_of_the_wrong_shape_is_400(server: APIServer, body: JSON) -> None:
    call(server, "POST", "/apis/apps/v1/namespaces/default/deployments", WORKLOAD)
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    for method, headers in (("PUT", {}), ("PATCH", MERGE)):
        response = call(server, method, path, body, **headers)
        assert (response.status, response.json()["reason"]) == (400, "BadRequest"), (method, body)
    assert call(server, "GET", path).json()["spec"] == {"replicas": 1}


# Integers within 64 bits: orjson, which encodes the request here, refuses larger ones.
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["spec", "replicas", "metadata", "kind"]), children)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, database=None)
@given(body=_json_values, method=st.sampled_from(["PUT", "PATCH"]))
def test_any_scale_body_gets_a_status_and_never_a_500(body: Any, method: str) -> None:
    server = APIServer(seed=0)
    call(server, "POST", "/apis/apps/v1/namespaces/default/deployments", WORKLOAD)
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    response = call(server, method, path, body, **(MERGE if method == "PATCH" else {}))
    assert response.status in (200, 400, 409, 415, 422), response.json()
    if response.status != 200:
        assert response.json()["kind"] == "Status"
