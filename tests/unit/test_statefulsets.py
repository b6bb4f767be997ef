"""The StatefulSet controller (``Cluster(nodes=N, controllers=True)``): pods ``{set}-{n}`` made
one at a time once the one before is ready, claims from the templates, scale down from the top,
rolling updates from the highest ordinal through ControllerRevisions, and the status ``kubectl
rollout status`` reads."""

from __future__ import annotations

from typing import Any

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS

JSON = dict[str, Any]
NS = "default"


def statefulset(name: str = "db", replicas: int = 3, **spec: Any) -> JSON:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "postgres:16"}]},
            },
            **spec,
        },
    }


def pods(server: APIServer) -> dict[str, JSON]:
    return {p["metadata"]["name"]: p for p in server.list("pods", namespace=NS)}


def phases(server: APIServer) -> dict[str, str]:
    return {
        name: "Terminating" if p["metadata"].get("deletionTimestamp") else p["status"]["phase"]
        for name, p in pods(server).items()
    }


def server() -> APIServer:
    return Cluster(seed=1, nodes=2, controllers=True)


def test_ordered_pods_are_made_one_at_a_time_each_once_the_one_before_is_ready() -> None:
    api = server()
    api.create("statefulsets", statefulset(), namespace=NS)
    seen = [phases(api)]
    for _ in range(3):
        api.advance(CONTAINER_START_SECONDS)
        seen.append(phases(api))
    assert seen == [
        {"db-0": "Pending"},
        {"db-0": "Running", "db-1": "Pending"},
        {"db-0": "Running", "db-1": "Running", "db-2": "Pending"},
        {"db-0": "Running", "db-1": "Running", "db-2": "Running"},
    ]
    pod = pods(api)["db-1"]
    revision = api.get("statefulsets", "db", namespace=NS)["status"]["updateRevision"]
    assert pod["metadata"]["labels"] == {
        "app": "db",
        "controller-revision-hash": revision,
        "statefulset.kubernetes.io/pod-name": "db-1",
        "apps.kubernetes.io/pod-index": "1",
    }
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("db-1", "db")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    status = api.get("statefulsets", "db", namespace=NS)["status"]
    assert status == {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
        "availableReplicas": 3,
    }
    revisions = api.list("controllerrevisions", namespace=NS)
    assert [(r["metadata"]["name"], r["revision"]) for r in revisions] == [(revision, 1)]
    reasons = [
        e["message"] for e in api.list("events", namespace=NS) if e["reason"] == "SuccessfulCreate"
    ]
    assert reasons == [f"create Pod db-{i} in StatefulSet db successful" for i in range(3)]


def test_parallel_pods_are_made_at_once_from_the_ordinals_start() -> None:
    api = server()
    spec = statefulset(podManagementPolicy="Parallel", ordinals={"start": 5})["spec"]
    api.create("statefulsets", {"metadata": {"name": "db"}, "spec": spec}, namespace=NS)
    assert phases(api) == {"db-5": "Pending", "db-6": "Pending", "db-7": "Pending"}


