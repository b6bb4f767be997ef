"""Watch semantics over raw HTTP: replay, initial events, expiry, bookmarks, selectors.

k8s-wire.md §1.2-§1.4, §2.1-§2.3 and behaviours 2-9. Streams are ended deterministically,
never by waiting: ``timeoutSeconds`` plus ``POST /kubesim/advance``. Because a clean close may
discard events not yet written, a test first reads up to a *sentinel* write it made last; the
ordered stream then proves nothing unexpected came before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .objects import configmap, configmaps, pod, pods
from .wire import Endpoint, WatchReader, is_named, query, rv_of, summary

MERGE = "application/merge-patch+json"
TIMEOUT = 900  # watch timeoutSeconds: far beyond any test's wall-clock time


def watch_path(base: str, **params: Any) -> str:
    return base + query(watch=1, timeoutSeconds=TIMEOUT, **params)


def end_by_timeout(api: Endpoint, *streams: WatchReader) -> None:
    """Move virtual time past every stream's deadline and check each ends cleanly and quietly."""
    api.advance(TIMEOUT + 1)
    for stream in streams:
        rest = [e for e in stream.read_to_end() if e["type"] != "BOOKMARK"]
        assert rest == [], f"events after the last expected one: {summary(rest)}"
        assert stream.end == "clean"


def without_bookmarks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] != "BOOKMARK"]


def relabel(api: Endpoint, path: str, **labels: str | None) -> str:
    """Merge-patch labels onto an object; the new resourceVersion."""
    return rv_of(api.ok("PATCH", path, {"metadata": {"labels": labels}}, content_type=MERGE))


def test_a_watch_from_rv_r_replays_history_then_live_events_in_order_exactly_once(
    api: Endpoint, ns: str
) -> None:
    r = rv_of(api.ok("POST", pods(ns), pod("a"), expect=201))
    history = [
        ("MODIFIED", "a", relabel(api, pods(ns, "a"), v="1")),
        ("ADDED", "b", rv_of(api.ok("POST", pods(ns), pod("b"), expect=201))),
        ("DELETED", "a", rv_of(api.ok("DELETE", pods(ns, "a")))),
    ]
    with api.watch(watch_path(pods(ns), resourceVersion=r)) as stream:
        stream.assert_watch_head()
        replayed = stream.read_events(len(history))
        live = [
            ("MODIFIED", "b", relabel(api, pods(ns, "b"), v="2")),
            ("ADDED", "c", rv_of(api.ok("POST", pods(ns), pod("c"), expect=201))),
            ("DELETED", "b", rv_of(api.ok("DELETE", pods(ns, "b")))),
            ("ADDED", "sentinel", rv_of(api.ok("POST", pods(ns), pod("sentinel"), expect=201))),
        ]
        events = stream.read_until(is_named("sentinel"))
        end_by_timeout(api, stream)

    assert int(r) < int(history[0][2])
    assert summary(replayed) == history
    assert summary(events) == live


def test_a_watch_without_rv_starts_with_synthetic_added_events_in_key_order_each_with_its_rv(
    api: Endpoint, ns: str
) -> None:
    created = {n: api.ok("POST", configmaps(ns), configmap(n), expect=201) for n in ("c", "a", "b")}
    created["c"] = api.ok("PATCH", configmaps(ns, "c"), {"data": {"v": "1"}}, content_type=MERGE)
    for rv_param in (None, "0"):
        with api.watch(watch_path(configmaps(ns), resourceVersion=rv_param)) as stream:
            stream.assert_watch_head()
            initial = stream.read_events(3)
            assert summary(initial) == [("ADDED", n, rv_of(created[n])) for n in ("a", "b", "c")]
            assert [e["object"] for e in initial] == [created[n] for n in ("a", "b", "c")]
            live = api.ok(
                "PATCH",
                configmaps(ns, "a"),
                {"data": {"v": rv_param or "unset"}},
                content_type=MERGE,
            )
            assert summary(stream.read_events(1)) == [("MODIFIED", "a", rv_of(live))]
            end_by_timeout(api, stream)
        created["a"] = live


def test_a_watch_from_a_compacted_rv_gets_one_410_error_event_then_a_clean_close(
    api: Endpoint, ns: str
) -> None:
    old = api.ok("POST", configmaps(ns), configmap("old"), expect=201)
    api.ok("POST", configmaps(ns), configmap("newer"), expect=201)
    floor = api.admin("compact")["compactedResourceVersion"]
    assert int(floor) > int(rv_of(old))

    with api.watch(watch_path(configmaps(ns), resourceVersion=rv_of(old))) as stream:
        stream.assert_watch_head()
        events = stream.read_to_end()

    assert stream.end == "clean"
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {rv_of(old)} ({floor})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]


