"""Nodes, the scheduler and the kubelet (``Cluster(nodes=N)``, one node under ``kubesim
serve``): a new pod is bound to a node, then started, in writes a watch sees in order; a pod
no node fits says why; everything drawn is a function of the seed."""

from __future__ import annotations

import ipaddress
from typing import Any

import orjson
import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.cluster import Cluster, kubelet
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS
from kubesim.wire import printers
from kubesim.wire.routes import Request, handle
from kubesim.wire.tables import parse_time

JSON = dict[str, Any]


def pod(name: str, **spec: Any) -> JSON:
    containers = spec.pop("containers", [{"name": "main", "image": "busybox"}])
    return {"metadata": {"name": name}, "spec": {"containers": containers, **spec}}


def conditions(obj: JSON) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj["status"].get("conditions", [])}


def started(server: APIServer) -> None:
    server.advance(CONTAINER_START_SECONDS)


def test_nodes_register_ready_with_a_lease_each_and_none_by_default() -> None:
    assert APIServer(seed=1).list("nodes") == []
    server = Cluster(seed=1, nodes=2)
    nodes = server.list("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["node-0", "node-1"]
    for index, node in enumerate(nodes):
        assert conditions(node) == {
            "MemoryPressure": "False",
            "DiskPressure": "False",
            "PIDPressure": "False",
            "Ready": "True",
        }
        assert node["spec"]["podCIDR"] == f"10.244.{index}.0/24"
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == node["metadata"]["name"]
        lease = server.get("leases", node["metadata"]["name"], namespace="kube-node-lease")
        assert lease["spec"]["holderIdentity"] == node["metadata"]["name"]
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]


