"""The Deployment and ReplicaSet controllers and the garbage collector
(``Cluster(controllers=True)``, on under ``kubesim serve``): a Deployment becomes a
ReplicaSet becomes pods, a rollout moves to a new ReplicaSet, status says what is ready, and
deleting an owner deletes what it owns."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import APIServer
from kubesim.cluster import Cluster, workloads
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS
from kubesim.cluster.workloads import POD_TEMPLATE_HASH, REVISION, pod_template_hash

JSON = dict[str, Any]
NS = "default"


def deployment(
    name: str = "web", replicas: int = 3, image: str = "nginx:1.25", **spec: Any
) -> JSON:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
            **spec,
        },
    }


def names(server: APIServer, plural: str) -> list[str]:
    return [o["metadata"]["name"] for o in server.list(plural, namespace=NS)]


def started(server: APIServer) -> None:
    server.advance(CONTAINER_START_SECONDS)


def stopped(server: APIServer) -> None:
    """Long enough for the kubelet to stop what is terminating and delete it."""
    server.advance(CONTAINER_STOP_SECONDS)


def roll_out(server: APIServer, image: str) -> None:
    """A new pod template, as `kubectl set image` writes it."""
    containers = [{"name": "main", "image": image}]
    server.patch(
        "deployments",
        "web",
        {"spec": {"template": {"spec": {"containers": containers}}}},
        namespace=NS,
        patch_type="application/strategic-merge-patch+json",
    )


def conditions(obj: JSON) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in obj["status"].get("conditions", [])}


def test_a_deployment_becomes_a_replica_set_of_pods_that_become_ready() -> None:
    server = Cluster(seed=1, nodes=2, controllers=True)
    created = server.create("deployments", deployment(), namespace=NS)
    template_hash = pod_template_hash(created["spec"]["template"])
    (rs,) = server.list("replicasets", namespace=NS)
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["metadata"]["labels"] == {"app": "web", POD_TEMPLATE_HASH: template_hash}
    assert rs["metadata"]["annotations"][REVISION] == "1"
    (owner,) = rs["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Deployment",
        "web",
        created["metadata"]["uid"],
        True,
    )
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", POD_TEMPLATE_HASH: template_hash}
    pods = server.list("pods", namespace=NS)
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        assert pod["metadata"]["labels"][POD_TEMPLATE_HASH] == template_hash
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert pod["spec"]["nodeName"] in ("node-0", "node-1")
    waiting = server.get("deployments", "web", namespace=NS)
    assert waiting["metadata"]["annotations"][REVISION] == "1"
    assert waiting["status"]["replicas"] == 3
    assert waiting["status"]["unavailableReplicas"] == 3
    assert conditions(waiting)["Available"] == ("False", "MinimumReplicasUnavailable")
    assert conditions(waiting)["Progressing"] == ("True", "ReplicaSetUpdated")
    started(server)
    ready = server.get("deployments", "web", namespace=NS)
    status = ready["status"]
    assert status["observedGeneration"] == ready["metadata"]["generation"]
    assert (status["replicas"], status["updatedReplicas"]) == (3, 3)
    assert (status["readyReplicas"], status["availableReplicas"]) == (3, 3)
    assert "unavailableReplicas" not in status
    assert conditions(ready) == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }
    rs_status = server.get("replicasets", rs["metadata"]["name"], namespace=NS)["status"]
    assert rs_status == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }


def test_scaling_creates_and_deletes_pods_the_not_ready_first() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(replicas=2), namespace=NS)
    started(server)
    running = set(names(server, "pods"))
    server.patch("deployments", "web", {"spec": {"replicas": 4}}, namespace=NS)
    assert len(names(server, "pods")) == 4
    server.patch("deployments", "web", {"spec": {"replicas": 2}}, namespace=NS)
    stopped(server)
    # The two pods not started yet went first.
    assert set(names(server, "pods")) == running
    # Of two running pods, the one not ready goes first, whichever is newer.
    first, second = sorted(running)
    status = server.get("pods", first, namespace=NS)["status"]
    for condition in status["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"
    server.update(
        "pods", {"metadata": {"name": first}, "status": status}, namespace=NS, subresource="status"
    )
    server.patch("deployments", "web", {"spec": {"replicas": 1}}, namespace=NS)
    stopped(server)
    assert names(server, "pods") == [second]
    server.patch("deployments", "web", {"spec": {"replicas": 0}}, namespace=NS)
    # Terminating for the kubelet's stop, then gone.
    assert server.get("pods", second, namespace=NS)["metadata"]["deletionGracePeriodSeconds"] == 30
    stopped(server)
    assert names(server, "pods") == []
    status = server.get("deployments", "web", namespace=NS)["status"]
    assert "replicas" not in status
    assert conditions({"status": status})["Progressing"] == ("True", "NewReplicaSetAvailable")


def test_a_new_template_rolls_out_to_a_new_replica_set_and_retires_the_old_once_ready() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(replicas=2), namespace=NS)
    started(server)
    (old,) = names(server, "replicasets")
    roll_out(server, "nginx:1.27")
    replica_sets = {rs["metadata"]["name"]: rs for rs in server.list("replicasets", namespace=NS)}
    assert len(replica_sets) == 2
    (new,) = set(replica_sets) - {old}
    assert replica_sets[new]["metadata"]["annotations"][REVISION] == "2"
    # Until the new pods are ready the old ones keep serving.
    assert len(names(server, "pods")) == 4
    assert (
        server.get("deployments", "web", namespace=NS)["metadata"]["annotations"][REVISION] == "2"
    )
    started(server)
    assert server.get("replicasets", old, namespace=NS)["spec"]["replicas"] == 0
    stopped(server)
    pods = server.list("pods", namespace=NS)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.27"}
    assert len(pods) == 2
    status = server.get("deployments", "web", namespace=NS)["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (2, 2, 2)


def test_recreate_retires_the_old_pods_before_the_new_ones_are_made() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create(
        "deployments", deployment(replicas=1, strategy={"type": "Recreate"}), namespace=NS
    )
    started(server)
    (old_pod,) = names(server, "pods")
    rv = server.storage.rv
    roll_out(server, "nginx:1.27")
    stopped(server)
    stream = server.watch("pods", namespace=NS, resource_version=str(rv))
    lines = [line for chunk in iter(stream.poll, None) for line in chunk.splitlines()]
    kinds = [(line.split(b'"')[3].decode(), old_pod.encode() in line) for line in lines]
    # The old pod terminates (marked, stopped, deleted); only then is a new one made.
    assert kinds[:4] == [
        ("MODIFIED", True),
        ("MODIFIED", True),
        ("DELETED", True),
        ("ADDED", False),
    ]


def test_deleting_an_owner_deletes_what_it_owns_unless_another_owner_remains() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(), namespace=NS)
    keeper = server.create("configmaps", {"metadata": {"name": "keeper"}}, namespace=NS)
    (rs,) = server.list("replicasets", namespace=NS)
    pod = server.list("pods", namespace=NS)[0]
    second_owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "keeper",
        "uid": keeper["metadata"]["uid"],
    }
    server.patch(
        "pods",
        pod["metadata"]["name"],
        {"metadata": {"ownerReferences": [*pod["metadata"]["ownerReferences"], second_owner]}},
        namespace=NS,
    )
    server.delete("deployments", "web", namespace=NS)
    assert names(server, "replicasets") == []
    stopped(server)
    # Both other pods went with their ReplicaSet; the one a ConfigMap also owns stays, without
    # its reference to the ReplicaSet that is gone (the collector's patch).
    assert names(server, "pods") == [pod["metadata"]["name"]]
    (kept,) = server.list("pods", namespace=NS)
    assert kept["metadata"]["ownerReferences"] == [second_owner]
    server.delete("configmaps", "keeper", namespace=NS)
    stopped(server)
    assert names(server, "pods") == []
    del rs


def test_a_rollback_makes_the_old_replica_set_current_again_with_its_revisions_kept() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(image="nginx:1"), namespace=NS)
    started(server)
    (first,) = server.list("replicasets", namespace=NS)
    roll_out(server, "nginx:2")
    started(server)
    assert len(server.list("replicasets", namespace=NS)) == 2
    # kubectl rollout undo: a JSON patch putting the old template back, as Go prints it
    # (creationTimestamp: null, the hash label removed), here with an empty map the stored
    # template leaves out: Semantic.DeepEqual holds an empty map equal to an absent one.
    template = first["spec"]["template"]
    labels = {k: v for k, v in template["metadata"]["labels"].items() if k != POD_TEMPLATE_HASH}
    undone = {**template, "metadata": {**template["metadata"], "creationTimestamp": None}}
    undone["metadata"]["labels"] = labels
    assert "nodeSelector" not in template["spec"]
    undone["spec"] = {**template["spec"], "nodeSelector": {}}
    server.patch(
        "deployments",
        "web",
        [{"op": "replace", "path": "/spec/template", "value": undone}],
        namespace=NS,
        patch_type="application/json-patch+json",
    )
    started(server)
    replica_sets = {rs["metadata"]["name"]: rs for rs in server.list("replicasets", namespace=NS)}
    assert len(replica_sets) == 2  # no third ReplicaSet: the first one is current again
    reused = replica_sets[first["metadata"]["name"]]
    annotations = reused["metadata"]["annotations"]
    assert annotations[REVISION] == "3"
    assert annotations["deployment.kubernetes.io/revision-history"] == "1"
    assert reused["spec"]["replicas"] == 3
    (web,) = server.list("deployments", namespace=NS)
    assert web["metadata"]["annotations"][REVISION] == "3"
    stopped(server)  # the second ReplicaSet's pods stop and go
    images = {p["spec"]["containers"][0]["image"] for p in server.list("pods", namespace=NS)}
    assert images == {"nginx:1"}


def test_an_orphaning_delete_leaves_the_dependents_without_the_owner() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(), namespace=NS)
    (rs,) = server.list("replicasets", namespace=NS)
    pods = names(server, "pods")
    writes: list[tuple[str, str, str, list[str]]] = []
    server.commit_listeners.append(
        lambda e: writes.append(
            (e.type, e.resource.kind, e.key[1], e.new.obj["metadata"].get("finalizers") or [])
        )
    )
    answer = server.delete("deployments", "web", namespace=NS, propagation_policy="Orphan")
    # The answer is the owner marked with the orphan finalizer, as the apiserver answers.
    assert answer["metadata"]["finalizers"] == ["orphan"]
    assert answer["metadata"]["deletionTimestamp"]
    stopped(server)
    assert names(server, "deployments") == []
    (orphaned,) = server.list("replicasets", namespace=NS)
    assert orphaned["metadata"]["uid"] == rs["metadata"]["uid"]
    assert "ownerReferences" not in orphaned["metadata"]
    assert names(server, "pods") == pods  # still owned by their ReplicaSet, which lives on
    # The ReplicaSet lost its owner before the Deployment went.
    assert writes[0] == ("MODIFIED", "Deployment", "web", ["orphan"])
    assert writes[1][:3] == ("MODIFIED", "ReplicaSet", rs["metadata"]["name"])
    assert writes[2][:3] == ("DELETED", "Deployment", "web")


def test_a_foreground_delete_keeps_the_owner_until_its_blocking_dependents_are_gone() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(), namespace=NS)
    started(server)
    (rs,) = names(server, "replicasets")
    answer = server.delete("deployments", "web", namespace=NS, propagation_policy="Foreground")
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    # The ReplicaSet has pods of its own, so it is deleted in the foreground too, and the pods
    # (on a kubelet's node) take their grace period: everything is still there, marked.
    (marked,) = server.list("replicasets", namespace=NS)
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert marked["metadata"]["deletionTimestamp"]
    assert names(server, "deployments") == ["web"]
    assert all(p["metadata"].get("deletionTimestamp") for p in server.list("pods", namespace=NS))
    stopped(server)
    # Once the kubelet has deleted the pods, the ReplicaSet goes, and then the Deployment.
    assert names(server, "pods") == []
    assert names(server, "replicasets") == []
    assert names(server, "deployments") == []
    del rs


def test_jobs_and_replication_controllers_orphan_by_default_and_others_cascade() -> None:
    server = Cluster(seed=1, controllers=True)

    def job(name: str) -> JSON:
        return {
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }
                }
            },
        }

    once = server.create("jobs", job("once"), namespace=NS)
    (made,) = server.list("pods", namespace=NS)  # the Job controller's pod
    assert made["metadata"]["ownerReferences"][0]["uid"] == once["metadata"]["uid"]
    answer = server.delete("jobs", "once", namespace=NS)  # delete_namespaced_job with no body
    assert answer["metadata"]["finalizers"] == ["orphan"]
    assert names(server, "jobs") == []
    (pod,) = server.list("pods", namespace=NS)
    assert "ownerReferences" not in pod["metadata"]
    # With Background named, as kubectl sends it, the Job's pods go with it.
    server.create("jobs", job("twice"), namespace=NS)
    assert len(server.list("pods", namespace=NS)) == 2
    server.delete("jobs", "twice", namespace=NS, propagation_policy="Background")
    assert names(server, "pods") == [pod["metadata"]["name"]]


def test_a_bad_propagation_policy_is_named() -> None:
    server = Cluster(seed=1, controllers=True)
    with pytest.raises(ValueError, match=r"propagation_policy='Sideways'"):
        server.delete("namespaces", "default", propagation_policy="Sideways")


def test_a_paused_deployment_makes_no_replica_set_and_controllers_are_off_by_default() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True)
    server.create("deployments", deployment(paused=True), namespace=NS)
    assert names(server, "replicasets") == []
    assert server.get("deployments", "web", namespace=NS)["status"]["observedGeneration"] == 1
    quiet = Cluster(seed=1, nodes=1)
    quiet.create("deployments", deployment(), namespace=NS)
    assert names(quiet, "replicasets") == []
    assert names(quiet, "pods") == []


def test_controllers_that_never_settle_are_held_back_and_the_request_completes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("deployments", deployment(replicas=1), namespace=NS)
    writes = server.storage.rv
    # A status that changes on every sync: each write queues the ReplicaSet again.
    ticks = iter(range(1_000_000))
    monkeypatch.setattr(workloads, "is_ready", lambda pod: next(ticks) % 2 == 0)
    monkeypatch.setattr(workloads, "MAX_SYNCS_PER_DRAIN", 50)
    (rs,) = names(server, "replicasets")
    server.patch("replicasets", rs, {"metadata": {"labels": {"a": "b"}}}, namespace=NS)
    assert 10 < server.storage.rv - writes < 200


def test_the_same_seed_makes_the_same_pods() -> None:
    def run(seed: int) -> tuple[str, list[str]]:
        server = Cluster(seed=seed, nodes=2, controllers=True)
        server.create("deployments", deployment(), namespace=NS)
        started(server)
        server.patch("deployments", "web", {"spec": {"replicas": 1}}, namespace=NS)
        return server.trace.hexdigest(), names(server, "pods")

    assert run(3) == run(3)
    assert run(3)[1] != run(4)[1]


@pytest.mark.parametrize("count", [None, 0, 1])
def test_the_template_hash_is_stable_safe_and_moved_by_the_collision_count(
    count: int | None,
) -> None:
    template = deployment()["spec"]["template"]
    value = pod_template_hash(template, count)
    assert value == pod_template_hash(template, count)
    assert value
    assert set(value) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert len(value) <= 10
    if count is not None:
        assert value != pod_template_hash(template, None)


def test_a_refused_pod_is_a_replica_failure_not_a_failed_request() -> None:
    server = Cluster(seed=1, nodes=1, controllers=True, service_accounts=True)
    web = deployment(replicas=2)
    web["spec"]["template"]["spec"]["serviceAccountName"] = "builder"
    server.create("deployments", web, namespace=NS)  # the client's write succeeds
    (rs,) = server.list("replicasets", namespace=NS)
    (condition,) = rs["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "ReplicaFailure",
        "True",
        "FailedCreate",
    )
    # Named by the generateName it was sent with, as admission refuses it.
    assert condition["message"] == (
        f'pods "{rs["metadata"]["name"]}-" is forbidden: error looking up service account '
        'default/builder: serviceaccount "builder" not found'
    )
    assert names(server, "pods") == []
    # The next write to the ReplicaSet syncs it again, as the controller's retry would.
    server.create("serviceaccounts", {"metadata": {"name": "builder"}}, namespace=NS)
    server.patch(
        "replicasets", rs["metadata"]["name"], {"metadata": {"labels": {"x": "y"}}}, namespace=NS
    )
    assert len(names(server, "pods")) == 2
    assert (
        "conditions"
        not in server.get("replicasets", rs["metadata"]["name"], namespace=NS)["status"]
    )
