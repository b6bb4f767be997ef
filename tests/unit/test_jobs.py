"""Jobs: the registry's generated selector, and the Job controller (kubesim.cluster.jobs)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.jobs import _ranges

NS = "default"
JSON = dict[str, Any]


def job(name: str = "pi", **spec: Any) -> JSON:
    template = {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "perl"}]}
    }
    return {"metadata": {"name": name}, "spec": {"template": template, **spec}}


def pods(server: APIServer) -> list[JSON]:
    return server.list("pods", namespace=NS)


def finish(server: APIServer, pod: JSON, phase: str) -> None:
    """What a kubelet writes when the pod's containers exit."""
    pod = server.get("pods", pod["metadata"]["name"], namespace=NS)
    pod["status"] = {"phase": phase}
    server.update("pods", pod, namespace=NS, subresource="status")


def status(server: APIServer, name: str = "pi") -> JSON:
    got: JSON = server.get("jobs", name, namespace=NS)["status"]
    return got


def conditions(server: APIServer, name: str = "pi") -> dict[str, tuple[str, str]]:
    return {
        c["type"]: (c["status"], c["reason"]) for c in status(server, name).get("conditions", [])
    }


def events(server: APIServer) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in server.list("events", namespace=NS)]


def test_a_job_gets_a_selector_on_its_uid_and_its_template_the_labels_it_selects() -> None:
    created = APIServer().create("jobs", job(), namespace=NS)
    uid = created["metadata"]["uid"]
    generated = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid,
        "job-name": "pi",
    }
    assert created["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": uid}
    }
    assert created["spec"]["template"]["metadata"]["labels"] == generated
    assert list(created["spec"]["template"]["metadata"]["labels"]) == sorted(generated)
    # A Job without labels of its own shows its template's; one with labels keeps them.
    assert created["metadata"]["labels"] == generated
    labelled = job("own")
    labelled["metadata"]["labels"] = {"team": "a"}
    assert APIServer().create("jobs", labelled, namespace=NS)["metadata"]["labels"] == {"team": "a"}
    # manualSelector: the client's selector and labels, as sent.
    manual = job("manual", manualSelector=True, selector={"matchLabels": {"app": "x"}})
    manual["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    made = APIServer().create("jobs", manual, namespace=NS)
    assert made["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert made["spec"]["template"]["metadata"]["labels"] == {"app": "x"}


def test_a_job_runs_its_pods_and_completes_when_enough_succeed() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("jobs", job(completions=3, parallelism=2), namespace=NS)
    running = pods(server)
    assert len(running) == 2
    owner = running[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "pi", True)
    assert running[0]["metadata"]["labels"]["job-name"] == "pi"
    assert status(server)["active"] == 2
    assert "startTime" in status(server)
    finish(server, running[0], "Succeeded")
    # One succeeded: two left to run, two at a time.
    assert status(server)["succeeded"] == 1
    assert status(server)["active"] == 2
    for pod in pods(server):
        if pod["status"].get("phase") != "Succeeded":
            finish(server, pod, "Succeeded")
    final = status(server)
    assert final["succeeded"] == 3
    assert "active" not in final
    assert "completionTime" in final
    assert conditions(server) == {
        "SuccessCriteriaMet": ("True", "CompletionsReached"),
        "Complete": ("True", "CompletionsReached"),
    }
    assert list(final) == [
        "conditions",
        "startTime",
        "completionTime",
        "succeeded",
        "terminating",
        "uncountedTerminatedPods",
        "ready",
    ]
    assert events(server).count(("Completed", "Job completed")) == 1
    assert sum(1 for reason, _ in events(server) if reason == "SuccessfulCreate") == 3
    # A finished Job makes no more pods, whatever happens to them.
    server.delete("pods", pods(server)[0]["metadata"]["name"], namespace=NS)
    assert len(pods(server)) == 2


def test_a_job_whose_pods_fail_past_its_backoff_limit_fails() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("jobs", job(backoffLimit=1, parallelism=1), namespace=NS)
    finish(server, pods(server)[0], "Failed")
    assert status(server)["failed"] == 1
    assert "Failed" not in conditions(server)  # one failure is within the limit: a new pod,
    server.clock.advance(10)  # after the failure back-off
    active = [p for p in pods(server) if p["status"].get("phase") != "Failed"]
    assert len(active) == 1
    finish(server, active[0], "Failed")
    assert status(server)["failed"] == 2
    assert conditions(server) == {
        "FailureTarget": ("True", "BackoffLimitExceeded"),
        "Failed": ("True", "BackoffLimitExceeded"),
    }
    assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in events(server)
    assert all(p["status"].get("phase") == "Failed" for p in pods(server))


def test_a_failed_pod_is_replaced_after_a_back_off_that_doubles() -> None:
    """10 s after the first failure, 20 s after the second: in between the Job has no active
    pod, counts the failures and has no condition (a retry pending), as on a cluster."""
    server = Cluster(seed=1, controllers=True)
    server.create("jobs", job(backoffLimit=6, parallelism=1), namespace=NS)
    for failures, wait in ((1, 10), (2, 20)):
        [running] = [p for p in pods(server) if p["status"].get("phase") != "Failed"]
        finish(server, running, "Failed")
        assert status(server)["failed"] == failures
        assert "active" not in status(server)
        assert conditions(server) == {}
        server.clock.advance(wait - 1)
        assert all(p["status"].get("phase") == "Failed" for p in pods(server))
        server.clock.advance(1)
        assert len(pods(server)) == failures + 1
        assert status(server)["active"] == 1


def test_suspending_deletes_the_active_pods_and_resuming_runs_them_again() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("jobs", job(parallelism=2, completions=2), namespace=NS)
    assert len(pods(server)) == 2
    server.patch("jobs", "pi", {"spec": {"suspend": True}}, namespace=NS)
    assert pods(server) == []
    assert conditions(server) == {"Suspended": ("True", "JobSuspended")}
    assert "active" not in status(server)
    server.patch("jobs", "pi", {"spec": {"suspend": False}}, namespace=NS)
    assert len(pods(server)) == 2
    assert conditions(server) == {"Suspended": ("False", "JobResumed")}
    assert [r for r, _ in events(server) if r in ("Suspended", "Resumed")] == [
        "Suspended",
        "Resumed",
    ]
    # A Job created suspended makes no pod and has no start time.
    server.create("jobs", job("later", suspend=True), namespace=NS)
    assert "startTime" not in status(server, "later")
    assert conditions(server, "later") == {"Suspended": ("True", "JobSuspended")}


def test_an_indexed_job_runs_each_index_once_and_lists_the_completed_ones() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("jobs", job(completionMode="Indexed", completions=4, parallelism=2), namespace=NS)
    first = sorted(pods(server), key=lambda p: p["metadata"]["name"])
    index = "batch.kubernetes.io/job-completion-index"
    assert [p["metadata"]["annotations"][index] for p in first] == ["0", "1"]
    assert [p["metadata"]["labels"][index] for p in first] == ["0", "1"]
    assert [p["spec"]["hostname"] for p in first] == ["pi-0", "pi-1"]
    assert first[0]["metadata"]["name"].startswith("pi-0-")
    finish(server, first[1], "Succeeded")
    assert status(server)["completedIndexes"] == "1"
    running = {
        p["metadata"]["annotations"][index]
        for p in pods(server)
        if p["status"].get("phase") not in ("Succeeded",)
    }
    assert running == {"0", "2"}  # the lowest index not done and not running
    for pod in pods(server):
        if pod["metadata"]["annotations"][index] in ("0", "2"):
            finish(server, pod, "Succeeded")
    assert status(server)["completedIndexes"] == "0-2"
    (last,) = [p for p in pods(server) if p["status"].get("phase") != "Succeeded"]
    assert last["metadata"]["annotations"][index] == "3"
    finish(server, last, "Succeeded")
    assert status(server)["completedIndexes"] == "0-3"
    assert conditions(server)["Complete"] == ("True", "CompletionsReached")


def test_a_work_queue_job_stops_once_one_pod_succeeded_and_the_others_end() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("jobs", job(parallelism=2), namespace=NS)  # no completions: a work queue
    assert server.get("jobs", "pi", namespace=NS)["spec"].get("completions") is None
    first, second = pods(server)
    finish(server, first, "Succeeded")
    assert "Complete" not in conditions(server)  # the other pod still works
    assert len(pods(server)) == 2  # and no new one is made
    finish(server, second, "Succeeded")
    assert conditions(server)["Complete"] == ("True", "CompletionsReached")


@pytest.mark.parametrize(
    ("indexes", "text"),
    [
        ([], ""),
        ([0], "0"),
        ([0, 1, 2], "0-2"),
        ([0, 2, 3, 5], "0,2-3,5"),
        ([1, 2, 4, 5, 6], "1-2,4-6"),
    ],
)
def test_completed_indexes_are_written_as_ranges(indexes: list[int], text: str) -> None:
    assert _ranges(indexes) == text