def test_a_watch_from_the_compaction_floor_itself_is_still_served(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("a"), expect=201)
    floor = api.admin("compact")["compactedResourceVersion"]
    with api.watch(watch_path(configmaps(ns), resourceVersion=floor)) as stream:
        stream.assert_watch_head()
        added = api.ok("POST", configmaps(ns), configmap("b"), expect=201)
        assert summary(stream.read_events(1)) == [("ADDED", "b", rv_of(added))]
        end_by_timeout(api, stream)


def test_a_watch_from_a_future_rv_waits_for_it_and_sends_only_later_events(
    api: Endpoint, ns: str
) -> None:
    # cache_watcher.go process(): "only send events newer than resourceVersion".
    future = api.current_rv() + 2
    with api.watch(watch_path(configmaps(ns), resourceVersion=future)) as stream:
        stream.assert_watch_head()
        first = api.ok("POST", configmaps(ns), configmap("first"), expect=201)
        second = api.ok("POST", configmaps(ns), configmap("second"), expect=201)
        assert (int(rv_of(first)), int(rv_of(second))) == (future - 1, future)
        third = api.ok("POST", configmaps(ns), configmap("third"), expect=201)
        events = stream.read_until(is_named("third"))
        end_by_timeout(api, stream)
    assert summary(events) == [("ADDED", "third", rv_of(third))]


def test_timeout_seconds_ends_the_watch_with_a_clean_end_of_stream(api: Endpoint, ns: str) -> None:
    rv = str(api.current_rv())
    with api.watch(watch_path(configmaps(ns), resourceVersion=rv)) as stream:
        stream.assert_watch_head()
        api.advance(TIMEOUT - 100)
        added = api.ok("POST", configmaps(ns), configmap("still-open"), expect=201)
        assert summary(stream.read_events(1)) == [("ADDED", "still-open", rv_of(added))]
        end_by_timeout(api, stream)


def test_bookmarks_come_only_when_allow_watch_bookmarks_is_set_and_carry_only_the_rv(
    api: Endpoint, ns: str
) -> None:
    rv = str(api.current_rv())
    with (
        api.watch(
            watch_path(configmaps(ns), resourceVersion=rv, allowWatchBookmarks="true")
        ) as with_bookmarks,
        api.watch(watch_path(configmaps(ns), resourceVersion=rv)) as without,
    ):
        with_bookmarks.assert_watch_head()
        without.assert_watch_head()
        api.advance(61)  # at least one bookmark tick (every 60 s), far from the deadline
        (bookmark,) = with_bookmarks.read_events(1)
        assert bookmark == {
            "type": "BOOKMARK",
            "object": {
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": rv},
            },
        }
        added = api.ok("POST", configmaps(ns), configmap("after"), expect=201)
        assert summary(without.read_events(1)) == [("ADDED", "after", rv_of(added))]
        assert summary(without_bookmarks(with_bookmarks.read_until(is_named("after")))) == [
            ("ADDED", "after", rv_of(added))
        ]
        api.advance(TIMEOUT)
        assert without.read_to_end() == []
        assert without.end == "clean"
        assert {e["type"] for e in with_bookmarks.read_to_end()} <= {"BOOKMARK"}
        assert with_bookmarks.end == "clean"


def test_a_watch_list_ends_its_initial_events_with_the_annotated_bookmark_then_goes_live(
    api: Endpoint, make_namespace: Callable[[], str]
) -> None:
    ns, other = make_namespace(), make_namespace()
    created = {n: api.ok("POST", configmaps(ns), configmap(n), expect=201) for n in ("b", "a")}
    api.ok("POST", configmaps(other), configmap("elsewhere"), expect=201)
    current = str(api.current_rv())

    with api.watch(
        watch_path(
            configmaps(ns),
            sendInitialEvents="true",
            resourceVersionMatch="NotOlderThan",
            allowWatchBookmarks="true",
        )
    ) as stream:
        stream.assert_watch_head()
        initial = stream.read_events(3)
        assert [e["object"] for e in initial[:2]] == [created["a"], created["b"]]
        assert [e["type"] for e in initial[:2]] == ["ADDED", "ADDED"]
        assert initial[2] == {
            "type": "BOOKMARK",
            "object": {
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": {
                    "resourceVersion": current,
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            },
        }
        live = api.ok("POST", configmaps(ns), configmap("c"), expect=201)
        assert summary(without_bookmarks(stream.read_until(is_named("c")))) == [
            ("ADDED", "c", rv_of(live))
        ]
        end_by_timeout(api, stream)


