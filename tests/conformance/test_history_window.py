"""A bounded history window (``kubesim serve --history-window 5``), without explicit compaction.

k8s-wire.md §1.3 and behaviour 3: a re-watch from an RV older than the window gets the 410
ERROR event ``too old resource version: X (Y)`` with Y the oldest deliverable RV minus one
(apiserver ``cacher/watch_cache_history.go``: refused iff ``X < oldest-1``); one inside the
window replays exactly the events after it. Lists at RVs or continue tokens that fell out of the
window are HTTP 410 (behaviour 14). This module runs its own server process.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import namespace_name, serve
from .objects import configmap, configmaps
from .wire import Endpoint, query, rv_of, summary

WINDOW = 5
TIMEOUT = 900


@pytest.fixture(scope="module")
def small() -> Iterator[Endpoint]:
    with serve("--history-window", str(WINDOW)) as endpoint:
        yield endpoint


@pytest.fixture
def small_ns(small: Endpoint, request: pytest.FixtureRequest) -> str:
    name = namespace_name(request.node.name)
    small.ok("POST", "/api/v1/namespaces", {"metadata": {"name": name}}, expect=201)
    return name


def test_the_admin_state_reports_the_configured_window(small: Endpoint) -> None:
    assert small.state()["historyWindow"] == WINDOW


def test_a_watch_inside_the_window_replays_and_one_just_outside_gets_the_410_error_event(
    small: Endpoint, small_ns: str
) -> None:
    rvs = [
        rv_of(small.ok("POST", configmaps(small_ns), configmap(f"c{i}"), expect=201))
        for i in range(8)
    ]
    state = small.state()
    newest = int(state["resourceVersion"])
    floor = int(state["compactedResourceVersion"])
    assert newest == int(rvs[-1])
    assert floor == newest - WINDOW

    with small.watch(
        configmaps(small_ns) + query(watch=1, resourceVersion=floor, timeoutSeconds=TIMEOUT)
    ) as inside:
        inside.assert_watch_head()
        replayed = inside.read_events(WINDOW)
        small.advance(TIMEOUT + 1)
        assert inside.read_to_end() == []
        assert inside.end == "clean"
    assert summary(replayed) == [("ADDED", f"c{i}", rvs[i]) for i in range(3, 8)]

    too_old = floor - 1
    with small.watch(configmaps(small_ns) + query(watch=1, resourceVersion=too_old)) as outside:
        outside.assert_watch_head()
        events = outside.read_to_end()
    assert outside.end == "clean"
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {too_old} ({floor})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]


def test_a_continue_token_whose_rv_left_the_window_is_a_410_expired(
    small: Endpoint, small_ns: str
) -> None:
    for i in range(3):
        small.ok("POST", configmaps(small_ns), configmap(f"c{i}"), expect=201)
    first = small.ok("GET", configmaps(small_ns) + query(limit=1))
    second = small.ok(
        "GET", configmaps(small_ns) + query(limit=1, **{"continue": first["metadata"]["continue"]})
    )
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    for i in range(WINDOW + 1):
        small.ok("POST", configmaps(small_ns), configmap(f"later{i}"), expect=201)

    reply = small.get(
        configmaps(small_ns) + query(limit=1, **{"continue": second["metadata"]["continue"]})
    )

    assert reply.status == 410
    assert reply.json()["reason"] == "Expired"
    assert reply.json()["message"] == (
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter."
    )


def test_an_exact_list_is_served_inside_the_window_and_expired_outside(
    small: Endpoint, small_ns: str
) -> None:
    first = small.ok("POST", configmaps(small_ns), configmap("a", {"v": "1"}), expect=201)
    small.ok(
        "PATCH",
        configmaps(small_ns, "a"),
        {"data": {"v": "2"}},
        content_type="application/merge-patch+json",
    )
    inside = small.ok(
        "GET",
        configmaps(small_ns) + query(resourceVersion=rv_of(first), resourceVersionMatch="Exact"),
    )
    assert inside["items"][0]["data"] == {"v": "1"}
    for i in range(WINDOW):
        small.ok("POST", configmaps(small_ns), configmap(f"filler{i}"), expect=201)
    outside = small.get(
        configmaps(small_ns) + query(resourceVersion=rv_of(first), resourceVersionMatch="Exact")
    )
    assert outside.status == 410
    assert outside.json()["message"] == "The resourceVersion for the provided list is too old."
