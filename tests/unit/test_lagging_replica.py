"""A lagging API server replica behind the same endpoint: lists from the cache and watches go to
it or to the primary, drawn per request; it serves its past, and catches up when told.

kubernetes#59848: in an HA control plane each kube-apiserver has its own watch cache; a list
with ``resourceVersion=0`` answered by one that lags takes a client back in time.
"""

from __future__ import annotations

import pytest
from test_server_faults import PODS, events, names, open_watch, pod, request

from kubesim import APIServer


@pytest.fixture
def server() -> APIServer:
    return APIServer(seed=3)


def _history(server: APIServer) -> tuple[int, int]:
    """Three pods a, b, c; then b deleted and d created. Returns (RV before, RV after)."""
    for name in ("a", "b", "c"):
        server.create("pods", pod(name), namespace="default")
    before = server.resource_version
    server.delete("pods", "b", namespace="default")
    server.create("pods", pod("d"), namespace="default")
    return before, server.resource_version


def _lists(server: APIServer, target: str, count: int) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for _ in range(count):
        listing = request(server, "GET", target).json()
        out.append((listing["metadata"]["resourceVersion"], tuple(names(listing))))
    return out


def test_lists_from_the_cache_go_back_in_time_when_the_replica_answers(server: APIServer) -> None:
    before, now = _history(server)
    assert server.lag_replica(2) == before
    answers = _lists(server, PODS + "?resourceVersion=0", 12)
    past = (str(before), ("a", "b", "c"))  # b deleted, d not yet created: the replica's past
    present = (str(now), ("a", "c", "d"))
    assert set(answers) == {past, present}  # both replicas answer, drawn per request
    # A consistent list (no resourceVersion) is read from storage, as from etcd: never stale.
    assert set(_lists(server, PODS, 6)) == {present}
    # A NotOlderThan list newer than the replica is refused by it, never answered stale.
    replies = {
        request(
            server, "GET", f"{PODS}?resourceVersion={now}&resourceVersionMatch=NotOlderThan"
        ).status
        for _ in range(12)
    }
    assert replies == {200, 504}
    assert server.catch_up_replica() == 2
    assert set(_lists(server, PODS + "?resourceVersion=0", 6)) == {present}


def test_the_same_seed_routes_the_same_requests_to_the_replica() -> None:
    def run() -> tuple[list[tuple[str, tuple[str, ...]]], str]:
        server = APIServer(seed=9)
        _history(server)
        server.lag_replica(2)
        answers = _lists(server, PODS + "?resourceVersion=0", 10)
        return answers, server.trace.hexdigest()

    assert run() == run()


def test_a_watch_on_the_replica_starts_in_its_past_and_gets_the_rest_on_catch_up(
    server: APIServer,
) -> None:
    _history(server)
    server.lag_replica(2)
    streams = [open_watch(server, PODS + "?watch=1") for _ in range(8)]
    first = [[e["object"]["metadata"]["name"] for e in events(s)] for s in streams]
    assert ["a", "b", "c"] in first  # the replica's past
    assert ["a", "c", "d"] in first  # the primary's present
    on_replica = [s for s, seen in zip(streams, first, strict=True) if seen == ["a", "b", "c"]]
    server.create("pods", pod("e"), namespace="default")
    assert all(events(s) == [] for s in on_replica)  # nothing newer than where it is
    assert server.catch_up_replica() == 3
    caught_up = [(e["type"], e["object"]["metadata"]["name"]) for e in events(on_replica[0])]
    assert caught_up == [("DELETED", "b"), ("ADDED", "d"), ("ADDED", "e")]


def test_a_watch_from_a_version_the_replica_has_not_reached_is_too_large(
    server: APIServer,
) -> None:
    _, now = _history(server)
    server.lag_replica(2)
    statuses = {
        request(server, "GET", f"{PODS}?watch=1&resourceVersion={now}").status for _ in range(10)
    }
    assert statuses == {200, 504}


def test_watch_faults_and_compaction_reach_the_replica(server: APIServer) -> None:
    before, _ = _history(server)
    server.lag_replica(2)
    for _ in range(6):
        open_watch(server, PODS + "?watch=1")
    assert {len(cache.watchers()) > 0 for cache in server.watch_caches} == {True}
    # Compaction keeps what the replica still owes its watches.
    server.compact()
    assert server.storage.compacted_rv == before
    assert server.expire_watches() == 6
    assert server.open_watches == 0
    server.catch_up_replica()
    assert server.watch_caches == [server.watch_cache]  # an idle replica is forgotten


def test_without_a_lagging_replica_nothing_is_drawn(server: APIServer) -> None:
    """The fault costs nothing when it is off: no draw, no trace record per request."""
    _history(server)
    digest = server.trace.hexdigest()
    _lists(server, PODS + "?resourceVersion=0", 3)
    assert server.trace.hexdigest() == digest


def test_a_lag_of_less_than_one_write_is_refused_by_name(server: APIServer) -> None:
    with pytest.raises(ValueError, match=r"events must be an int >= 1, got events=0"):
        server.lag_replica(0)


def test_a_client_pinned_to_the_replica_always_gets_its_past(server: APIServer) -> None:
    before, now = _history(server)
    server.lag_replica(2, pinned=True)
    assert set(_lists(server, PODS + "?resourceVersion=0", 4)) == {(str(before), ("a", "b", "c"))}
    assert request(server, "GET", f"{PODS}?watch=1&resourceVersion={now}").status == 504
