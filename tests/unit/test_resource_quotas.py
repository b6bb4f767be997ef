"""ResourceQuotas: the quota controller's status and the admission plugin's refusals
(kubesim.admission.resource_quotas)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.cluster import Cluster

NS = "default"


def quota(name: str = "compute", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def pod(
    name: str, *, cpu: str | None = "500m", memory: str | None = "256Mi", **spec: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if cpu is not None:
        resources["limits"] = {"cpu": cpu}
    if memory is not None:
        resources["requests"] = {"memory": memory}
    container = {"name": "app", "image": "nginx", "resources": resources}
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def used(server: APIServer, name: str = "compute") -> dict[str, str]:
    got: dict[str, str] = server.get("resourcequotas", name, namespace=NS)["status"]["used"]
    return got


def refusal(server: APIServer, plural: str, body: dict[str, Any]) -> str:
    with pytest.raises(st.StatusError) as refused:
        server.create(plural, body, namespace=NS)
    assert refused.value.code == 403
    assert refused.value.status["reason"] == "Forbidden"
    message: str = refused.value.status["message"]
    return message


def test_the_controller_reports_hard_and_what_the_namespace_uses() -> None:
    server = Cluster(seed=1, controllers=True)
    hard = {
        "pods": "10",
        "limits.cpu": "4",
        "requests.memory": "8Gi",
        "configmaps": "5",
        "count/deployments.apps": "2",
        "services.loadbalancers": "1",
    }
    server.create("resourcequotas", quota(hard=hard), namespace=NS)
    status = server.get("resourcequotas", "compute", namespace=NS)["status"]
    assert status["hard"] == dict(sorted(hard.items()))
    assert set(status["used"].values()) == {"0"}
    server.create("pods", pod("a", cpu="1500m", memory="1Gi"), namespace=NS)
    server.create("pods", pod("b", cpu="0.5", memory="512Mi"), namespace=NS)
    server.create("configmaps", {"metadata": {"name": "c"}}, namespace=NS)
    lb = {"type": "LoadBalancer", "ports": [{"port": 80}]}
    server.create("services", {"metadata": {"name": "s"}, "spec": lb}, namespace=NS)
    assert used(server) == {
        "configmaps": "1",
        "count/deployments.apps": "0",
        "limits.cpu": "2",
        "pods": "2",
        "requests.memory": "1536Mi",
        "services.loadbalancers": "1",
    }
    # A finished pod no longer counts; a deleted one neither.
    finished = server.get("pods", "a", namespace=NS)
    finished["status"] = {"phase": "Succeeded"}
    server.update("pods", finished, namespace=NS, subresource="status")
    server.delete("pods", "b", namespace=NS)
    assert used(server)["pods"] == "0"
    assert used(server)["limits.cpu"] == "0"


def test_a_create_past_the_quota_is_forbidden_with_what_was_asked_used_and_limited() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create(
        "resourcequotas", quota(hard={"limits.cpu": "1", "configmaps": "1"}), namespace=NS
    )
    server.create("pods", pod("a"), namespace=NS)
    assert refusal(server, "pods", pod("b", cpu="600m")) == (
        'pods "b" is forbidden: exceeded quota: compute, requested: limits.cpu=600m, '
        "used: limits.cpu=500m, limited: limits.cpu=1"
    )
    server.create("pods", pod("c", cpu="500m"), namespace=NS)  # exactly at the limit
    server.create("configmaps", {"metadata": {"name": "one"}}, namespace=NS)
    assert refusal(server, "configmaps", {"metadata": {"name": "two"}}) == (
        'configmaps "two" is forbidden: exceeded quota: compute, requested: configmaps=1, '
        "used: configmaps=1, limited: configmaps=1"
    )
    assert [p["metadata"]["name"] for p in server.list("pods", namespace=NS)] == ["a", "c"]


def test_a_pod_must_name_the_compute_resources_a_quota_limits() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create(
        "resourcequotas", quota(hard={"limits.cpu": "4", "requests.memory": "1Gi"}), namespace=NS
    )
    assert refusal(server, "pods", pod("bare", cpu=None, memory=None)) == (
        'pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: app; '
        "requests.memory for: app"
    )


def test_scopes_narrow_the_pods_a_quota_counts_and_refuses() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create(
        "resourcequotas",
        quota("best-effort", hard={"pods": "1"}, scopes=["BestEffort"]),
        namespace=NS,
    )
    server.create("pods", pod("sized"), namespace=NS)  # has resources: not best effort
    server.create("pods", pod("free", cpu=None, memory=None), namespace=NS)
    assert used(server, "best-effort") == {"pods": "1"}
    assert "exceeded quota: best-effort" in refusal(
        server, "pods", pod("free-2", cpu=None, memory=None)
    )
    server.create("pods", pod("sized-2"), namespace=NS)


def test_without_the_controller_a_quota_has_no_status_and_refuses_nothing() -> None:
    server = Cluster()
    server.create("resourcequotas", quota(hard={"pods": "0"}), namespace=NS)
    assert (
        "status" not in server.get("resourcequotas", "compute", namespace=NS)
        or not (server.get("resourcequotas", "compute", namespace=NS)["status"])
    )
    server.create("pods", pod("a"), namespace=NS)