def test_a_watch_list_without_allow_watch_bookmarks_sends_no_end_marker(
    api: Endpoint, ns: str
) -> None:
    a = api.ok("POST", configmaps(ns), configmap("a"), expect=201)
    with api.watch(
        watch_path(configmaps(ns), sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
    ) as stream:
        stream.assert_watch_head()
        sentinel = api.ok("POST", configmaps(ns), configmap("sentinel"), expect=201)
        events = stream.read_until(is_named("sentinel"))
        end_by_timeout(api, stream)
    assert summary(events) == [("ADDED", "a", rv_of(a)), ("ADDED", "sentinel", rv_of(sentinel))]


def test_send_initial_events_false_at_rv_zero_starts_at_the_current_state_without_added_events(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", configmaps(ns), configmap("existing"), expect=201)
    with api.watch(
        watch_path(
            configmaps(ns),
            resourceVersion="0",
            sendInitialEvents="false",
            resourceVersionMatch="NotOlderThan",
        )
    ) as stream:
        stream.assert_watch_head()
        sentinel = api.ok("POST", configmaps(ns), configmap("sentinel"), expect=201)
        events = stream.read_until(is_named("sentinel"))
        end_by_timeout(api, stream)
    assert summary(events) == [("ADDED", "sentinel", rv_of(sentinel))]


def test_send_initial_events_without_resource_version_match_is_a_422_on_list_options(
    api: Endpoint, ns: str
) -> None:
    with api.watch(configmaps(ns) + query(watch=1, sendInitialEvents="true")) as stream:
        assert stream.status == 422
        assert stream.headers.get("content-type") == "application/json"
        assert stream.json_body() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            "reason": "Invalid",
            "details": {
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": [
                    {
                        "reason": "FieldValueForbidden",
                        "message": "Forbidden: sendInitialEvents requires setting "
                        "resourceVersionMatch to NotOlderThan",
                        "field": "resourceVersionMatch",
                    }
                ],
            },
            "code": 422,
        }


def test_resource_version_match_on_a_watch_without_send_initial_events_is_a_422(
    api: Endpoint, ns: str
) -> None:
    with api.watch(
        configmaps(ns) + query(watch=1, resourceVersion="0", resourceVersionMatch="Exact")
    ) as stream:
        assert stream.status == 422
        status = stream.json_body()
    assert status["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, "
        'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]'
    )
    assert [c["reason"] for c in status["details"]["causes"]] == [
        "FieldValueForbidden",
        "FieldValueNotSupported",
    ]


def test_label_flips_out_of_a_selector_are_deleted_with_the_old_object_and_flips_in_are_added(
    api: Endpoint, ns: str
) -> None:
    rv = str(api.current_rv())
    with api.watch(watch_path(pods(ns), resourceVersion=rv, labelSelector="app=web")) as stream:
        stream.assert_watch_head()
        p1 = api.ok("POST", pods(ns), pod("p1", labels={"app": "web"}), expect=201)
        api.ok("POST", pods(ns), pod("p2", labels={"app": "db"}), expect=201)
        p2_in = api.ok(
            "PATCH", pods(ns, "p2"), {"metadata": {"labels": {"app": "web"}}}, content_type=MERGE
        )
        p1_out = api.ok(
            "PATCH", pods(ns, "p1"), {"metadata": {"labels": {"app": "db"}}}, content_type=MERGE
        )
        api.ok(
            "PATCH", pods(ns, "p1"), {"metadata": {"labels": {"tier": "x"}}}, content_type=MERGE
        )  # stays out: nothing
        p2_mod = api.ok(
            "PATCH", pods(ns, "p2"), {"metadata": {"labels": {"tier": "y"}}}, content_type=MERGE
        )
        p2_gone = api.ok("DELETE", pods(ns, "p2"))
        p3 = api.ok("POST", pods(ns), pod("p3", labels={"app": "web"}), expect=201)
        events = stream.read_until(is_named("p3"))
        end_by_timeout(api, stream)

    assert summary(events) == [
        ("ADDED", "p1", rv_of(p1)),
        ("ADDED", "p2", rv_of(p2_in)),
        ("DELETED", "p1", rv_of(p1_out)),
        ("MODIFIED", "p2", rv_of(p2_mod)),
        ("DELETED", "p2", rv_of(p2_gone)),
        ("ADDED", "p3", rv_of(p3)),
    ]
    assert events[1]["object"] == p2_in
    # Flip out: the object as it was (still matching), stamped with the new event's RV.
    old_state = dict(p1, metadata=dict(p1["metadata"], resourceVersion=rv_of(p1_out)))
    assert events[2]["object"] == old_state