def test_a_new_pod_is_bound_then_started_in_writes_a_watch_sees_in_order() -> None:
    server = Cluster(seed=1, nodes=1)
    stream = server.watch("pods", namespace="default", resource_version=str(server.storage.rv))
    created = server.create(
        "pods",
        pod(
            "web",
            initContainers=[{"name": "setup", "image": "registry.k8s.io/pause:3.9"}],
            containers=[
                {"name": "app", "image": "nginx:1.25"},
                {"name": "proxy", "image": "envoyproxy/envoy"},
            ],
        ),
        namespace="default",
    )
    # The create answers before the scheduler acts, as on a cluster.
    assert created["status"] == {"phase": "Pending"}
    assert "nodeName" not in created["spec"]
    bound = server.get("pods", "web", namespace="default")
    assert bound["spec"]["nodeName"] == "node-0"
    assert conditions(bound) == {"PodScheduled": "True"}
    assert bound["status"]["phase"] == "Pending"
    server.advance(CONTAINER_START_SECONDS / 2)
    assert server.get("pods", "web", namespace="default")["status"]["phase"] == "Pending"
    server.advance(CONTAINER_START_SECONDS / 2)
    running = server.get("pods", "web", namespace="default")
    status = running["status"]
    assert status["phase"] == "Running"
    assert conditions(running) == dict.fromkeys(
        ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"],
        "True",
    )
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.244.0.0/24")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIP"] == "172.18.0.2"
    assert status["qosClass"] == "BestEffort"
    assert [
        (c["name"], c["image"], c["ready"], c["started"]) for c in status["containerStatuses"]
    ] == [
        ("app", "docker.io/library/nginx:1.25", True, True),
        ("proxy", "docker.io/envoyproxy/envoy:latest", True, True),
    ]
    for container in status["containerStatuses"]:
        assert set(container["state"]) == {"running"}
        assert container["containerID"].startswith("containerd://")
        assert len(container["containerID"]) == len("containerd://") + 64
    (init,) = status["initContainerStatuses"]
    assert init["image"] == "registry.k8s.io/pause:3.9"
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert init["ready"] is False
    events = [
        orjson.loads(line) for chunk in iter(stream.poll, None) for line in chunk.splitlines()
    ]
    assert [(e["type"], e["object"]["status"]["phase"]) for e in events] == [
        ("ADDED", "Pending"),
        ("MODIFIED", "Pending"),
        ("MODIFIED", "Running"),
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs[1] == rvs[0] + 1  # the binding is the very next write after the create
    # The kubelet is no client: it owns no fields.
    assert "managedFields" not in running["metadata"]


def test_the_scheduler_spreads_pods_over_the_nodes_with_the_fewest() -> None:
    server = Cluster(seed=1, nodes=3)
    server.create("pods", pod("pinned", nodeName="node-0"), namespace="default")
    placed = []
    for index in range(5):
        server.create("pods", pod(f"p{index}"), namespace="default")
        placed.append(server.get("pods", f"p{index}", namespace="default")["spec"]["nodeName"])
    # node-0 already runs one: node-1 and node-2 fill first, ties to the first name.
    assert placed == ["node-1", "node-2", "node-0", "node-1", "node-2"]
    started(server)
    ips = [p["status"]["podIP"] for p in server.list("pods", namespace="default")]
    assert len(set(ips)) == len(ips) == 6


def test_a_pod_no_node_fits_says_why_once_and_is_bound_when_a_node_fits() -> None:
    server = Cluster(seed=1, nodes=2)
    server.create("pods", pod("ssd", nodeSelector={"disk": "ssd"}), namespace="default")
    waiting = server.get("pods", "ssd", namespace="default")
    (condition,) = waiting["status"]["conditions"]
    assert condition["type"] == "PodScheduled"
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith(
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )
    rv = server.storage.rv
    # A change to the pod that does not make it fit writes no second condition (and no Event).
    server.patch("pods", "ssd", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    relabelled = server.get("pods", "ssd", namespace="default")
    assert server.storage.rv == int(relabelled["metadata"]["resourceVersion"]) == rv + 1
    assert relabelled["status"]["conditions"] == waiting["status"]["conditions"]
    server.patch("nodes", "node-1", {"metadata": {"labels": {"disk": "ssd"}}})
    bound = server.get("pods", "ssd", namespace="default")
    assert bound["spec"]["nodeName"] == "node-1"
    assert conditions(bound) == {"PodScheduled": "True"}
    started(server)
    assert server.get("pods", "ssd", namespace="default")["status"]["phase"] == "Running"


def test_a_cordoned_node_gets_only_pods_that_tolerate_it_until_uncordoned() -> None:
    server = Cluster(seed=1, nodes=2)
    server.patch("nodes", "node-0", {"spec": {"unschedulable": True}})
    server.create("pods", pod("a"), namespace="default")
    assert server.get("pods", "a", namespace="default")["spec"]["nodeName"] == "node-1"
    server.patch("nodes", "node-1", {"spec": {"unschedulable": True}})
    server.create("pods", pod("b", nodeSelector={"disk": "ssd"}), namespace="default")
    server.create("pods", pod("c"), namespace="default")
    (condition,) = server.get("pods", "b", namespace="default")["status"]["conditions"]
    assert condition["message"].startswith("0/2 nodes are available: 2 node(s) were unschedulable.")
    # What a DaemonSet's pods carry: a toleration of the taint a cordon stands for.
    tolerating = pod("d", tolerations=[{"key": kubelet.UNSCHEDULABLE_TAINT, "operator": "Exists"}])
    server.create("pods", tolerating, namespace="default")
    assert server.get("pods", "d", namespace="default")["spec"]["nodeName"] == "node-0"
    server.patch("nodes", "node-1", {"metadata": {"labels": {"disk": "ssd"}}})
    server.patch("nodes", "node-0", {"spec": {"unschedulable": False}})
    (condition,) = server.get("pods", "b", namespace="default")["status"]["conditions"]
    assert condition["message"].startswith(
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) were unschedulable."
    )
    assert server.get("pods", "c", namespace="default")["spec"]["nodeName"] == "node-0"


def test_pods_for_another_scheduler_or_a_missing_node_stay_pending() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create("pods", pod("custom", schedulerName="my-scheduler"), namespace="default")
    server.create("pods", pod("elsewhere", nodeName="node-9"), namespace="default")
    server.create("pods", pod("direct", nodeName="node-0"), namespace="default")
    started(server)
    by_name = {p["metadata"]["name"]: p for p in server.list("pods", namespace="default")}
    assert by_name["custom"]["status"] == {"phase": "Pending"}
    assert "nodeName" not in by_name["custom"]["spec"]
    assert by_name["elsewhere"]["status"] == {"phase": "Pending"}
    # A pod that names an existing node is started by its kubelet without a binding.
    assert by_name["direct"]["status"]["phase"] == "Running"
    assert "PodScheduled" not in conditions(by_name["direct"])


def test_a_pod_deleted_or_replaced_before_it_starts_is_not_started_twice() -> None:
    server = Cluster(seed=1, nodes=1)
    # Deleted with a zero grace period: gone at once, no kubelet involved.
    server.create("pods", pod("gone"), namespace="default")
    server.delete("pods", "gone", namespace="default", grace_period_seconds=0)
    server.create("pods", pod("again"), namespace="default")
    server.delete("pods", "again", namespace="default", grace_period_seconds=0)
    server.advance(CONTAINER_START_SECONDS / 2)
    server.create("pods", pod("again"), namespace="default")
    rv = server.storage.rv
    server.advance(CONTAINER_START_SECONDS / 2)
    # The first "again"'s timer fires now and finds a different uid: nothing is written.
    assert server.storage.rv == rv
    assert server.list("pods", namespace="default")[0]["status"]["phase"] == "Pending"
    server.advance(CONTAINER_START_SECONDS / 2)
    (again,) = server.list("pods", namespace="default")
    assert again["status"]["phase"] == "Running"
    assert int(again["metadata"]["resourceVersion"]) == rv + 1  # one status write, then Events


def test_a_deleted_pod_frees_its_ip_for_the_next() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create("pods", pod("a"), namespace="default")
    server.create("pods", pod("b"), namespace="default")
    started(server)
    first = server.get("pods", "a", namespace="default")["status"]["podIP"]
    assert server.get("pods", "b", namespace="default")["status"]["podIP"] == "10.244.0.3"
    server.delete("pods", "a", namespace="default", grace_period_seconds=0)
    server.create("pods", pod("c"), namespace="default")
    started(server)
    assert server.get("pods", "c", namespace="default")["status"]["podIP"] == first


def test_a_full_pod_network_leaves_the_pod_pending() -> None:
    server = Cluster(seed=1, nodes=1)
    for index in range(255):
        server.create("pods", pod(f"p{index}", hostNetwork=index == 0), namespace="default")
    started(server)
    phases = [p["status"]["phase"] for p in server.list("pods", namespace="default")]
    # .2 to .254 are 253 addresses, the host-network pod needs none: one of 255 is left over.
    assert phases.count("Running") == 254
    assert phases.count("Pending") == 1


def test_qos_class_follows_requests_and_limits() -> None:
    server = Cluster(seed=1, nodes=1)

    def qos(**resources: Any) -> str:
        name = f"q{server.storage.rv}"
        containers = [{"name": "c", "image": "x", "resources": resources}]
        server.create("pods", pod(name, containers=containers), namespace="default")
        started(server)
        return str(server.get("pods", name, namespace="default")["status"]["qosClass"])

    both = {"cpu": "1", "memory": "1Gi"}
    assert qos() == "BestEffort"
    assert qos(limits=both) == "Guaranteed"  # requests default to limits
    assert qos(requests=both, limits=both) == "Guaranteed"
    assert qos(requests={"cpu": "1"}) == "Burstable"
    assert qos(requests={"cpu": "500m", "memory": "1Gi"}, limits=both) == "Burstable"


def test_bind_is_the_schedulers_write_and_refuses_a_second_node() -> None:
    server = Cluster(seed=1, nodes=2)
    server.create("pods", pod("mine", schedulerName="mine"), namespace="default")
    with pytest.raises(st.StatusError) as missing:
        server.bind("nobody", "node-0", namespace="default")
    assert missing.value.code == 404
    dry = server.bind("mine", "node-1", namespace="default", dry_run=True)
    assert dry["spec"]["nodeName"] == "node-1"
    assert "nodeName" not in server.get("pods", "mine", namespace="default")["spec"]
    bound = server.bind("mine", "node-1", namespace="default")
    assert bound["spec"]["nodeName"] == "node-1"
    assert conditions(bound) == {"PodScheduled": "True"}
    with pytest.raises(st.StatusError) as twice:
        server.bind("mine", "node-0", namespace="default")
    assert twice.value.code == 409
    assert twice.value.status["message"] == (
        'Operation cannot be fulfilled on pods/binding "mine": '
        'pod mine is already assigned to node "node-1"'
    )
    started(server)
    assert server.get("pods", "mine", namespace="default")["status"]["phase"] == "Running"


def call(server: APIServer, method: str, target: str, body: Any = None) -> tuple[int, Any]:
    data = orjson.dumps(body) if body is not None else b""
    response = handle(server, Request.from_target(method, target, {}, data))
    raw = response.body if isinstance(response.body, bytes) else b"".join(response.body)
    return response.status, orjson.loads(raw)


def test_the_binding_subresource_over_the_wire() -> None:
    server = APIServer(seed=1)  # no nodes: nothing binds the pod but the request
    server.create("pods", pod("web"), namespace="default")
    path = "/api/v1/namespaces/default/pods/web/binding"
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}}
    code, answer = call(server, "POST", path, {**binding, "target": {"kind": "Service"}})
    assert (code, answer["reason"]) == (422, "Invalid")
    code, answer = call(
        server, "POST", path, {**binding, "target": {"kind": "Service", "name": "x"}}
    )
    assert (code, answer["reason"]) == (400, "BadRequest")
    code, answer = call(server, "GET", path)
    assert (code, answer["reason"]) == (405, "MethodNotAllowed")
    code, answer = call(server, "POST", path, {**binding, "target": {"kind": "Node", "name": "n"}})
    assert code == 201
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    assert server.get("pods", "web", namespace="default")["spec"]["nodeName"] == "n"
    code, answer = call(server, "POST", path, {**binding, "target": {"name": "m"}})
    assert (code, answer["reason"]) == (409, "Conflict")
    # Only pods have the subresource.
    server.create("configmaps", {"metadata": {"name": "web"}}, namespace="default")
    code, answer = call(
        server, "POST", "/api/v1/namespaces/default/configmaps/web/binding", binding
    )
    assert code == 404


