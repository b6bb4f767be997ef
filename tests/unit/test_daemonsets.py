"""The DaemonSet controller (``Cluster(nodes=N, controllers=True)``): one pod per fitting node,
pinned there by node affinity the scheduler honours, following nodes as they come, go and are
relabelled, rolled one node at a time to a new template."""

from __future__ import annotations

from typing import Any

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.daemonsets import pinned_node
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS, fits_node

JSON = dict[str, Any]
NS = "default"


def daemonset(name: str = "agent", node_selector: JSON | None = None, **spec: Any) -> JSON:
    pod_spec: JSON = {"containers": [{"name": "main", "image": "agent:1"}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
            **spec,
        },
    }


def placed(server: APIServer) -> dict[str, str]:
    """Node -> the phase of the (one) live daemon pod there."""
    out = {}
    for pod in server.list("pods", namespace=NS):
        if not pod["metadata"].get("deletionTimestamp"):
            node = pod["spec"].get("nodeName") or f"unbound:{pinned_node(pod)}"
            assert node not in out, f"two pods on {node}"
            out[node] = pod["status"]["phase"]
    return out


def test_a_pod_per_node_bound_where_its_affinity_pins_it_and_started() -> None:
    api = Cluster(seed=1, nodes=3, controllers=True)
    api.create("daemonsets", daemonset(), namespace=NS)
    api.advance(CONTAINER_START_SECONDS)
    assert placed(api) == {"node-0": "Running", "node-1": "Running", "node-2": "Running"}
    pod = api.list("pods", namespace=NS)[0]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [pod["spec"]["nodeName"]]
    assert {
        "key": "node.kubernetes.io/unschedulable",
        "operator": "Exists",
        "effect": "NoSchedule",
    } in pod["spec"]["tolerations"]
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
    status = api.get("daemonsets", "agent", namespace=NS)["status"]
    assert status == {
        "currentNumberScheduled": 3,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 3,
        "numberReady": 3,
        "observedGeneration": 1,
        "updatedNumberScheduled": 3,
        "numberAvailable": 3,
    }


def test_the_node_selector_picks_nodes_and_a_relabel_moves_the_pods() -> None:
    api = Cluster(seed=1, nodes=2, controllers=True)
    api.create("daemonsets", daemonset(node_selector={"disk": "ssd"}), namespace=NS)
    assert placed(api) == {}
    node = api.get("nodes", "node-1")
    node["metadata"]["labels"]["disk"] = "ssd"
    api.update("nodes", node)
    api.advance(CONTAINER_START_SECONDS)
    assert placed(api) == {"node-1": "Running"}
    node = api.get("nodes", "node-1")
    del node["metadata"]["labels"]["disk"]
    api.update("nodes", node)
    api.advance(CONTAINER_STOP_SECONDS)
    assert placed(api) == {}
    status = api.get("daemonsets", "agent", namespace=NS)["status"]
    assert status["desiredNumberScheduled"] == 0


def test_a_new_template_replaces_one_node_s_pod_at_a_time() -> None:
    api = Cluster(seed=1, nodes=2, controllers=True)
    api.create("daemonsets", daemonset(), namespace=NS)
    api.advance(CONTAINER_START_SECONDS)
    image = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "agent:2"}]}}}}
    api.patch("daemonsets", "agent", image, namespace=NS)
    terminating = [
        p for p in api.list("pods", namespace=NS) if p["metadata"].get("deletionTimestamp")
    ]
    assert len(terminating) == 1  # maxUnavailable 1
    for _ in range(10):
        api.advance(CONTAINER_STOP_SECONDS)
    images = {
        p["spec"]["nodeName"]: p["spec"]["containers"][0]["image"]
        for p in api.list("pods", namespace=NS)
    }
    assert images == {"node-0": "agent:2", "node-1": "agent:2"}
    status = api.get("daemonsets", "agent", namespace=NS)["status"]
    assert (status["updatedNumberScheduled"], status["numberAvailable"]) == (2, 2)
    assert len(api.list("controllerrevisions", namespace=NS)) == 2


def test_required_node_affinity_decides_where_a_pod_fits() -> None:
    node = {"metadata": {"name": "n1", "labels": {"zone": "a", "cores": "8"}}}

    def fits(*terms: JSON, selector: JSON | None = None) -> bool:
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
        spec: JSON = {"affinity": affinity} if terms else {}
        if selector:
            spec["nodeSelector"] = selector
        return fits_node({"spec": spec}, node)

    def expr(key: str, operator: str, *values: str) -> JSON:
        return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}

    assert fits()
    assert not fits(selector={"zone": "b"})
    assert fits(expr("zone", "In", "a", "b"))
    assert not fits(expr("zone", "NotIn", "a"))
    assert fits(expr("gpu", "DoesNotExist"))
    assert not fits(expr("gpu", "Exists"))
    assert fits(expr("cores", "Gt", "4"))
    assert not fits(expr("cores", "Lt", "4"))
    assert fits(expr("zone", "In", "b"), expr("zone", "In", "a"))  # terms are ORed
    assert fits({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    assert not fits({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]})
    assert not fits({})  # an empty term matches nothing


def test_a_revision_carries_its_owners_annotations_for_rollout_history() -> None:
    api = Cluster(seed=1, nodes=1, controllers=True)
    body = daemonset()
    body["metadata"]["annotations"] = {"kubernetes.io/change-cause": "kubectl apply --record"}
    api.create("daemonsets", body, namespace=NS)
    (revision,) = api.list("controllerrevisions", namespace=NS)
    assert revision["metadata"]["annotations"] == body["metadata"]["annotations"]


def test_untolerated_taints_keep_daemon_pods_off_and_no_execute_ones_evict_them() -> None:
    api = Cluster(seed=1, nodes=3, controllers=True)

    def taint(node_name: str, effect: str) -> None:
        node = api.get("nodes", node_name)
        node["spec"]["taints"] = [{"key": "dedicated", "value": "db", "effect": effect}]
        api.update("nodes", node)

    taint("node-1", "NoSchedule")
    api.create("daemonsets", daemonset(), namespace=NS)
    api.advance(CONTAINER_START_SECONDS)
    # NodeShouldRunDaemonPod: no pod where an untolerated taint is.
    assert placed(api) == {"node-0": "Running", "node-2": "Running"}
    status = api.get("daemonsets", "agent", namespace=NS)["status"]
    assert status["desiredNumberScheduled"] == 2
    # A NoSchedule taint added later leaves the running pod (misscheduled); NoExecute evicts.
    taint("node-2", "NoSchedule")
    api.advance(CONTAINER_STOP_SECONDS)
    assert placed(api) == {"node-0": "Running", "node-2": "Running"}
    status = api.get("daemonsets", "agent", namespace=NS)["status"]
    assert (status["desiredNumberScheduled"], status["numberMisscheduled"]) == (1, 1)
    taint("node-2", "NoExecute")
    api.advance(CONTAINER_STOP_SECONDS)
    assert placed(api) == {"node-0": "Running"}
    # A pod that tolerates the taint goes there.
    tolerant = daemonset("tolerant")
    tolerant["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "dedicated", "operator": "Exists"}
    ]
    api.create("daemonsets", tolerant, namespace=NS)
    api.advance(CONTAINER_START_SECONDS)
    nodes = {
        p["spec"]["nodeName"] for p in api.list("pods", namespace=NS, label_selector="app=tolerant")
    }
    assert nodes == {"node-0", "node-1", "node-2"}