def test_each_claim_template_becomes_a_claim_per_pod_mounted_and_kept() -> None:
    api = server()
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    api.create("statefulsets", statefulset(replicas=2, volumeClaimTemplates=[claim]), namespace=NS)
    api.advance(1)
    claims = api.list("persistentvolumeclaims", namespace=NS)
    assert [c["metadata"]["name"] for c in claims] == ["data-db-0", "data-db-1"]
    assert claims[0]["metadata"]["labels"] == {"app": "db"}
    volumes = pods(api)["db-0"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in volumes
    api.delete("statefulsets", "db", namespace=NS)
    api.advance(1)
    assert pods(api) == {}
    assert len(api.list("persistentvolumeclaims", namespace=NS)) == 2  # Retain


def test_scale_down_removes_the_highest_ordinal_first_one_at_a_time() -> None:
    api = server()
    api.create("statefulsets", statefulset(), namespace=NS)
    api.advance(3 * CONTAINER_START_SECONDS)
    api.patch("statefulsets", "db", {"spec": {"replicas": 1}}, namespace=NS)
    assert phases(api) == {"db-0": "Running", "db-1": "Running", "db-2": "Terminating"}
    api.advance(CONTAINER_STOP_SECONDS)
    assert phases(api) == {"db-0": "Running", "db-1": "Terminating"}
    api.advance(CONTAINER_STOP_SECONDS)
    assert phases(api) == {"db-0": "Running"}
    assert api.get("statefulsets", "db", namespace=NS)["status"]["replicas"] == 1


def test_a_new_template_rolls_out_from_the_highest_ordinal_to_a_new_revision() -> None:
    api = server()
    api.create("statefulsets", statefulset(), namespace=NS)
    api.advance(3 * CONTAINER_START_SECONDS)
    old = api.get("statefulsets", "db", namespace=NS)["status"]["updateRevision"]
    image = {
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "postgres:17"}]}}}
    }
    api.patch("statefulsets", "db", image, namespace=NS)
    new = api.get("statefulsets", "db", namespace=NS)["status"]["updateRevision"]
    assert new != old
    order = []
    for _ in range(20):
        api.advance(CONTAINER_STOP_SECONDS)
        for name, pod in sorted(pods(api).items()):
            if pod["metadata"]["labels"]["controller-revision-hash"] == new and name not in order:
                order.append(name)
    assert order == ["db-2", "db-1", "db-0"]
    status = api.get("statefulsets", "db", namespace=NS)["status"]
    assert (status["currentRevision"], status["updatedReplicas"], status["readyReplicas"]) == (
        new,
        3,
        3,
    )
    assert pods(api)["db-0"]["spec"]["containers"][0]["image"] == "postgres:17"
    revisions = {
        r["metadata"]["name"]: r["revision"] for r in api.list("controllerrevisions", namespace=NS)
    }
    assert revisions == {old: 1, new: 2}


def test_on_delete_and_a_partition_hold_pods_on_their_revision() -> None:
    api = server()
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    api.create("statefulsets", statefulset(updateStrategy=strategy), namespace=NS)
    api.advance(3 * CONTAINER_START_SECONDS)
    image = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "v2"}]}}}}
    api.patch("statefulsets", "db", image, namespace=NS)
    api.advance(10)
    images = {n: p["spec"]["containers"][0]["image"] for n, p in pods(api).items()}
    assert images == {"db-0": "postgres:16", "db-1": "postgres:16", "db-2": "v2"}
    on_delete = Cluster(seed=1, nodes=1, controllers=True)
    on_delete.create("statefulsets", statefulset(updateStrategy={"type": "OnDelete"}), namespace=NS)
    on_delete.advance(3 * CONTAINER_START_SECONDS)
    on_delete.patch("statefulsets", "db", image, namespace=NS)
    on_delete.advance(10)
    assert {p["spec"]["containers"][0]["image"] for p in pods(on_delete).values()} == {
        "postgres:16"
    }


def test_going_back_to_an_earlier_template_renumbers_its_revision_as_the_newest() -> None:
    api = server()
    api.create("statefulsets", statefulset(replicas=1), namespace=NS)
    api.advance(CONTAINER_START_SECONDS)
    first = api.get("statefulsets", "db", namespace=NS)["status"]["updateRevision"]

    def image(tag: str) -> JSON:
        containers = [{"name": "main", "image": f"postgres:{tag}"}]
        return {"spec": {"template": {"spec": {"containers": containers}}}}

    api.patch("statefulsets", "db", image("17"), namespace=NS)
    api.advance(2)
    api.patch("statefulsets", "db", image("16"), namespace=NS)  # what rollout undo writes
    api.advance(2)
    status = api.get("statefulsets", "db", namespace=NS)["status"]
    assert status["updateRevision"] == status["currentRevision"] == first  # the same name
    numbers = {
        r["metadata"]["name"]: r["revision"] for r in api.list("controllerrevisions", namespace=NS)
    }
    assert numbers[first] == 3
    assert sorted(numbers.values()) == [2, 3]
