"""Events the scheduler, the kubelet and the controllers record (kubesim.cluster.events), and
the field selectors ``kubectl describe`` finds them by."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS
from kubesim.wire import printers
from kubesim.wire.tables import parse_time

JSON = dict[str, Any]
NS = "default"


def events(server: APIServer, selector: str = "") -> list[tuple[str, str, str, str]]:
    return [
        (e["type"], e["reason"], e["involvedObject"]["name"], e["message"])
        for e in server.list("events", namespace=NS, field_selector=selector)
    ]


def test_a_pods_life_is_told_in_events_about_it_and_its_containers() -> None:
    server = Cluster(seed=1, nodes=1)
    containers = [{"name": "app", "image": "nginx:1.25"}, {"name": "proxy", "image": "envoy"}]
    pod = server.create(
        "pods", {"metadata": {"name": "web"}, "spec": {"containers": containers}}, namespace=NS
    )
    server.advance(CONTAINER_START_SECONDS)
    server.delete("pods", "web", namespace=NS)
    server.advance(CONTAINER_STOP_SECONDS)
    selector = f"involvedObject.name=web,involvedObject.uid={pod['metadata']['uid']}"
    assert [(kind, reason) for kind, reason, _, _ in events(server, selector)] == [
        ("Normal", "Scheduled"),
        ("Normal", "Pulled"),
        ("Normal", "Created"),
        ("Normal", "Started"),
        ("Normal", "Pulled"),
        ("Normal", "Created"),
        ("Normal", "Started"),
        ("Normal", "Killing"),
        ("Normal", "Killing"),
    ]
    listed = server.list("events", namespace=NS)
    scheduled = listed[0]
    assert scheduled["message"] == "Successfully assigned default/web to node-0"
    assert scheduled["source"] == {"component": "default-scheduler"}
    assert scheduled["involvedObject"]["kind"] == "Pod"
    assert scheduled["count"] == 1
    pulled = listed[1]
    assert pulled["message"] == 'Container image "nginx:1.25" already present on machine'
    assert pulled["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert pulled["source"] == {"component": "kubelet", "host": "node-0"}
    assert listed[-1]["message"] == "Stopping container proxy"
    # Named {object}.{hex}, unique, and listed in the order they were recorded.
    names = [e["metadata"]["name"] for e in listed]
    assert all(name.startswith("web.") for name in names)
    assert len(set(names)) == len(names)
    assert names == sorted(names)
    assert events(server, "reason=Killing,source=kubelet,type=Normal")[0][1] == "Killing"
    assert events(server, "involvedObject.fieldPath=spec.containers{proxy}")[0][1] == "Pulled"


def test_the_controllers_say_what_they_scaled_created_and_could_not_create() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True, service_accounts=True)
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    server.create(
        "deployments",
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template,
            },
        },
        namespace=NS,
    )
    (rs,) = server.list("replicasets", namespace=NS)
    (pod,) = server.list("pods", namespace=NS)
    rs_name, pod_name = rs["metadata"]["name"], pod["metadata"]["name"]
    assert events(server, "involvedObject.kind=Deployment") == [
        ("Normal", "ScalingReplicaSet", "web", f"Scaled up replica set {rs_name} from 0 to 1")
    ]
    assert events(server, "source=replicaset-controller") == [
        ("Normal", "SuccessfulCreate", rs_name, f"Created pod: {pod_name}")
    ]
    server.patch("deployments", "web", {"spec": {"replicas": 0}}, namespace=NS)
    assert events(server, "reason=SuccessfulDelete") == [
        ("Normal", "SuccessfulDelete", rs_name, f"Deleted pod: {pod_name}")
    ]
    assert events(server, "involvedObject.kind=Deployment")[-1][3] == (
        f"Scaled down replica set {rs_name} from 1 to 0"
    )
    server.patch(
        "deployments",
        "web",
        {"spec": {"replicas": 1, "template": {"spec": {"serviceAccountName": "missing"}}}},
        namespace=NS,
    )
    # One per attempt (each sync retries, as the controller's requeues do), all alike.
    warnings = events(server, "type=Warning")
    assert warnings
    assert len(set(warnings)) == 1
    failed = warnings[0]
    assert failed[1] == "FailedCreate"
    assert failed[3].startswith("Error creating: pods ")
    assert failed[3].endswith('serviceaccount "missing" not found')


def test_an_unschedulable_pod_gets_one_warning() -> None:
    server = Cluster(seed=1, nodes=1)
    spec = {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "c", "image": "x"}]}
    server.create("pods", {"metadata": {"name": "ssd"}, "spec": spec}, namespace=NS)
    server.patch("pods", "ssd", {"metadata": {"labels": {"a": "b"}}}, namespace=NS)
    ((kind, reason, name, message),) = events(server)
    assert (kind, reason, name) == ("Warning", "FailedScheduling", "ssd")
    assert message.startswith("0/1 nodes are available: 1 node(s) didn't match")


def test_an_event_the_server_refuses_is_dropped_not_raised() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create("namespaces", {"metadata": {"name": "going"}})
    server.create(
        "pods",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        namespace="going",
    )
    server.delete("namespaces", "going")  # terminating: admission refuses new content
    server.advance(CONTAINER_START_SECONDS)  # the kubelet starts the pod; its Events bounce
    assert server.get("pods", "p", namespace="going")["status"]["phase"] == "Running"
    dropped = [entry for entry in server.trace if entry[0] == "event-dropped"]
    assert dropped
    assert {entry[3] for entry in dropped} == {403}


def test_events_print_as_kubectl_get_events_shows_them() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create(
        "pods",
        {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        namespace=NS,
    )
    event = server.list("events", namespace=NS, field_selector="reason=Scheduled")[0]
    now = parse_time(event["lastTimestamp"])
    assert now is not None
    assert [c["name"] for c in printers.EVENT_COLUMNS if c["priority"] == 0] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    assert printers.event_cells(event, now) == [
        "0s",
        "Normal",
        "Scheduled",
        "pod/web",
        "",
        "default-scheduler",
        "Successfully assigned default/web to node-0",
        "0s",
        1,
        event["metadata"]["name"],
    ]


def test_an_unknown_event_field_is_refused() -> None:
    server = APIServer(seed=1)
    with pytest.raises(st.StatusError) as refused:
        server.list("events", namespace=NS, field_selector="involvedObject.color=red")
    assert refused.value.code == 400
