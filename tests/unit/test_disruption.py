"""PodDisruptionBudgets: the disruption controller's status and the eviction subresource, as
``kubectl drain`` and clients' ``evict`` use them (``Cluster(nodes=N, controllers=True)``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS
from kubesim.wire.routes import Request, Response, handle
from tests.unit.test_workloads import deployment

JSON = dict[str, Any]
NS = "default"


def budget(name: str = "web", selector: str = "web", **spec: Any) -> JSON:
    return {
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": selector}}, **spec},
    }


def evict(server: APIServer, pod: str, **body: Any) -> Response:
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}, **body}
    path = f"/api/v1/namespaces/{NS}/pods/{pod}/eviction"
    return handle(server, Request.from_target("POST", path, body=json.dumps(eviction).encode()))


def running(server: APIServer) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in server.list("pods", namespace=NS)
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


def status_of(server: APIServer, name: str = "web") -> JSON:
    status: JSON = server.get("poddisruptionbudgets", name, namespace=NS)["status"]
    return status


def started(replicas: int = 3, **spec: Any) -> APIServer:
    server = Cluster(seed=1, nodes=2, controllers=True)
    server.create("deployments", deployment(replicas=replicas), namespace=NS)
    server.advance(CONTAINER_START_SECONDS)
    server.create("poddisruptionbudgets", budget(**spec), namespace=NS)
    return server


def test_the_controller_counts_expected_desired_and_healthy_pods() -> None:
    server = started(minAvailable=2)
    status = status_of(server)
    assert {k: status[k] for k in ("expectedPods", "desiredHealthy", "currentHealthy")} == {
        "expectedPods": 3,
        "desiredHealthy": 2,
        "currentHealthy": 3,
    }
    assert status["disruptionsAllowed"] == 1
    assert status["observedGeneration"] == 1
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
    )


def test_percentages_and_max_unavailable_scale_with_the_controllers_replicas() -> None:
    server = started(replicas=4, maxUnavailable="50%")
    status = status_of(server)
    assert (status["expectedPods"], status["desiredHealthy"]) == (4, 2)
    assert status["disruptionsAllowed"] == 2
    server.create("poddisruptionbudgets", budget("pct", minAvailable="60%"), namespace=NS)
    assert status_of(server, "pct")["desiredHealthy"] == 3  # 2.4 rounded up


def test_an_eviction_spends_a_disruption_and_the_next_one_waits_for_the_replacement() -> None:
    server = started(minAvailable=2)
    first, second, _ = running(server)
    reply = evict(server, first)
    assert reply.status == 201
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    status = status_of(server)
    assert status["disruptionsAllowed"] == 0
    assert first in status["disruptedPods"]
    assert status["conditions"][0]["reason"] == "InsufficientPods"
    refused = evict(server, second)
    assert refused.status == 429
    assert refused.json()["message"] == (
        "Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert refused.json()["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget web needs 2 healthy pods and has 2 currently",
        }
    ]
    # The evicted pod stops and goes; its ReplicaSet makes another, which starts: the budget
    # allows one disruption again.
    server.advance(CONTAINER_STOP_SECONDS)
    server.advance(CONTAINER_START_SECONDS)
    assert first not in running(server)
    assert len(running(server)) == 3
    assert status_of(server)["disruptionsAllowed"] == 1
    assert "disruptedPods" not in status_of(server)
    assert evict(server, second).status == 201


def test_a_budget_the_controller_has_not_seen_is_429_with_a_retry() -> None:
    server = Cluster(seed=1, nodes=1)  # no controllers: the budget has no status
    pod = deployment()["spec"]["template"]
    server.create(
        "pods", {**pod, "metadata": {"name": "p", "labels": {"app": "web"}}}, namespace=NS
    )
    server.advance(CONTAINER_START_SECONDS)
    server.create("poddisruptionbudgets", budget(minAvailable=0), namespace=NS)
    reply = evict(server, "p")
    assert reply.status == 429
    assert reply.json()["details"]["retryAfterSeconds"] == 10
    assert reply.headers["Retry-After"] == "10"
    assert "still being processed" in reply.json()["details"]["causes"][0]["message"]
    assert running(server) == ["p"]


def test_pods_no_budget_protects_go_at_once_and_two_budgets_are_an_error() -> None:
    server = started(minAvailable=3)  # allows none
    pending = {"metadata": {"name": "pending", "labels": {"app": "web"}}}
    pending["spec"] = deployment()["spec"]["template"]["spec"]
    server.create("pods", pending, namespace=NS)
    assert evict(server, "pending").status == 201  # not running: no budget applies
    other = running(server)[0]
    server.create("poddisruptionbudgets", budget("second", minAvailable=0), namespace=NS)
    reply = evict(server, other)
    assert reply.status == 500
    assert "more than one PodDisruptionBudget" in reply.json()["message"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"metadata": {"name": "someone-else"}}, 400),
        ({"deleteOptions": {"dryRun": ["All"]}}, 201),
    ],
)
def test_a_wrong_name_is_refused_and_a_dry_run_changes_nothing(body: JSON, code: int) -> None:
    server = started(minAvailable=2)
    pod = running(server)[0]
    before = status_of(server)
    path = f"/api/v1/namespaces/{NS}/pods/{pod}/eviction"
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}, **body}
    reply = handle(server, Request.from_target("POST", path, body=json.dumps(eviction).encode()))
    assert reply.status == code, reply.json()
    assert pod in running(server)
    assert status_of(server) == before


def test_discovery_lists_the_eviction_subresource_as_kubectl_drain_looks_for_it() -> None:
    document = handle(APIServer(), Request.from_target("GET", "/api/v1")).json()
    [entry] = [r for r in document["resources"] if r["name"] == "pods/eviction"]
    assert (entry["group"], entry["version"], entry["kind"]) == ("policy", "v1", "Eviction")
    assert entry["verbs"] == ["create"]
