"""One resource in two versions: HorizontalPodAutoscalers stored as autoscaling/v2 and served as
autoscaling/v1 too, converted as pkg/apis/autoscaling/v1/conversion.go converts them.

A v1 client sees its one metric (``targetCPUUtilizationPercentage``); whatever v1 cannot hold
travels in ``autoscaling.alpha.kubernetes.io/*`` annotations, so its read-modify-write loses
nothing a v2 client set. Both versions are one set of objects: a write in one is read, listed
and watched in the other.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim import APIServer
from kubesim.apiserver import conversion
from kubesim.wire.routes import Request, handle

V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
TARGET = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}
MERGE = "application/merge-patch+json"


def call(
    server: APIServer, method: str, path: str, body: Any = None, content_type: str = ""
) -> tuple[int, Any]:
    headers = {"Content-Type": content_type or "application/json"}
    data = b"" if body is None else orjson.dumps(body)
    response = handle(server, Request.from_target(method, path, headers, data))
    assert isinstance(response.body, bytes)
    return response.status, orjson.loads(response.body)


def v1_hpa(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 5, **spec},
    }


PODS_METRIC = {
    "type": "Pods",
    "pods": {
        "metric": {"name": "requests_per_second"},
        "target": {"type": "AverageValue", "averageValue": "100"},
    },
}
CPU_70 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
}
BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 60}}


def test_a_v1_write_is_a_v2_object_and_both_versions_list_the_same_set() -> None:
    server = APIServer(seed=1)
    status, created = call(server, "POST", V1, v1_hpa(targetCPUUtilizationPercentage=60))
    assert status == 201, created
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"]["targetCPUUtilizationPercentage"] == 60
    assert created["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    _, stored = call(server, "GET", f"{V2}/web")
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        }
    ]
    assert stored["status"] == {"desiredReplicas": 0}
    assert stored["metadata"]["uid"] == created["metadata"]["uid"]
    for path, version in ((V1, "autoscaling/v1"), (V2, "autoscaling/v2")):
        _, listed = call(server, "GET", path)
        assert (listed["kind"], listed["apiVersion"]) == ("HorizontalPodAutoscalerList", version)
        [item] = listed["items"]
        assert "apiVersion" not in item  # typed list items carry no type
        assert ("targetCPUUtilizationPercentage" in item["spec"]) == (version.endswith("v1"))
    # v1 always implied a CPU target of 80%; v2 defaults to it too.
    call(server, "POST", V1, v1_hpa("plain"))
    _, plain = call(server, "GET", f"{V2}/plain")
    assert plain["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_a_v1_read_modify_write_keeps_what_only_v2_can_say() -> None:
    server = APIServer(seed=1)
    body = {
        "metadata": {"name": "web", "annotations": {"team": "a"}},
        "spec": {
            "scaleTargetRef": TARGET,
            "maxReplicas": 5,
            "metrics": [PODS_METRIC, CPU_70],
            "behavior": BEHAVIOR,
        },
    }
    assert call(server, "POST", V2, body)[0] == 201
    _, old = call(server, "GET", f"{V1}/web")
    assert old["spec"]["targetCPUUtilizationPercentage"] == 70
    annotations = old["metadata"]["annotations"]
    assert annotations["team"] == "a"
    assert orjson.loads(annotations[conversion.METRICS_ANNOTATION]) == [
        {"type": "Pods", "pods": {"metricName": "requests_per_second", "targetAverageValue": "100"}}
    ]
    assert orjson.loads(annotations[conversion.BEHAVIOR_ANNOTATION]) == BEHAVIOR
    old["spec"]["maxReplicas"] = 9
    old["spec"]["targetCPUUtilizationPercentage"] = 50
    status, _ = call(server, "PUT", f"{V1}/web", old)
    assert status == 200
    _, new = call(server, "GET", f"{V2}/web")
    assert new["spec"]["maxReplicas"] == 9
    assert new["spec"]["metrics"] == [
        PODS_METRIC,
        {
            **CPU_70,
            "resource": {
                "name": "cpu",
                "target": {**CPU_70["resource"]["target"], "averageUtilization": 50},
            },
        },  # type: ignore[dict-item]
    ]
    assert new["spec"]["behavior"] == BEHAVIOR
    assert new["metadata"]["annotations"] == {"team": "a"}  # the round-trip ones are not stored
    # A merge patch is written against the v1 object and converted back.
    status, patched = call(server, "PATCH", f"{V1}/web", {"spec": {"minReplicas": 2}}, MERGE)
    assert (status, patched["apiVersion"]) == (200, "autoscaling/v1")
    _, after = call(server, "GET", f"{V2}/web")
    assert after["spec"]["minReplicas"] == 2
    assert after["spec"]["metrics"] == new["spec"]["metrics"]


def test_status_written_in_v1_is_v2_current_metrics() -> None:
    server = APIServer(seed=1)
    _, created = call(server, "POST", V1, v1_hpa(targetCPUUtilizationPercentage=60))
    created["status"] = {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentCPUUtilizationPercentage": 75,
    }
    status, written = call(server, "PUT", f"{V1}/web/status", created)
    assert status == 200, written
    assert written["status"]["currentCPUUtilizationPercentage"] == 75
    _, stored = call(server, "GET", f"{V2}/web")
    assert stored["status"]["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 75}}}
    ]
    assert (stored["status"]["currentReplicas"], stored["status"]["desiredReplicas"]) == (3, 4)


def test_a_v1_watch_sees_v1_objects_whatever_version_wrote_them() -> None:
    server = APIServer(seed=1, bookmark_interval=1)
    rv = server.resource_version
    call(server, "POST", V1, v1_hpa(targetCPUUtilizationPercentage=60))
    call(server, "PATCH", f"{V2}/web", {"spec": {"maxReplicas": 8}}, MERGE)
    response = handle(
        server,
        Request.from_target("GET", f"{V1}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"),
    )
    stream = response.body
    assert not isinstance(stream, bytes)
    lines = [orjson.loads(line) for line in (stream.poll() or b"").splitlines()]
    server.advance(2)  # a bookmark, once the watch has nothing else to send
    lines += [orjson.loads(line) for line in (stream.poll() or b"").splitlines()]
    stream.close()
    assert [line["type"] for line in lines] == ["ADDED", "MODIFIED", "BOOKMARK"]
    assert {line["object"]["apiVersion"] for line in lines} == {"autoscaling/v1"}
    assert lines[1]["object"]["spec"]["maxReplicas"] == 8
    assert lines[1]["object"]["spec"]["targetCPUUtilizationPercentage"] == 60


def test_bad_v1_bodies_are_400_and_the_python_api_names_the_stored_version() -> None:
    server = APIServer(seed=1)
    wrong = {**v1_hpa(), "apiVersion": "autoscaling/v2"}
    status, error = call(server, "POST", V1, wrong)
    assert status == 400
    assert "autoscaling/v2" in error["message"]
    assert "autoscaling/v1" in error["message"]
    broken = v1_hpa()
    broken["metadata"]["annotations"] = {conversion.METRICS_ANNOTATION: "not json"}
    status, error = call(server, "POST", V1, broken)
    assert status == 400
    assert conversion.METRICS_ANNOTATION in error["message"]
    view = server.lookup("autoscaling", "v1", "horizontalpodautoscalers")
    assert view is not None
    with pytest.raises(ValueError, match="autoscaling/v2"):
        server.create(view, v1_hpa())
    assert server.resource("hpa").version == "v2"


def test_discovery_lists_both_versions_and_prefers_v2() -> None:
    server = APIServer(seed=1)
    _, group = call(server, "GET", "/apis/autoscaling")
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    _, v1 = call(server, "GET", "/apis/autoscaling/v1")
    names = {r["name"] for r in v1["resources"]}
    assert {"horizontalpodautoscalers", "horizontalpodautoscalers/status"} <= names


quantities = st.sampled_from(["1", "100m", "2Gi", "750"])
names = st.sampled_from(["requests", "queue_depth", "latency"])
metric_specs = st.one_of(
    st.builds(
        lambda n, v: {
            "type": "Pods",
            "pods": {"metric": {"name": n}, "target": {"type": "AverageValue", "averageValue": v}},
        },
        names,
        quantities,
    ),
    st.builds(
        lambda n, v: {
            "type": "External",
            "external": {"metric": {"name": n}, "target": {"type": "Value", "value": v}},
        },
        names,
        quantities,
    ),
    st.builds(
        lambda u: {
            "type": "Resource",
            "resource": {
                "name": "memory",
                "target": {"type": "Utilization", "averageUtilization": u},
            },
        },
        st.integers(1, 100),
    ),
    st.builds(
        lambda v: {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "target": {"type": "AverageValue", "averageValue": v},
                "container": "app",
            },
        },
        quantities,
    ),
    st.builds(
        lambda n, v: {
            "type": "Object",
            "object": {
                "describedObject": {"kind": "Service", "name": "web", "apiVersion": "v1"},
                "target": {"type": "Value", "value": v},
                "metric": {"name": n},
            },
        },
        names,
        quantities,
    ),
)


@given(
    st.lists(metric_specs, max_size=3),
    st.none() | st.integers(1, 100),
    st.none() | st.just(BEHAVIOR),
    st.lists(
        st.builds(
            lambda t: {"type": t, "status": "True"},
            st.sampled_from(["AbleToScale", "ScalingActive"]),
        ),
        max_size=2,
    ),
)
def test_v2_to_v1_and_back_loses_nothing(
    others: list[dict[str, Any]], cpu: int | None, behavior: Any, conditions: list[Any]
) -> None:
    metrics = others + ([conversion._cpu_target(cpu)] if cpu is not None else [])
    if not metrics:
        metrics = [conversion._cpu_target(conversion.DEFAULT_CPU_UTILIZATION)]
    spec: dict[str, Any] = {
        "scaleTargetRef": TARGET,
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": metrics,
    }
    if behavior is not None:
        spec["behavior"] = behavior
    status: dict[str, Any] = {"desiredReplicas": 2}
    if conditions:
        status["conditions"] = conditions
    stored = {
        "kind": "HorizontalPodAutoscaler",
        "apiVersion": "autoscaling/v2",
        "metadata": {"name": "web"},
        "spec": spec,
        "status": status,
    }
    served = conversion.hpa_to_v1(stored)
    assert served["apiVersion"] == "autoscaling/v1"
    assert served["spec"].get("targetCPUUtilizationPercentage") == (
        cpu if cpu is not None or others else 80
    )
    back = conversion.hpa_to_v2(served)
    assert back["spec"] == spec
    assert back["status"] == status
    assert back["metadata"] == {"name": "web"}