def test_a_field_selector_on_spec_node_name_filters_watch_events(api: Endpoint, ns: str) -> None:
    rv = str(api.current_rv())
    with api.watch(
        watch_path(pods(ns), resourceVersion=rv, fieldSelector="spec.nodeName=node-a")
    ) as stream:
        stream.assert_watch_head()
        on_a = api.ok("POST", pods(ns), pod("on-a", node="node-a"), expect=201)
        api.ok("POST", pods(ns), pod("on-b", node="node-b"), expect=201)
        api.ok("POST", pods(ns), pod("unscheduled"), expect=201)
        api.ok("DELETE", pods(ns, "on-b"))
        gone = api.ok("DELETE", pods(ns, "on-a"))
        sentinel = api.ok("POST", pods(ns), pod("sentinel", node="node-a"), expect=201)
        events = stream.read_until(is_named("sentinel"))
        end_by_timeout(api, stream)
    assert summary(events) == [
        ("ADDED", "on-a", rv_of(on_a)),
        ("DELETED", "on-a", rv_of(gone)),
        ("ADDED", "sentinel", rv_of(sentinel)),
    ]


def test_a_watch_is_scoped_to_its_namespace(
    api: Endpoint, make_namespace: Callable[[], str]
) -> None:
    ns, other = make_namespace(), make_namespace()
    rv = str(api.current_rv())
    with api.watch(watch_path(configmaps(ns), resourceVersion=rv)) as stream:
        api.ok("POST", configmaps(other), configmap("elsewhere"), expect=201)
        mine = api.ok("POST", configmaps(ns), configmap("mine"), expect=201)
        events = stream.read_until(is_named("mine"))
        end_by_timeout(api, stream)
    assert summary(events) == [("ADDED", "mine", rv_of(mine))]


def test_a_named_object_watch_sees_only_that_object(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("target"), expect=201)
    api.ok("POST", configmaps(ns), configmap("other"), expect=201)
    rv = str(api.current_rv())
    paths = [
        watch_path(configmaps(ns, "target"), resourceVersion=rv),
        f"/api/v1/watch/namespaces/{ns}/configmaps/target"
        + query(resourceVersion=rv, timeoutSeconds=TIMEOUT),
    ]
    streams = [api.watch(path) for path in paths]
    try:
        for stream in streams:
            stream.assert_watch_head()
        api.ok("PATCH", configmaps(ns, "other"), {"data": {"v": "1"}}, content_type=MERGE)
        modified = api.ok(
            "PATCH", configmaps(ns, "target"), {"data": {"v": "1"}}, content_type=MERGE
        )
        api.ok("DELETE", configmaps(ns, "other"))
        deleted = api.ok("DELETE", configmaps(ns, "target"))["details"]
        assert deleted["name"] == "target"
        for stream in streams:
            events = stream.read_events(2)
            assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
                ("MODIFIED", "target"),
                ("DELETED", "target"),
            ]
            assert rv_of(events[0]["object"]) == rv_of(modified)
        end_by_timeout(api, *streams)
    finally:
        for stream in streams:
            stream.close()


def test_a_named_object_watch_without_rv_starts_with_only_that_object(
    api: Endpoint, ns: str
) -> None:
    for name in ("a", "target", "z"):
        api.ok("POST", configmaps(ns), configmap(name), expect=201)
    with api.watch(watch_path(configmaps(ns, "target"))) as stream:
        stream.assert_watch_head()
        (first,) = stream.read_events(1)
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "target")
        end_by_timeout(api, stream)


def test_a_named_watch_with_a_conflicting_name_field_selector_is_a_400(
    api: Endpoint, ns: str
) -> None:
    with api.watch(
        configmaps(ns, "target") + query(watch=1, fieldSelector="metadata.name=other")
    ) as stream:
        assert stream.status == 400
        status = stream.json_body()
    assert status["reason"] == "BadRequest"
    assert status["message"] == "fieldSelector metadata.name doesn't match requested name"
