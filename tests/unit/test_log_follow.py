"""A followed container log stays open while the container runs, ends when it stops, and is
cut, silenced and ended by the faults that reach watches (kubesim.apiserver.log_follow)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.apiserver.watch import WatchDropped, WatchStream
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS, CONTAINER_STOP_SECONDS
from kubesim.wire.routes import Request, handle

PODS = "/api/v1/namespaces/default/pods"


def running(*names: str) -> Cluster:
    server = Cluster(seed=1, nodes=1)
    for name in names:
        spec = {"containers": [{"name": "main", "image": "busybox"}]}
        server.create("pods", {"metadata": {"name": name}, "spec": spec}, namespace="default")
    server.advance(CONTAINER_START_SECONDS)
    return server


def follow(server: Cluster, name: str, query: str = "follow=true") -> WatchStream:
    response = handle(server, Request.from_target("GET", f"{PODS}/{name}/log?{query}"))
    assert response.status == 200
    assert response.content_type == "text/plain"
    assert isinstance(response.body, WatchStream), response.body
    return response.body


def test_a_followed_log_stays_open_while_the_container_runs_and_ends_when_it_stops() -> None:
    server = running("job", "other")
    stream = follow(server, "job")
    assert stream.poll() is None  # open, nothing printed yet
    # No watch: what a store watches is what the oracles expect it to hold.
    assert (server.watchers(), server.open_watches) == ([], 0)
    server.patch("pods", "other", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    server.patch("pods", "job", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    assert stream.poll() is None  # a write that leaves the container running
    server.delete("pods", "job", namespace="default")
    assert stream.poll() is None  # the grace period: the container still runs
    server.advance(CONTAINER_STOP_SECONDS)
    assert stream.poll() == b""  # the kubelet stopped it: a clean end
    ends = [record for record in server.trace.recent if record[0] == "watch-end"]
    assert ends[-1] == ("watch-end", stream.ident, "closed")


STOPPED = {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}


def test_a_followed_log_ends_when_its_container_exits_though_the_pod_stays() -> None:
    server = running("job")
    stream = follow(server, "job")
    status = {"containerStatuses": [{"name": "main", **STOPPED}]}
    server.patch("pods", "job", {"status": status}, namespace="default", subresource="status")
    assert stream.poll() == b""
    assert server.get("pods", "job", namespace="default")["metadata"]["name"] == "job"


def test_a_log_not_followed_or_of_a_stopped_container_is_answered_at_once() -> None:
    server = running("job")
    answer = handle(server, Request.from_target("GET", f"{PODS}/job/log"))
    assert (answer.status, answer.body) == (200, b"")
    status = {"containerStatuses": [{"name": "main", **STOPPED}]}
    server.patch("pods", "job", {"status": status}, namespace="default", subresource="status")
    answer = handle(server, Request.from_target("GET", f"{PODS}/job/log?follow=true"))
    assert (answer.status, answer.body) == (200, b"")


@pytest.mark.parametrize(
    ("fault", "ending"),
    [
        (lambda s: s.drop_watches(), "cut"),
        (lambda s: s.expire_watches(), "end"),
        (lambda s: s.expire_watches(with_error=True), "end"),  # no JSON line in a log
        (lambda s: (s.silence_watches(30), s.advance(30)), "cut"),
    ],
    ids=["drop", "expire", "expire-with-error", "silence"],
)
def test_the_watch_faults_cut_or_end_a_followed_log(fault: Any, ending: str) -> None:
    server = running("job")
    stream = follow(server, "job", "follow=true&container=main")
    fault(server)
    if ending == "cut":
        with pytest.raises(WatchDropped):
            stream.poll()
    else:
        assert stream.poll() == b""


def test_a_silent_log_hears_nothing_until_its_cut_even_the_container_stopping() -> None:
    server = running("job")
    stream = follow(server, "job")
    server.silence_watches(60)
    server.delete("pods", "job", namespace="default", grace_period_seconds=0)
    assert stream.poll() is None
    server.advance(60)
    with pytest.raises(WatchDropped):
        stream.poll()


def test_a_stalled_watch_cache_does_not_hold_a_log_open() -> None:
    server = running("job")
    stream = follow(server, "job")
    server.stall_watch_cache()
    server.delete("pods", "job", namespace="default", grace_period_seconds=0)
    assert stream.poll() == b""
