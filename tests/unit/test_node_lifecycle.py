"""The node lifecycle and taint eviction controllers (kubesim.cluster.node_lifecycle): a node a
client created that stops reporting goes Unknown after its grace period, is tainted
unreachable, and its pods go once they stop tolerating it; a node that reports again is
untainted. kubesim's own kubelets' nodes are left alone."""

from __future__ import annotations

from typing import Any

from kubesim import APIServer
from kubesim.apiserver.storage import Event
from kubesim.cluster import Cluster
from kubesim.cluster.node_lifecycle import NODE_MONITOR_GRACE_PERIOD, NODE_STARTUP_GRACE_PERIOD

JSON = dict[str, Any]
UNREACHABLE = "node.kubernetes.io/unreachable"
NS = "default"


def cluster(**options: Any) -> APIServer:
    return Cluster(seed=1, controllers=True, node_lifecycle=True, **options)


def ready_node(name: str, heartbeat: str = "2024-01-01T00:00:00Z") -> JSON:
    ready = {
        "type": "Ready",
        "status": "True",
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": "2024-01-01T00:00:00Z",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    }
    return {"metadata": {"name": name}, "status": {"conditions": [ready]}}


def pod_on(node: str, name: str, tolerations: list[JSON] | None = None) -> JSON:
    spec: JSON = {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
    return {"metadata": {"name": name}, "spec": spec, "status": {"conditions": [ready]}}


def unreachable_toleration(seconds: int | None) -> JSON:
    toleration: JSON = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


def conditions(api: APIServer, name: str) -> dict[str, tuple[str, str]]:
    node = api.get("nodes", name)
    return {c["type"]: (c["status"], c.get("reason", "")) for c in node["status"]["conditions"]}


def taints(api: APIServer, name: str) -> list[JSON]:
    return list(api.get("nodes", name).get("spec", {}).get("taints") or [])


def reasons(api: APIServer) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in api.list("events", namespace=NS)]


def test_a_node_that_never_reported_goes_unknown_after_the_startup_grace_period() -> None:
    api = cluster()
    api.create("nodes", {"metadata": {"name": "ghost"}})
    created = api.get("nodes", "ghost")["metadata"]["creationTimestamp"]
    api.advance(NODE_STARTUP_GRACE_PERIOD - 1)
    assert api.get("nodes", "ghost").get("status", {}).get("conditions") is None
    assert taints(api, "ghost") == []
    api.advance(1)
    node = api.get("nodes", "ghost")
    assert [c["type"] for c in node["status"]["conditions"]] == [
        "Ready",
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
    ]
    for condition in node["status"]["conditions"]:
        assert condition["status"] == "Unknown"
        assert condition["reason"] == "NodeStatusNeverUpdated"
        assert condition["message"] == "Kubelet never posted node status."
        assert condition["lastHeartbeatTime"] == created
        assert condition["lastTransitionTime"] == api.clock.timestamp()
    assert taints(api, "ghost") == [
        {"key": UNREACHABLE, "effect": "NoSchedule"},
        {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": api.clock.timestamp()},
    ]
    # Never Ready, so never "now NotReady": no Event.
    assert not [r for r in reasons(api) if r[0] == "NodeNotReady"]


def test_a_ready_node_that_stops_reporting_goes_unknown_and_its_pods_not_ready() -> None:
    api = cluster()
    api.create("nodes", ready_node("edge"))
    api.create("pods", pod_on("edge", "web", [unreachable_toleration(None)]), namespace=NS)
    api.advance(NODE_MONITOR_GRACE_PERIOD - 1)
    assert conditions(api, "edge") == {"Ready": ("True", "KubeletReady")}
    api.advance(1)
    assert conditions(api, "edge")["Ready"] == ("Unknown", "NodeStatusUnknown")
    ready = api.get("nodes", "edge")["status"]["conditions"][0]
    assert ready["lastHeartbeatTime"] == "2024-01-01T00:00:00Z"  # the last one posted, kept
    assert ready["message"] == "Kubelet stopped posting node status."
    assert conditions(api, "edge")["PIDPressure"] == ("Unknown", "NodeStatusNeverUpdated")
    pod_ready = api.get("pods", "web", namespace=NS)["status"]["conditions"][0]
    assert (pod_ready["type"], pod_ready["status"]) == ("Ready", "False")
    assert ("NodeNotReady", "Node edge status is now: NodeNotReady") in reasons(api)
    assert ("NodeNotReady", "Node is not ready") in reasons(api)
    assert api.get("pods", "web", namespace=NS)  # it tolerates the node for ever


def test_heartbeats_and_lease_renewals_keep_a_node_healthy() -> None:
    api = cluster()
    api.create("nodes", ready_node("edge"))
    api.create(
        "leases",
        {"metadata": {"name": "edge"}, "spec": {"renewTime": "a"}},
        namespace="kube-node-lease",
    )
    for beat in range(1, 5):
        api.advance(NODE_MONITOR_GRACE_PERIOD - 10)
        if beat % 2:
            node = api.get("nodes", "edge")
            node["status"]["conditions"][0]["lastHeartbeatTime"] = f"2024-01-01T00:0{beat}:00Z"
            api.update("nodes", node, subresource="status")
        else:
            lease = api.get("leases", "edge", namespace="kube-node-lease")
            lease["spec"]["renewTime"] = f"renewed {beat}"
            api.update("leases", lease, namespace="kube-node-lease")
    assert conditions(api, "edge")["Ready"][0] == "True"
    assert taints(api, "edge") == []
    api.advance(NODE_MONITOR_GRACE_PERIOD)
    assert conditions(api, "edge")["Ready"][0] == "Unknown"


def test_pods_are_evicted_when_they_stop_tolerating_the_unreachable_node() -> None:
    api = cluster()
    seen: list[Event] = []
    api.commit_listeners.append(seen.append)
    api.create("nodes", ready_node("edge"))
    api.create("pods", pod_on("edge", "plain", []), namespace=NS)
    api.create("pods", pod_on("edge", "five-minutes", [unreachable_toleration(300)]), namespace=NS)
    api.create("pods", pod_on("edge", "for-ever", [unreachable_toleration(None)]), namespace=NS)
    api.advance(NODE_MONITOR_GRACE_PERIOD)
    names = [p["metadata"]["name"] for p in api.list("pods", namespace=NS)]
    assert names == ["five-minutes", "for-ever"]  # no toleration: at once
    api.advance(299)
    assert len(api.list("pods", namespace=NS)) == 2
    api.advance(1)
    assert [p["metadata"]["name"] for p in api.list("pods", namespace=NS)] == ["for-ever"]
    assert ("TaintManagerEviction", "Marking for deletion Pod default/plain") in reasons(api)
    # Before the delete, the pod said why it goes.
    targets = [
        e.new.obj["status"]["conditions"][-1]
        for e in seen
        if e.resource.plural == "pods" and e.key == (NS, "five-minutes") and e.type == "MODIFIED"
    ]
    assert targets[-1]["type"] == "DisruptionTarget"
    assert targets[-1]["reason"] == "DeletionByTaintManager"


def test_a_node_reporting_ready_again_is_untainted_and_pending_evictions_are_called_off() -> None:
    api = cluster()
    api.create("nodes", ready_node("edge"))
    api.create("pods", pod_on("edge", "five-minutes", [unreachable_toleration(300)]), namespace=NS)
    api.advance(NODE_MONITOR_GRACE_PERIOD)
    assert len(taints(api, "edge")) == 2
    for beat in range(10):  # its kubelet is back: it posts Ready every 40 s, past the 300 s
        node = api.get("nodes", "edge")
        posted = ready_node("edge", f"2024-01-01T01:{beat:02d}:00Z")["status"]
        node["status"]["conditions"] = posted["conditions"]
        api.update("nodes", node, subresource="status")
        assert taints(api, "edge") == []
        api.advance(40)
    assert api.get("pods", "five-minutes", namespace=NS)


def test_the_scheduler_places_no_pod_on_a_node_whose_taint_it_does_not_tolerate() -> None:
    # The TaintToleration filter, for taints a client puts on the kubelets' nodes
    # (`kubectl taint nodes node-0 dedicated=db:NoSchedule`).
    api = Cluster(seed=1, nodes=1, controllers=True)
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    api.patch("nodes", "node-0", {"spec": {"taints": [taint]}})
    container = {"name": "c", "image": "i"}
    api.create(
        "pods", {"metadata": {"name": "web"}, "spec": {"containers": [container]}}, namespace=NS
    )
    scheduled = api.get("pods", "web", namespace=NS)["status"]["conditions"][0]
    assert scheduled["message"] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: db}. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    tolerated = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
    spec = {"containers": [container], "tolerations": [tolerated]}
    api.create("pods", {"metadata": {"name": "db"}, "spec": spec}, namespace=NS)
    assert api.get("pods", "db", namespace=NS)["spec"]["nodeName"] == "node-0"
    wrong_value = {**tolerated, "value": "cache"}
    spec = {"containers": [container], "tolerations": [wrong_value]}
    api.create("pods", {"metadata": {"name": "cache"}, "spec": spec}, namespace=NS)
    assert "nodeName" not in api.get("pods", "cache", namespace=NS)["spec"]


def test_the_kubelets_nodes_and_servers_without_the_option_are_left_alone() -> None:
    api = cluster(nodes=2)
    api.advance(10 * NODE_STARTUP_GRACE_PERIOD)
    for name in ("node-0", "node-1"):
        assert conditions(api, name)["Ready"][0] == "True"
        assert taints(api, name) == []
    plain = Cluster(seed=1, controllers=True)
    plain.create("nodes", {"metadata": {"name": "ghost"}})
    plain.advance(10 * NODE_STARTUP_GRACE_PERIOD)
    assert "status" not in plain.get("nodes", "ghost") or not plain.get("nodes", "ghost")["status"]


def test_the_same_seed_gives_the_same_trace() -> None:
    def run() -> str:
        api = cluster()
        api.create("nodes", ready_node("edge"))
        api.create("pods", pod_on("edge", "p", [unreachable_toleration(30)]), namespace=NS)
        api.advance(NODE_MONITOR_GRACE_PERIOD + 60)
        return api.trace.hexdigest()

    assert run() == run()
