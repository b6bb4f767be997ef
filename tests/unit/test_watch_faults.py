"""The server's watch fault paths and watch semantics, one example each, in process.

These are the fast, deterministic killers of the server mutants in
``tests/mutation/mutants_server.py``: the conformance suite checks the same behaviour over HTTP,
but against a ``kubesim serve`` subprocess, which a mutant copy of the package never reaches.
Every watch is read through ``routes.handle`` (the wire's query parsing included) and time is
virtual: a test that says "without time passing" checks the clock.
"""

from __future__ import annotations

from typing import Any

import orjson

from kubesim import APIServer
from kubesim.apiserver.server import AutojumpWait
from kubesim.apiserver.watch import WatchStream
from kubesim.wire.routes import Request, handle
from kubesim.workload import make_pod

JSON = dict[str, Any]


def watch(server: APIServer, query: str) -> WatchStream:
    response = handle(
        server, Request.from_target("GET", f"/api/v1/namespaces/default/pods?{query}")
    )
    assert response.status == 200, response.json()
    assert isinstance(response.body, WatchStream)
    return response.body


def events(chunk: bytes | None) -> list[tuple[str, str, int]]:
    """(type, name, resourceVersion) of each line of ``chunk``."""
    assert chunk, f"expected watch lines, got {chunk!r}"
    parsed = [orjson.loads(line) for line in chunk.splitlines()]
    return [
        (
            e["type"],
            e["object"]["metadata"].get("name", ""),
            int(e["object"]["metadata"]["resourceVersion"]),
        )
        for e in parsed
    ]


def read_all(stream: WatchStream) -> list[tuple[str, str, int]]:
    """Every line ready now (without waiting)."""
    seen: list[tuple[str, str, int]] = []
    while (chunk := stream.poll()) not in (None, b""):
        seen += events(chunk)
    return seen


def create(server: APIServer, name: str, **labels: str) -> int:
    server.create("pods", make_pod(name, "default", labels=labels or None))
    return server.resource_version


def ends(server: APIServer) -> list[tuple[Any, ...]]:
    return [entry[1:] for entry in server.trace if entry[0] == "watch-end"]


# -- slow consumers (apiserver cache_watcher.go) ---------------------------------------------------
def test_a_watcher_whose_client_does_not_read_is_closed_once_its_buffer_is_exceeded() -> None:
    server = APIServer(seed=1, watch_buffer=3, wait_policy=AutojumpWait())
    start = server.resource_version
    stream = watch(server, f"watch=1&resourceVersion={start}&timeoutSeconds=600")
    for name in ("a", "b", "c"):
        create(server, name)
    assert server.open_watches == 1, "3 unread events fit a buffer of 3"
    create(server, "d")
    # "Forcing watcher close due to unresponsiveness": the server ends the watch itself ...
    assert server.open_watches == 0, "the 4th unread event must close the watch"
    assert ends(server) == [(1, "closed")]
    # ... and the client, reading at last, sees a clean end of the stream (not a dropped
    # connection), at once: the unread events are gone with the watcher, and no time passed.
    assert stream.next_chunk() == b""
    assert server.clock.now() == 0


def test_a_client_that_keeps_reading_is_never_closed_as_slow() -> None:
    server = APIServer(seed=1, watch_buffer=3, wait_policy=AutojumpWait())
    stream = watch(server, f"watch=1&resourceVersion={server.resource_version}")
    seen = []
    for index in range(10):
        create(server, f"p{index}")
        seen += read_all(stream)
    assert [name for _, name, _ in seen] == [f"p{i}" for i in range(10)]
    assert server.open_watches == 1


def test_a_rewatch_from_the_last_seen_rv_after_a_slow_close_gets_the_missed_events() -> None:
    server = APIServer(seed=1, watch_buffer=3, wait_policy=AutojumpWait())
    first = watch(server, f"watch=1&resourceVersion={server.resource_version}")
    last_seen = create(server, "a")
    assert events(first.poll()) == [("ADDED", "a", last_seen)]
    missed = [create(server, name) for name in ("b", "c", "d", "e")]
    assert first.next_chunk() == b""
    # What a reflector does after a clean end: watch again from the last RV it saw; the events
    # it missed come from the server's history, each once, in order.
    again = watch(server, f"watch=1&resourceVersion={last_seen}")
    assert read_all(again) == [("ADDED", name, rv) for name, rv in zip("bcde", missed, strict=True)]


