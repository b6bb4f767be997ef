"""The Endpoints and EndpointSlice controllers (``Cluster(controllers=True)``, on under
``kubesim serve``): a selector Service's pods, ready or not, as addresses that follow the pods."""

from __future__ import annotations

from typing import Any

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.endpoints import MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS

JSON = dict[str, Any]
NS = "default"


def service(name: str = "web", selector: JSON | None = None, **spec: Any) -> JSON:
    ports = spec.pop("ports", [{"name": "http", "port": 80, "targetPort": "http"}])
    return {
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {
            "selector": {"app": "web"} if selector is None else selector,
            "ports": ports,
            **spec,
        },
    }


def pod(name: str, labels: JSON | None = None, port: int = 8080) -> JSON:
    container = {"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": port}]}
    return {
        "metadata": {"name": name, "labels": {"app": "web"} if labels is None else labels},
        "spec": {"containers": [container]},
    }


def slices(server: APIServer, name: str = "web") -> list[JSON]:
    return [
        s
        for s in server.list("endpointslices", namespace=NS)
        if s["metadata"]["labels"].get(SERVICE_NAME_LABEL) == name
    ]


def addresses(server: APIServer, name: str = "web") -> tuple[list[str], list[str]]:
    endpoints = server.get("endpoints", name, namespace=NS)
    ready, not_ready = [], []
    for subset in endpoints.get("subsets", []):
        ready += [a["targetRef"]["name"] for a in subset.get("addresses", [])]
        not_ready += [a["targetRef"]["name"] for a in subset.get("notReadyAddresses", [])]
    return ready, not_ready


def test_a_service_lists_its_pods_not_ready_until_they_run_then_ready() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("services", service(), namespace=NS)
    empty = server.get("endpoints", "web", namespace=NS)
    assert "subsets" not in empty
    assert empty["metadata"]["labels"] == {"team": "a"}
    (only,) = slices(server)
    assert only["endpoints"] == []
    assert only["metadata"]["generateName"] == "web-"
    assert only["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGED_BY
    owner = server.get("services", "web", namespace=NS)["metadata"]["uid"]
    assert only["metadata"]["ownerReferences"][0]["uid"] == owner
    server.create("pods", pod("a"), namespace=NS)
    server.create("pods", pod("other", labels={"app": "db"}), namespace=NS)
    # Bound, not started: no IP yet, so not listed.
    assert addresses(server) == ([], [])
    server.advance(CONTAINER_START_SECONDS)
    assert addresses(server) == (["a"], [])
    (subset,) = server.get("endpoints", "web", namespace=NS)["subsets"]
    address = subset["addresses"][0]
    assert address["nodeName"] == "node-0"
    assert address["ip"] == server.get("pods", "a", namespace=NS)["status"]["podIP"]
    # The named targetPort resolves to the container's port.
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    (slice_,) = slices(server)
    assert slice_["metadata"]["name"] == only["metadata"]["name"]  # updated in place
    (endpoint,) = slice_["endpoints"]
    assert endpoint["addresses"] == [address["ip"]]
    assert endpoint["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert slice_["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


def test_readiness_relabelling_and_deletion_move_the_addresses() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("services", service(), namespace=NS)
    for name in ("a", "b"):
        server.create("pods", pod(name), namespace=NS)
    server.advance(CONTAINER_START_SECONDS)
    assert addresses(server) == (["a", "b"], [])
    status = server.get("pods", "b", namespace=NS)["status"]
    for condition in status["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"
    server.update(
        "pods", {"metadata": {"name": "b"}, "status": status}, namespace=NS, subresource="status"
    )
    assert addresses(server) == (["a"], ["b"])
    assert [e["conditions"]["ready"] for e in slices(server)[0]["endpoints"]] == [True, False]
    server.patch("pods", "a", {"metadata": {"labels": {"app": "moved"}}}, namespace=NS)
    assert addresses(server) == ([], ["b"])
    server.delete("pods", "b", namespace=NS)
    # In its grace period: gone from Endpoints, still in the slice as terminating.
    assert addresses(server) == ([], [])
    (terminating,) = slices(server)[0]["endpoints"]
    assert terminating["targetRef"]["name"] == "b"
    assert terminating["conditions"] == {"ready": False, "serving": False, "terminating": True}
    server.advance(CONTAINER_STOP_SECONDS)
    assert slices(server)[0]["endpoints"] == []


def test_pods_resolving_different_ports_get_a_subset_and_a_slice_each() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("services", service(), namespace=NS)
    server.create("pods", pod("old", port=8080), namespace=NS)
    server.create("pods", pod("new", port=9090), namespace=NS)
    bare = pod("bare")
    bare["spec"]["containers"][0].pop("ports")  # no "http" port: not an address of it
    server.create("pods", bare, namespace=NS)
    server.advance(CONTAINER_START_SECONDS)
    subsets = server.get("endpoints", "web", namespace=NS)["subsets"]
    assert [
        (s["ports"][0]["port"], [a["targetRef"]["name"] for a in s["addresses"]]) for s in subsets
    ] == [
        (8080, ["old"]),
        (9090, ["new"]),
    ]
    assert sorted(s["ports"][0]["port"] for s in slices(server)) == [8080, 9090]
    server.delete("pods", "new", namespace=NS, grace_period_seconds=0)
    (remaining,) = slices(server)  # the slice of a port set no pod has is deleted
    assert remaining["ports"][0]["port"] == 8080


def test_services_without_a_selector_or_external_names_are_left_alone_and_deletion_cleans_up() -> (
    None
):
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("services", service("manual", selector={}), namespace=NS)
    server.create(
        "endpoints",
        {"metadata": {"name": "manual"}, "subsets": [{"addresses": [{"ip": "192.0.2.1"}]}]},
        namespace=NS,
    )
    server.create("pods", pod("a"), namespace=NS)
    server.advance(CONTAINER_START_SECONDS)
    manual = server.get("endpoints", "manual", namespace=NS)
    assert manual["subsets"] == [{"addresses": [{"ip": "192.0.2.1"}]}]
    assert slices(server, "manual") == []
    server.create(
        "services",
        service("alias", type="ExternalName", externalName="example.com", ports=[]),
        namespace=NS,
    )
    assert [e["metadata"]["name"] for e in server.list("endpoints", namespace=NS)] == ["manual"]
    server.create("services", service(), namespace=NS)
    assert slices(server) != []
    server.delete("services", "web", namespace=NS)
    assert [e["metadata"]["name"] for e in server.list("endpoints", namespace=NS)] == ["manual"]
    assert slices(server) == []  # gone with their owner


def test_a_terminating_ready_pod_keeps_serving_until_its_containers_stop() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("services", service(), namespace=NS)
    server.create("pods", pod("a"), namespace=NS)
    server.advance(CONTAINER_START_SECONDS)
    server.delete("pods", "a", namespace=NS)
    (endpoint,) = slices(server)[0]["endpoints"]
    assert endpoint["conditions"] == {"ready": False, "serving": True, "terminating": True}
    assert addresses(server) == ([], [])
    server.advance(CONTAINER_STOP_SECONDS)
    assert slices(server)[0]["endpoints"] == []


def test_off_by_default() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create("services", service(), namespace=NS)
    assert server.list("endpoints", namespace=NS) == []
    assert server.list("endpointslices", namespace=NS) == []