def test_the_same_seed_starts_the_same_pods_and_another_seed_other_containers() -> None:
    def run(seed: int) -> tuple[str, list[str]]:
        server = Cluster(seed=seed, nodes=2)
        for index in range(4):
            server.create("pods", pod(f"p{index}"), namespace="default")
        started(server)
        ids = [
            p["status"]["containerStatuses"][0]["containerID"]
            for p in server.list("pods", namespace="default")
        ]
        return server.trace.hexdigest(), ids

    assert run(7) == run(7)
    assert run(7)[1] != run(8)[1]


def test_node_counts_are_checked() -> None:
    for bad in (-1, True, 251, "2"):
        with pytest.raises(ValueError, match="nodes must be an int from 0 to 250"):
            Cluster(nodes=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("nginx:1.25", "docker.io/library/nginx:1.25"),
        ("bitnami/redis", "docker.io/bitnami/redis:latest"),
        ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("ghcr.io/org/app@sha256:" + "a" * 64, "ghcr.io/org/app@sha256:" + "a" * 64),
    ],
)
def test_images_are_reported_as_containerd_names_them(image: str, normalized: str) -> None:
    assert kubelet.normalized_image(image) == normalized
    image_id = kubelet.image_id(normalized)
    repository = normalized.split("@")[0]
    if "@" not in normalized:
        repository = repository.rsplit(":", 1)[0]
    assert image_id.startswith(repository + "@sha256:")
    assert kubelet.image_id(normalized) == image_id  # the same digest every time