def test_a_watch_resumed_from_further_back_than_its_buffer_replays_at_the_clients_pace() -> None:
    server = APIServer(seed=1, watch_buffer=3, wait_policy=AutojumpWait())
    start = server.resource_version
    missed = [create(server, f"p{index}") for index in range(10)]
    stream = watch(server, f"watch=1&resourceVersion={start}")
    # The replay is not live traffic: it waits for the client, however long it is.
    assert server.open_watches == 1
    assert read_all(stream) == [("ADDED", f"p{i}", rv) for i, rv in enumerate(missed)]
    # Live events past the replay count again: 4 unread ones close the watch.
    for name in ("x", "y", "z"):
        create(server, name)
    assert server.open_watches == 1
    create(server, "w")
    assert server.open_watches == 0
    assert stream.next_chunk() == b""


# -- faults: compaction ---------------------------------------------------------------------------
def test_a_watch_from_a_compacted_rv_ends_right_after_its_one_410_error_event() -> None:
    server = APIServer(seed=1, wait_policy=AutojumpWait())
    old = create(server, "a")
    create(server, "b")
    server.compact()
    stream = watch(server, f"watch=1&resourceVersion={old}&timeoutSeconds=600")
    (line,) = stream.next_chunk().splitlines()
    error = orjson.loads(line)
    assert error["type"] == "ERROR"
    assert (error["object"]["code"], error["object"]["reason"]) == (410, "Expired")
    # The handler returns after the ERROR (cacher.go): the end comes at once, not at the
    # watch's timeout 600 s of virtual time later.
    assert stream.poll() == b""
    assert server.clock.now() == 0
    assert ends(server) == [(1, "closed")]


# -- watch semantics ------------------------------------------------------------------------------
def test_a_watch_without_rv_starts_with_synthetic_added_events_in_key_order_with_rvs() -> None:
    server = APIServer(seed=1, wait_policy=AutojumpWait())
    rvs = {name: create(server, name) for name in ("b", "c", "a")}
    stream = watch(server, "watch=1")
    create(server, "d")
    assert read_all(stream) == [
        ("ADDED", "a", rvs["a"]),
        ("ADDED", "b", rvs["b"]),
        ("ADDED", "c", rvs["c"]),
        ("ADDED", "d", server.resource_version),
    ]


def test_a_selector_watch_sees_flips_out_as_deleted_and_flips_in_as_added() -> None:
    server = APIServer(seed=1, wait_policy=AutojumpWait())
    create(server, "web", app="a")
    stream = watch(
        server, f"watch=1&labelSelector=app%3Da&resourceVersion={server.resource_version}"
    )
    server.patch("pods", "web", {"metadata": {"labels": {"app": "b"}}}, namespace="default")
    out = server.resource_version
    server.patch("pods", "web", {"metadata": {"labels": {"app": "c"}}}, namespace="default")
    server.patch("pods", "web", {"metadata": {"labels": {"app": "a"}}}, namespace="default")
    back = server.resource_version
    server.patch(
        "pods", "web", {"metadata": {"labels": {"app": "a", "x": "1"}}}, namespace="default"
    )
    # cache_watcher.go convertToWatchEvent: leaving the selector is a DELETED (stamped with the
    # RV of the write that moved it out), a write outside it is nothing, coming back is ADDED.
    assert read_all(stream) == [
        ("DELETED", "web", out),
        ("ADDED", "web", back),
        ("MODIFIED", "web", server.resource_version),
    ]


def test_a_watch_from_a_future_rv_sends_only_events_after_it() -> None:
    server = APIServer(seed=1, wait_policy=AutojumpWait())
    future = server.resource_version + 2
    stream = watch(server, f"watch=1&resourceVersion={future}")
    create(server, "a")
    create(server, "b")
    assert stream.poll() is None, "events up to the requested RV are not sent"
    assert read_all(stream) == []
    rv = create(server, "c")
    assert read_all(stream) == [("ADDED", "c", rv)]
