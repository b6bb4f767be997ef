"""What a control plane writes at start-up (``Cluster(control_plane=True)``, and
``system_pods=True`` for kube-system's workloads, as ``kubesim serve`` runs it): the
``kubernetes`` Service, the system PriorityClasses, the static control-plane pods, CoreDNS and
kube-proxy, all running, the same for the same seed."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS


def cluster(seed: int = 1, nodes: int = 2) -> APIServer:
    return Cluster(
        seed=seed,
        nodes=nodes,
        controllers=True,
        control_plane=True,
        system_pods=True,
        service_accounts=True,
        default_tolerations=True,
    )


def test_the_api_server_writes_the_kubernetes_service_and_priority_classes() -> None:
    api = Cluster(seed=1, control_plane=True)
    service = api.get("services", "kubernetes", namespace="default")
    assert service["spec"]["clusterIP"] == "10.96.0.1"
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}
    ]
    endpoints = api.get("endpoints", "kubernetes", namespace="default")
    assert endpoints["subsets"][0]["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    slice_ = api.get("endpointslices", "kubernetes", namespace="default")
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "kubernetes"
    classes = {c["metadata"]["name"]: c["value"] for c in api.list("priorityclasses")}
    assert classes == {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
    assert api.list("pods") == []  # no nodes, no system pods
    assert APIServer(seed=1).list("services") == []  # simulations start empty


def test_priority_classes_are_defaulted_as_decoding_defaults_them() -> None:
    # kubectl describe dereferences preemptionPolicy: a bootstrap class without it panicked it.
    api = Cluster(seed=1, control_plane=True)
    policies = {c.get("preemptionPolicy") for c in api.list("priorityclasses")}
    assert policies == {"PreemptLowerPriority"}
    body = {"metadata": {"name": "low"}, "value": 0, "globalDefault": False}
    created = api.create("priorityclasses", body)
    assert "globalDefault" not in created  # omitempty: false is never encoded
    assert created["preemptionPolicy"] == "PreemptLowerPriority"
    never = {"metadata": {"name": "never"}, "value": 1, "preemptionPolicy": "Never"}
    assert api.create("priorityclasses", never)["preemptionPolicy"] == "Never"


def test_kube_system_runs_the_control_plane_coredns_and_kube_proxy_on_the_nodes() -> None:
    api = cluster()
    api.advance(4 * CONTAINER_START_SECONDS)
    pods = {p["metadata"]["name"]: p for p in api.list("pods", namespace="kube-system")}
    static = {
        f"{c}-node-0"
        for c in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
    }
    assert static <= set(pods)
    assert sum(name.startswith("coredns-") for name in pods) == 2
    assert sorted(
        p["spec"]["nodeName"] for n, p in pods.items() if n.startswith("kube-proxy-")
    ) == [
        "node-0",
        "node-1",
    ]
    assert len(pods) == len(static) + 2 + 2
    assert {p["status"]["phase"] for p in pods.values()} == {"Running"}
    mirror = pods["etcd-node-0"]
    assert mirror["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert "kubernetes.io/config.mirror" in mirror["metadata"]["annotations"]
    assert "serviceAccountName" not in mirror["spec"]  # admission leaves mirror pods alone
    assert mirror["status"]["podIP"] == mirror["status"]["hostIP"]  # host network
    dns = api.get("services", "kube-dns", namespace="kube-system")
    assert dns["spec"]["clusterIP"] == "10.96.0.10"
    ready = api.get("endpoints", "kube-dns", namespace="kube-system")["subsets"][0]["addresses"]
    assert len(ready) == 2
    roles = {n["metadata"]["name"]: n["metadata"]["labels"] for n in api.list("nodes")}
    assert "node-role.kubernetes.io/control-plane" in roles["node-0"]
    assert "node-role.kubernetes.io/control-plane" not in roles["node-1"]
    assert (
        api.get("deployments", "coredns", namespace="kube-system")["status"]["availableReplicas"]
        == 2
    )


def test_the_same_seed_starts_the_same_cluster() -> None:
    first, second = cluster(seed=5), cluster(seed=5)
    for api in (first, second):
        api.advance(2)
    assert first.trace.hexdigest() == second.trace.hexdigest()
    assert first.list("pods", namespace="kube-system") == second.list(
        "pods", namespace="kube-system"
    )
    assert cluster(seed=6).trace.hexdigest() != cluster(seed=5).trace.hexdigest()


@pytest.mark.parametrize(
    "options",
    [
        {"nodes": 0, "controllers": True, "control_plane": True},
        {"nodes": 1, "controllers": False, "control_plane": True},
        {"nodes": 1, "controllers": True, "control_plane": False},
    ],
)
def test_system_pods_need_nodes_controllers_and_the_control_plane(
    options: dict[str, object],
) -> None:
    with pytest.raises(
        ValueError, match=r"system_pods=True .* needs control_plane=True, nodes >= 1"
    ):
        Cluster(system_pods=True, **options)  # type: ignore[arg-type]


def test_component_statuses_report_the_control_plane_healthy() -> None:
    statuses = Cluster(seed=1, control_plane=True).list("componentstatuses")
    assert [s["metadata"]["name"] for s in statuses] == [
        "controller-manager",
        "etcd-0",
        "scheduler",
    ]
    assert {s["conditions"][0]["type"] + s["conditions"][0]["status"] for s in statuses} == {
        "HealthyTrue"
    }