def test_nodes_print_status_roles_and_version() -> None:
    server = Cluster(seed=1, nodes=1)
    node = server.get("nodes", "node-0")
    now = parse_time(node["metadata"]["creationTimestamp"])
    assert now is not None
    assert printers.node_cells(node, now) == [
        "node-0",
        "Ready",
        "<none>",
        "0s",
        "v1.33.0",
        "172.18.0.2",
        "<none>",
        "Debian GNU/Linux 12 (bookworm)",
        "6.1.0-kubesim",
        "containerd://2.0.3",
    ]
    node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    node["metadata"]["labels"]["kubernetes.io/role"] = "edge"
    node["spec"]["unschedulable"] = True
    node["status"]["conditions"][-1]["status"] = "Unknown"
    assert printers.node_cells(node, now)[1:3] == [
        "NotReady,SchedulingDisabled",
        "control-plane,edge",
    ]
    assert printers.node_cells({"metadata": {"name": "bare"}}, now)[1:3] == ["Unknown", "<none>"]


def stopped(server: APIServer) -> None:
    server.advance(CONTAINER_STOP_SECONDS)


def test_a_running_pod_is_deleted_gracefully_by_its_kubelet() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create("pods", pod("web"), namespace="default")
    started(server)
    rv = server.storage.rv
    answer = server.delete("pods", "web", namespace="default")
    # The answer is the pod, marked: deleted 30 s from now unless its kubelet is done sooner.
    created = parse_time(answer["metadata"]["creationTimestamp"])
    deadline = parse_time(answer["metadata"]["deletionTimestamp"])
    assert created is not None
    assert deadline is not None
    assert (deadline - created).total_seconds() == 30
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 30
    assert server.get("pods", "web", namespace="default")["status"]["phase"] == "Running"
    stopped(server)
    assert server.list("pods", namespace="default") == []
    stream = server.watch("pods", namespace="default", resource_version=str(rv))
    events = [
        orjson.loads(line) for chunk in iter(stream.poll, None) for line in chunk.splitlines()
    ]
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    final = events[1]["object"]["status"]
    assert final["phase"] == "Succeeded"
    (container,) = final["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 0
    assert container["ready"] is False
    assert conditions(events[1]["object"])["Ready"] == "False"


def test_a_grace_period_can_only_shrink_and_zero_deletes_at_once() -> None:
    server = Cluster(seed=1, nodes=1)
    for name in ("slow", "forced", "custom"):
        server.create("pods", pod(name), namespace="default")
    server.create("pods", pod("unscheduled", schedulerName="none"), namespace="default")
    server.delete("pods", "slow", namespace="default", grace_period_seconds=60)
    again = server.delete("pods", "slow", namespace="default", grace_period_seconds=90)
    assert again["metadata"]["deletionGracePeriodSeconds"] == 60  # a longer one changes nothing
    shorter = server.delete("pods", "slow", namespace="default", grace_period_seconds=5)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    server.delete("pods", "forced", namespace="default", grace_period_seconds=0)
    server.delete("pods", "unscheduled", namespace="default")  # no kubelet runs it: at once
    assert [p["metadata"]["name"] for p in server.list("pods", namespace="default")] == [
        "custom",
        "slow",
    ]
    custom = pod("custom2", terminationGracePeriodSeconds=7)
    server.create("pods", custom, namespace="default")
    marked = server.delete("pods", "custom2", namespace="default")
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 7
    dry = server.delete("pods", "custom", namespace="default", dry_run=True)
    assert dry["metadata"]["deletionGracePeriodSeconds"] == 30
    assert "deletionTimestamp" not in server.get("pods", "custom", namespace="default")["metadata"]


def test_a_finalizer_holds_a_pod_its_kubelet_has_stopped_until_it_is_removed() -> None:
    server = Cluster(seed=1, nodes=1)
    held = pod("held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    server.create("pods", held, namespace="default")
    started(server)
    server.delete("pods", "held", namespace="default")
    stopped(server)
    stuck = server.get("pods", "held", namespace="default")
    assert stuck["status"]["phase"] == "Succeeded"
    assert stuck["metadata"]["deletionGracePeriodSeconds"] == 0
    server.patch("pods", "held", {"metadata": {"finalizers": None}}, namespace="default")
    assert server.list("pods", namespace="default") == []


def test_a_pod_deleted_before_it_starts_is_never_started() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create("pods", pod("web"), namespace="default")
    server.delete("pods", "web", namespace="default", grace_period_seconds=10)
    started(server)
    stopped(server)
    assert server.list("pods", namespace="default") == []


def test_the_grace_period_comes_from_the_body_or_the_query() -> None:
    server = Cluster(seed=1, nodes=1)
    for name in ("a", "b", "c"):
        server.create("pods", pod(name), namespace="default")
    base = "/api/v1/namespaces/default/pods"
    code, answer = call(server, "DELETE", f"{base}/a?gracePeriodSeconds=12")
    assert (code, answer["metadata"]["deletionGracePeriodSeconds"]) == (200, 12)
    # The body's DeleteOptions win over the query, as the handler decodes the body last.
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
    code, answer = call(server, "DELETE", f"{base}/b?gracePeriodSeconds=12", options)
    assert code == 200
    assert [p["metadata"]["name"] for p in server.list("pods", namespace="default")] == ["a", "c"]
    code, answer = call(server, "DELETE", f"{base}/c?gracePeriodSeconds=soon")
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert "gracePeriodSeconds must be an integer" in answer["message"]


def test_container_logs_are_empty_text_and_refusals_are_the_servers() -> None:
    server = Cluster(seed=1, nodes=1)
    two = [{"name": "app", "image": "x"}, {"name": "proxy", "image": "y"}]
    server.create("pods", pod("one"), namespace="default")
    server.create(
        "pods",
        pod("two", containers=two, initContainers=[two[0] | {"name": "init"}]),
        namespace="default",
    )
    server.create("pods", pod("lone", schedulerName="none"), namespace="default")
    server.create("pods", pod("away", nodeName="node-7"), namespace="default")
    base = "/api/v1/namespaces/default/pods"

    def log(target: str) -> tuple[int, bytes, str]:
        response = handle(server, Request.from_target("GET", f"{base}/{target}"))
        assert isinstance(response.body, bytes)
        return response.status, response.body, response.content_type

    def refused(target: str) -> tuple[int, str]:
        code, body, _ = log(target)
        return code, orjson.loads(body)["message"]

    assert refused("one/log") == (
        400,
        'container "main" in pod "one" is waiting to start: ContainerCreating',
    )
    started(server)
    assert log("one/log") == (200, b"", "text/plain")
    # A followed log of a running container stays open (tests/unit/test_log_follow.py).
    assert refused("one/log?previous=true") == (
        400,
        'previous terminated container "main" in pod "one" not found',
    )
    assert refused("one/log?container=nope") == (400, "container nope is not valid for pod one")
    assert refused("two/log") == (
        400,
        "a container name must be specified for pod two, choose one of: [app proxy] "
        "or one of the init containers: [init]",
    )
    assert log("two/log?container=proxy")[0] == 200
    assert log("two/log?container=init")[0] == 200  # a finished init container's log
    assert refused("lone/log") == (400, "pod lone does not have a host assigned")
    assert refused("away/log") == (404, 'nodes "node-7" not found')
    assert refused("ghost/log") == (404, 'pods "ghost" not found')
    response = handle(server, Request.from_target("POST", f"{base}/one/log"))
    assert response.status == 405
