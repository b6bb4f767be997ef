"""The server's fault verbs: each one changes exactly what a client sees, as the real failure does.

Covered here: injected HTTP errors (``fail_requests``), a stalled watch cache
(``stall_watch_cache``: stale lists and "Too large resource version"), in-stream 410
(``expire_watches(with_error=True)``), immediate bookmarks (``send_bookmarks``) and slow
consumers (``set_watch_buffer``). Everything goes through :func:`kubesim.wire.routes.handle`,
the request path every transport shares, so status codes, reasons and headers are the wire's.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubesim import APIServer
from kubesim.apiserver.watch import WatchStream
from kubesim.wire.routes import Request, Response, handle

JSON = dict[str, Any]
PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, **labels: str) -> JSON:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def request(server: APIServer, method: str, target: str, body: Any = None) -> Response:
    payload = b"" if body is None else orjson.dumps(body)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    return handle(server, Request.from_target(method, target, headers, payload))


def open_watch(server: APIServer, target: str) -> WatchStream:
    response = request(server, "GET", target)
    assert response.status == 200, response.body
    assert isinstance(response.body, WatchStream)
    return response.body


def events(stream: WatchStream) -> list[JSON]:
    """Everything readable now, without blocking."""
    out: list[JSON] = []
    while True:
        chunk = stream.poll()
        if not chunk:
            return out
        out.extend(orjson.loads(line) for line in chunk.splitlines())


def names(listing: JSON) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


# -- fail_requests ---------------------------------------------------------------------------------
def test_a_429_carries_retry_after_in_the_status_and_the_header(server: APIServer) -> None:
    server.fail_requests(1, code=429, verbs=["list"], retry_after=3)
    reply = request(server, "GET", PODS)
    assert reply.status == 429
    status = reply.json()
    assert (status["reason"], status["code"]) == ("TooManyRequests", 429)
    assert status["details"]["retryAfterSeconds"] == 3
    assert reply.headers["Retry-After"] == "3"
    # Only one request was failed: the next list is served.
    assert request(server, "GET", PODS).status == 200


def test_a_403_names_the_verb_resource_and_scope_as_rbac_does(server: APIServer) -> None:
    server.fail_requests(2, code=403, verbs=["list", "watch"])
    listing = request(server, "GET", PODS).json()
    assert listing["code"] == 403
    assert listing["reason"] == "Forbidden"
    assert listing["message"] == (
        'pods is forbidden: User "system:serviceaccount:default:kubesim-store" cannot list '
        'resource "pods" in API group "" in the namespace "default"'
    )
    watch = request(server, "GET", "/api/v1/pods?watch=1").json()
    assert "cannot watch resource" in watch["message"]
    assert "at the cluster scope" in watch["message"]
    assert "Retry-After" not in request(server, "GET", PODS).headers  # served again


def test_failures_match_only_their_verbs_and_resource(server: APIServer) -> None:
    server.fail_requests(1, code=500, verbs=["watch"], resource="configmaps")
    assert request(server, "GET", PODS + "?watch=1").status == 200
    assert request(server, "GET", "/api/v1/namespaces/default/configmaps").status == 200
    failed = request(server, "GET", "/api/v1/namespaces/default/configmaps?watch=1")
    assert failed.status == 500
    assert failed.json()["reason"] == "InternalError"
    assert server.request_failures.pending == 0


def test_writes_can_fail_too_and_nothing_is_stored(server: APIServer) -> None:
    server.fail_requests(1, code=503, verbs=["create"], retry_after=2)
    reply = request(server, "POST", PODS, pod("web"))
    assert reply.status == 503
    assert reply.headers["Retry-After"] == "2"
    assert names(request(server, "GET", PODS).json()) == []
    assert request(server, "POST", PODS, pod("web")).status == 201


def test_discovery_is_never_failed(server: APIServer) -> None:
    server.fail_requests(1, code=500, verbs=["list", "get"])
    assert request(server, "GET", "/api/v1").status == 200
    assert request(server, "GET", PODS).status == 500


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"count": 0}, "count must be an int >= 1, got count=0"),
        ({"code": 404}, "code must be one of [403, 429, 500, 503, 504], got code=404"),
        ({"verbs": "list"}, "verbs must be a collection of verb names, got verbs='list'"),
        ({"verbs": ["lsit"]}, "got verbs=['lsit']"),
        ({"retry_after": -1}, "retry_after must be an int >= 0 or None, got -1"),
    ],
)
def test_bad_arguments_say_which_and_what_was_expected(
    server: APIServer, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        server.fail_requests(**arguments)
    assert message in str(raised.value)


# -- stalled watch cache ---------------------------------------------------------------------------
def test_a_stalled_cache_serves_stale_lists_for_resource_version_zero(server: APIServer) -> None:
    server.create("pods", pod("old"), namespace="default")
    stalled_at = server.stall_watch_cache()
    server.create("pods", pod("new"), namespace="default")
    server.delete("pods", "old", namespace="default")
    stale = request(server, "GET", PODS + "?resourceVersion=0").json()
    assert names(stale) == ["old"]
    assert stale["metadata"]["resourceVersion"] == str(stalled_at)
    # A list with no resourceVersion is a consistent read of storage: the current state.
    assert names(request(server, "GET", PODS).json()) == ["new"]
    server.resume_watch_cache()
    assert names(request(server, "GET", PODS + "?resourceVersion=0").json()) == ["new"]


def test_a_consistent_list_waits_for_a_stalled_cache_then_is_current_from_1_31(
    server: APIServer,
) -> None:
    from kubesim.apiserver.versions import server_version
    from kubesim.apiserver.watch_cache import TOO_LARGE_WAIT

    server.create("pods", pod("old"), namespace="default")
    server.stall_watch_cache()
    server.create("pods", pod("new"), namespace="default")
    slow = request(server, "GET", PODS)
    assert slow.wait == TOO_LARGE_WAIT  # the cache's wait for storage's version, then storage
    assert names(slow.json()) == ["new", "old"]
    assert request(server, "GET", PODS + "?limit=1").wait == TOO_LARGE_WAIT
    assert request(server, "GET", PODS + "?resourceVersion=0").wait == 0.0  # stale, at once
    server_version("1.27").apply(server)  # before ConsistentListFromCache: straight from etcd
    assert request(server, "GET", PODS).wait == 0.0
    server_version("1.33").apply(server)
    server.resume_watch_cache()
    assert request(server, "GET", PODS).wait == 0.0  # a cache that has caught up answers now


def test_a_consistent_list_takes_the_cache_s_wait_in_virtual_time() -> None:
    pytest.importorskip("kubernetes")
    from kubernetes import client

    from kubesim import Simulation

    with Simulation(seed=1) as sim:
        sim.server.create("pods", pod("a"), namespace="default")
        core = client.CoreV1Api(sim.kubernetes_client())
        took: list[float] = []

        def lists() -> None:
            for _ in range(2):
                began = sim.server.clock.now()
                core.list_namespaced_pod("default")
                took.append(sim.server.clock.now() - began)
                sim.server.resume_watch_cache()

        sim.server.stall_watch_cache()
        sim.start(lists)  # runs until the thread waits: in the list, for 3 virtual seconds
        assert took == []
        sim.advance(10)
        assert took == [3.0, 0.0]


def test_a_stalled_cache_answers_too_large_for_newer_resource_versions(server: APIServer) -> None:
    stalled_at = server.stall_watch_cache()
    server.create("pods", pod("a"), namespace="default")
    newer = server.resource_version
    for target in (f"{PODS}?resourceVersion={newer}", f"{PODS}?watch=1&resourceVersion={newer}"):
        reply = request(server, "GET", target)
        assert reply.status == 504, target
        status = reply.json()
        assert status["message"] == (
            f"Timeout: Too large resource version: {newer}, current: {stalled_at}"
        )
        assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        assert reply.headers["Retry-After"] == "1"
    assert server.open_watches == 0  # the refused watch left nothing behind


def test_watches_get_nothing_while_stalled_then_every_held_event_in_order(
    server: APIServer,
) -> None:
    stream = open_watch(server, PODS + f"?watch=1&resourceVersion={server.resource_version}")
    server.stall_watch_cache()
    for name in ("a", "b"):
        server.create("pods", pod(name), namespace="default")
    server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    assert events(stream) == []
    assert server.resume_watch_cache() == 3
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events(stream)]
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a")]


def test_a_watch_opened_during_a_stall_starts_from_the_cache_state(server: APIServer) -> None:
    server.create("pods", pod("a"), namespace="default")
    server.stall_watch_cache()
    server.create("pods", pod("b"), namespace="default")
    stream = open_watch(server, PODS + "?watch=1")
    assert [e["object"]["metadata"]["name"] for e in events(stream)] == ["a"]
    server.resume_watch_cache()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events(stream)] == [
        ("ADDED", "b")
    ]


def test_compaction_during_a_stall_keeps_what_the_cache_still_owes(server: APIServer) -> None:
    stream = open_watch(server, PODS + f"?watch=1&resourceVersion={server.resource_version}")
    server.stall_watch_cache()
    server.create("pods", pod("a"), namespace="default")
    server.compact()
    # The stalled snapshot is still servable, and the held event still arrives.
    assert names(request(server, "GET", PODS + "?resourceVersion=0").json()) == []
    server.resume_watch_cache()
    assert [e["type"] for e in events(stream)] == ["ADDED"]


# -- watch ends, bookmarks, slow consumers ---------------------------------------------------------
def test_expire_with_error_sends_a_410_event_after_queued_events_then_closes(
    server: APIServer,
) -> None:
    stream = open_watch(server, PODS + f"?watch=1&resourceVersion={server.resource_version}")
    server.create("pods", pod("a"), namespace="default")
    assert server.expire_watches(with_error=True) == 1
    seen = events(stream)
    assert [e["type"] for e in seen] == ["ADDED", "ERROR"]
    assert (seen[1]["object"]["code"], seen[1]["object"]["reason"]) == (410, "Expired")
    assert stream.poll() == b""  # then a clean end of the stream
    assert server.open_watches == 0


def test_a_watch_can_end_cleanly_at_once_with_no_event(server: APIServer) -> None:
    """What client-go's reflector calls a "very short watch" (ended in under a second with no
    event, which it treats as an error and backs off from): expire_watches() right after the
    watch opened, no virtual time passed."""
    stream = open_watch(server, PODS + f"?watch=1&resourceVersion={server.resource_version}")
    opened = server.clock.now()
    assert server.expire_watches() == 1
    assert stream.poll() == b""  # a clean end: no event, no ERROR
    assert server.clock.now() == opened
    assert server.open_watches == 0


def test_send_bookmarks_reaches_only_watches_that_allow_them(server: APIServer) -> None:
    server.create("pods", pod("a"), namespace="default")
    rv = server.resource_version
    with_bookmarks = open_watch(
        server, f"{PODS}?watch=1&resourceVersion={rv}&allowWatchBookmarks=1"
    )
    without = open_watch(server, f"{PODS}?watch=1&resourceVersion={rv}")
    assert server.send_bookmarks() == 1
    (bookmark,) = events(with_bookmarks)
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"] == {"resourceVersion": str(rv)}
    assert events(without) == []


def test_a_smaller_watch_buffer_closes_a_watch_that_is_behind(server: APIServer) -> None:
    slow = open_watch(server, PODS + f"?watch=1&resourceVersion={server.resource_version}")
    for index in range(5):
        server.create("pods", pod(f"p{index}"), namespace="default")
    assert server.set_watch_buffer(3) == 1
    assert slow.poll() == b""  # closed cleanly: the client re-lists or re-watches
    fast = open_watch(server, PODS + f"?watch=1&resourceVersion={server.resource_version}")
    server.create("pods", pod("q"), namespace="default")
    assert [e["type"] for e in events(fast)] == ["ADDED"]
    with pytest.raises(ValueError, match="events must be an int >= 1 or None, got events=0"):
        server.set_watch_buffer(0)


def test_fault_verbs_enter_the_trace(server: APIServer) -> None:
    before = server.trace.count
    server.fail_requests(1, code=429)
    request(server, "GET", PODS)
    server.stall_watch_cache()
    server.resume_watch_cache()
    server.send_bookmarks()
    recorded = [entry for entry in server.trace if entry[0] in ("fault", "injected-failure")]
    assert [entry[1] for entry in recorded][-5:] == [
        "fail_requests",
        "list",
        "stall_watch_cache",
        "resume_watch_cache",
        "send_bookmarks",
    ]
    assert server.trace.count > before
