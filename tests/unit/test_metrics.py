"""The resource metrics API (``Cluster(metrics_server=True)``, on under ``kubesim serve`` with
nodes): PodMetrics for running pods only, NodeMetrics that add up their pods, selectors, 404s,
read-only, the same numbers for the same seed, and nothing served without it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS
from kubesim.cluster.metrics import NODE_BASE_CPU_NANOCORES, container_usage
from kubesim.wire.routes import Request, Response, handle

JSON = dict[str, Any]
METRICS = "/apis/metrics.k8s.io/v1beta1"


def server(seed: int = 1) -> APIServer:
    api = Cluster(seed=seed, nodes=1, metrics_server=True)
    for name, app in (("a", "web"), ("b", "db")):
        api.create(
            "pods",
            {
                "metadata": {"name": name, "labels": {"app": app}},
                "spec": {
                    "containers": [{"name": "main", "image": "x"}, {"name": "side", "image": "y"}]
                },
            },
            namespace="default",
        )
    api.advance(CONTAINER_START_SECONDS)
    api.create(
        "pods",
        {
            "metadata": {"name": "pending"},
            "spec": {"nodeName": "elsewhere", "containers": [{"name": "c", "image": "i"}]},
        },
        namespace="default",
    )
    return api


def get(api: APIServer, target: str, method: str = "GET") -> Response:
    return handle(api, Request.from_target(method, target))


def cpu(quantity: str) -> int:
    assert quantity.endswith("n")
    return int(quantity[:-1])


def test_running_pods_have_a_usage_per_container_and_pending_ones_none() -> None:
    api = server()
    listed = get(api, f"{METRICS}/namespaces/default/pods").json()
    assert listed["kind"] == "PodMetricsList"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a", "b"]
    item = listed["items"][0]
    assert item["window"] == "15s"
    assert [c["name"] for c in item["containers"]] == ["main", "side"]
    uid = api.get("pods", "a", namespace="default")["metadata"]["uid"]
    expected_cpu, expected_memory = container_usage(uid, "main")
    assert item["containers"][0]["usage"] == {
        "cpu": f"{expected_cpu}n",
        "memory": f"{expected_memory}Ki",
    }
    assert 1_000_000 <= expected_cpu <= 10_000_000  # 1 to 10 millicores
    one = get(api, f"{METRICS}/namespaces/default/pods/b").json()
    assert (one["kind"], one["metadata"]["name"]) == ("PodMetrics", "b")
    missing = get(api, f"{METRICS}/namespaces/default/pods/pending")
    assert missing.status == 404


def test_selectors_pick_pods_and_all_namespaces_lists_every_running_pod() -> None:
    api = server()
    by_label = get(api, f"{METRICS}/namespaces/default/pods?labelSelector=app%3Ddb").json()
    assert [i["metadata"]["name"] for i in by_label["items"]] == ["b"]
    by_name = get(api, f"{METRICS}/pods?fieldSelector=metadata.name%3Da").json()
    assert [i["metadata"]["name"] for i in by_name["items"]] == ["a"]
    assert len(get(api, f"{METRICS}/pods").json()["items"]) == 2


def test_a_node_uses_a_base_plus_its_running_pods() -> None:
    api = server()
    node = get(api, f"{METRICS}/nodes/node-0").json()
    pods = get(api, f"{METRICS}/pods").json()["items"]
    summed = sum(cpu(c["usage"]["cpu"]) for p in pods for c in p["containers"])
    assert cpu(node["usage"]["cpu"]) == NODE_BASE_CPU_NANOCORES + summed
    assert get(api, f"{METRICS}/nodes/node-9").status == 404


def test_the_metrics_api_is_read_only_and_absent_unless_asked_for() -> None:
    api = server()
    assert get(api, f"{METRICS}/namespaces/default/pods", "POST").status == 405
    assert get(api, f"{METRICS}/pods?watch=1").status == 405
    groups = [g["name"] for g in get(api, "/apis").json()["groups"]]
    assert "metrics.k8s.io" in groups
    plain = APIServer(seed=1)
    assert get(plain, f"{METRICS}/pods").status == 404
    assert "metrics.k8s.io" not in [g["name"] for g in get(plain, "/apis").json()["groups"]]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_same_seed_gives_the_same_numbers(seed: int) -> None:
    first = orjson.dumps(get(server(seed), f"{METRICS}/pods").json()["items"])
    assert first == orjson.dumps(get(server(seed), f"{METRICS}/pods").json()["items"])
