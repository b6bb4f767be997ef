"""Examples of the APIServer's Python API: verbs, Status errors, watches, time and faults.

The error texts are spelled out here (not imported from kubesim) because clients match on
``code``, ``reason`` and sometimes ``message``: a change in wording must fail a test. They are
apimachinery's (``pkg/api/errors/errors.go``) and apiserver's, as k8s-wire.md §1.5 lists them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest

import kubesim
from kubesim import APIServer, StatusError
from kubesim.apiserver.server import AutojumpWait
from kubesim.apiserver.watch import WatchDropped, WatchStream
from kubesim.wire.routes import Request, Response, handle

JSON = dict[str, Any]

# The ``server`` fixture (tests/conftest.py) is a fresh APIServer(seed=1).

OPTIMISTIC_LOCK = (
    'Operation cannot be fulfilled on pods "web": the object has been modified; please apply '
    "your changes to the latest version and try again"
)
SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def pod(name: str = "web", **metadata: Any) -> JSON:
    return {
        "metadata": {"name": name, **metadata},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def lines(chunk: bytes) -> list[JSON]:
    assert chunk.endswith(b"\n")
    return [orjson.loads(line) for line in chunk[:-1].split(b"\n")]


def get(server: APIServer, target: str) -> Response:
    return handle(server, Request.from_target("GET", target))


def watch(server: APIServer, target: str) -> WatchStream:
    response = get(server, target)
    assert response.status == 200
    assert isinstance(response.body, WatchStream)
    return response.body


# -- verbs and their errors -----------------------------------------------------------------------
def test_create_get_update_patch_delete_round_trip_with_a_new_rv_per_write(
    server: APIServer,
) -> None:
    created = server.create("pods", pod(labels={"app": "a"}), namespace="default")
    assert created["kind"] == "Pod"
    assert created["metadata"]["namespace"] == "default"
    assert server.get("pods", "web", namespace="default") == created
    rv = int(created["metadata"]["resourceVersion"])
    assert rv == server.resource_version

    created["metadata"]["labels"] = {"app": "b"}
    updated = server.update("pods", created, namespace="default")
    assert int(updated["metadata"]["resourceVersion"]) == rv + 1
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]

    patched = server.patch(
        "pods", "web", {"metadata": {"labels": {"tier": "x"}}}, namespace="default"
    )
    assert patched["metadata"]["labels"] == {"app": "b", "tier": "x"}
    assert int(patched["metadata"]["resourceVersion"]) == rv + 2

    assert [p["metadata"]["name"] for p in server.list("pods", label_selector="tier=x")] == ["web"]
    deleted = server.delete("pods", "web", namespace="default")
    assert deleted["kind"] == "Pod"  # pods answer DELETE with the object (ReturnDeletedObject)
    assert int(deleted["metadata"]["resourceVersion"]) == rv + 3
    assert server.list("pods") == []


def test_a_create_shares_nothing_with_the_callers_body_or_the_returned_copy(
    server: APIServer,
) -> None:
    # The create path copies only the body's top level and metadata and keeps the encoding:
    # neither what the caller sent, nor what it got back, nor what a reader got may alias
    # what is stored (or each other).
    body = pod("web", labels={"app": "web"})
    created = server.create("pods", body, namespace="default")
    assert body["metadata"] == {"name": "web", "labels": {"app": "web"}}  # untouched
    assert "status" not in body
    assert "restartPolicy" not in body["spec"]
    body["spec"]["containers"][0]["image"] = "changed-by-caller"
    body["metadata"]["labels"]["app"] = "changed-by-caller"
    created["spec"]["containers"][0]["image"] = "changed-by-caller"
    read = server.get("pods", "web", namespace="default")
    read["spec"]["containers"][0]["image"] = "changed-by-reader"
    stored = server.get("pods", "web", namespace="default")
    assert stored["spec"]["containers"][0]["image"] == "busybox"
    assert stored["metadata"]["labels"] == {"app": "web"}
    assert stored["spec"]["restartPolicy"] == "Always"
    assert stored["status"]["phase"] == "Pending"
    assert stored == {**created, "spec": stored["spec"]}


def test_a_write_without_a_copy_answers_with_what_is_stored_and_changes_nothing_else(
    server: APIServer,
) -> None:
    # copy=False is for callers that write by the thousand and read nothing back (the
    # scenario's steps): the answer is what a get answers, and the same write with a copy
    # would have stored the same thing.
    created = server.create("pods", pod("web"), namespace="default", copy=False)
    assert created == server.get("pods", "web", namespace="default")
    patch = {"metadata": {"labels": {"v": "2"}}}
    patched = server.patch("pods", "web", patch, namespace="default", copy=False)
    assert patched == server.get("pods", "web", namespace="default")
    assert patched["metadata"]["labels"] == {"v": "2"}
    copied = server.patch("pods", "web", {"metadata": {"labels": {"v": "3"}}}, namespace="default")
    copied["metadata"]["labels"]["v"] = "changed-by-caller"  # a copy: the stored one is not it
    assert server.get("pods", "web", namespace="default")["metadata"]["labels"] == {"v": "3"}


def test_a_body_json_cannot_hold_is_a_type_error_naming_obj_and_stores_nothing(
    server: APIServer,
) -> None:
    rv = server.resource_version
    bad = {"metadata": {"name": "c"}, "data": {"when": object()}}
    with pytest.raises(TypeError, match=r"obj must be a JSON object .*: Type is not JSON"):
        server.create("configmaps", bad, namespace="default")
    assert server.resource_version == rv
    assert server.list("configmaps", namespace="default") == []


def test_list_items_are_the_stored_bytes_without_kind_and_api_version(server: APIServer) -> None:
    # Built-in list items drop kind/apiVersion; the server cuts them off the stored encoding
    # instead of re-encoding. The result must be byte-identical to encoding the item itself.
    server.create("pods", pod("a", labels={"x": "1"}), namespace="default")
    tricky = {"name": "c", "annotations": {"x": '","apiVersion":"v9","'}}
    server.create("configmaps", {"metadata": tricky, "data": {"k": '\\"v'}}, namespace="default")
    for plural in ("pods", "configmaps"):
        response = get(server, f"/api/v1/namespaces/default/{plural}")
        for item in orjson.loads(response.body)["items"]:
            assert "kind" not in item
            assert "apiVersion" not in item
        stored = server.storage.items(server.resource(plural))
        for _, version in stored:
            untyped = {k: v for k, v in version.obj.items() if k not in ("kind", "apiVersion")}
            assert version.item_json(keep_type=False) == orjson.dumps(untyped)


@pytest.mark.parametrize(
    "encoded",
    [
        b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}',
        b'{"kind":"Pod","apiVersion":"v1"}',
        b'{"kind":"P\\"od","apiVersion":"v1","metadata":{}}',
        b'{"kind":"Pod","apiVersion":"v\\",1","metadata":{}}',
        b'{"apiVersion":"v1","kind":"Pod","metadata":{}}',
        b'{"metadata":{"name":"a"},"kind":"Pod","apiVersion":"v1"}',
    ],
)
def test_the_list_item_form_of_any_encoding_equals_encoding_the_item(encoded: bytes) -> None:
    from kubesim.apiserver.storage import Stored

    untyped = {k: v for k, v in orjson.loads(encoded).items() if k not in ("kind", "apiVersion")}
    assert Stored.encoded(encoded, 1).item_json(keep_type=False) == orjson.dumps(untyped)


def test_deleting_a_kind_without_returned_objects_answers_a_success_status(
    server: APIServer,
) -> None:
    cm = server.create("configmaps", {"metadata": {"name": "cfg"}}, namespace="default")
    status = server.delete("configmaps", "cfg", namespace="default")
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "cfg", "kind": "configmaps", "uid": cm["metadata"]["uid"]},
    }


def test_every_verb_on_a_missing_object_is_404_not_found(server: APIServer) -> None:
    calls: list[Callable[[], JSON]] = [
        lambda: server.get("pods", "nope", namespace="default"),
        lambda: server.delete("pods", "nope", namespace="default"),
        lambda: server.patch("pods", "nope", {}, namespace="default"),
        lambda: server.update("pods", pod("nope"), namespace="default"),
    ]
    for call in calls:
        with pytest.raises(StatusError) as caught:
            call()
        assert caught.value.code == 404
        assert caught.value.reason == "NotFound"
        assert caught.value.status["message"] == 'pods "nope" not found'
        assert caught.value.status["details"] == {"name": "nope", "kind": "pods"}


def test_creating_in_a_missing_namespace_is_404_for_the_namespace(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.create("pods", pod(), namespace="nowhere")
    assert caught.value.code == 404
    assert caught.value.status["message"] == 'namespaces "nowhere" not found'


def test_creating_an_existing_name_is_409_already_exists(server: APIServer) -> None:
    server.create("pods", pod(), namespace="default")
    with pytest.raises(StatusError) as caught:
        server.create("pods", pod(), namespace="default")
    assert caught.value.code == 409
    assert caught.value.reason == "AlreadyExists"
    assert caught.value.status["message"] == 'pods "web" already exists'
    assert caught.value.status["details"] == {"name": "web", "kind": "pods"}


def test_an_update_with_a_stale_rv_is_409_conflict_with_the_optimistic_lock_message(
    server: APIServer,
) -> None:
    stale = server.create("pods", pod(), namespace="default")
    server.patch("pods", "web", {"metadata": {"labels": {"app": "a"}}}, namespace="default")
    writes: list[Callable[[], JSON]] = [
        lambda: server.update("pods", stale, namespace="default"),
        lambda: server.patch(
            "pods",
            "web",
            {"metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]}},
            namespace="default",
        ),
    ]
    for write in writes:
        with pytest.raises(StatusError) as caught:
            write()
        assert caught.value.code == 409
        assert caught.value.reason == "Conflict"
        assert caught.value.status["message"] == OPTIMISTIC_LOCK


def test_a_pod_without_containers_is_422_invalid_with_a_required_cause(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.create("pods", {"metadata": {"name": "web"}, "spec": {}}, namespace="default")
    assert caught.value.code == 422
    assert caught.value.reason == "Invalid"
    assert caught.value.status["message"] == 'Pod "web" is invalid: spec.containers: Required value'
    assert caught.value.status["details"] == {
        "name": "web",
        "kind": "Pod",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value",
                "field": "spec.containers",
            }
        ],
    }
    assert server.list("pods") == []


def test_an_invalid_name_is_422_invalid_with_the_rfc_1123_message(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.create("pods", pod("Web_1"), namespace="default")
    assert caught.value.code == 422
    detail = f'Invalid value: "Web_1": {SUBDOMAIN_RULE}'
    assert caught.value.status["message"] == f'Pod "Web_1" is invalid: metadata.name: {detail}'
    assert caught.value.status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": detail, "field": "metadata.name"}
    ]


def test_several_invalid_fields_are_aggregated_in_brackets(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.create("pods", {"metadata": {"name": "Web_1"}}, namespace="default")
    message = caught.value.status["message"]
    assert message.startswith('Pod "Web_1" is invalid: [metadata.name: Invalid value: "Web_1": ')
    assert message.endswith(", spec.containers: Required value]")
    assert len(caught.value.status["details"]["causes"]) == 2


def test_a_body_namespace_other_than_the_request_namespace_is_400(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.create("pods", pod(namespace="kube-system"), namespace="default")
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    assert caught.value.status["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


# -- generated names and uids ---------------------------------------------------------------------
def generated_name(seed: int) -> str:
    server = APIServer(seed=seed)
    body = pod("")
    body["metadata"] = {"generateName": "web-"}
    return str(server.create("pods", body, namespace="default")["metadata"]["name"])


def test_generate_name_draws_five_characters_from_the_seed() -> None:
    names = [generated_name(seed) for seed in range(4)]
    assert all(re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", name) for name in names)
    assert names == [generated_name(seed) for seed in range(4)], "same seed, same name"
    assert len(set(names)) == 4


def test_generated_names_do_not_shift_the_uid_stream() -> None:
    plain, generating = APIServer(seed=3), APIServer(seed=3)
    body = pod("")
    body["metadata"] = {"generateName": "gen-"}
    generating.create("pods", body, namespace="default")
    plain.create("pods", pod("other"), namespace="default")
    assert (
        plain.create("pods", pod("web"), namespace="default")["metadata"]["uid"]
        == generating.create("pods", pod("web"), namespace="default")["metadata"]["uid"]
    )


def test_a_recreated_name_gets_a_new_uid(server: APIServer) -> None:
    first = server.create("pods", pod(), namespace="default")
    server.delete("pods", "web", namespace="default")
    second = server.create("pods", pod(), namespace="default")
    assert first["metadata"]["uid"] != second["metadata"]["uid"]


# -- custom resources -----------------------------------------------------------------------------
def test_custom_resource_list_items_keep_kind_and_api_version(server: APIServer) -> None:
    widgets = server.register(
        kubesim.custom_resource(group="example.com", version="v1", kind="Widget", plural="widgets")
    )
    assert server.register(widgets) is widgets, "registering the same instance is idempotent"
    server.create(widgets, {"metadata": {"name": "w1"}, "spec": {"size": 1}}, namespace="default")
    server.create("pods", pod(), namespace="default")

    body = get(server, "/apis/example.com/v1/namespaces/default/widgets").json()
    assert body["kind"] == "WidgetList"
    assert body["apiVersion"] == "example.com/v1"
    assert [(i["kind"], i["apiVersion"]) for i in body["items"]] == [("Widget", "example.com/v1")]
    pods = get(server, "/api/v1/namespaces/default/pods").json()
    assert [sorted(i) for i in pods["items"]] == [["metadata", "spec", "status"]]
    assert server.resource("Widget") is widgets


def test_registering_a_different_resource_under_a_taken_name_is_an_error(server: APIServer) -> None:
    server.register(
        kubesim.custom_resource(group="example.com", version="v1", kind="W", plural="ws")
    )
    with pytest.raises(ValueError, match="already registered"):
        server.register(
            kubesim.custom_resource(group="example.com", version="v1", kind="W", plural="ws")
        )


# -- finalizers, no-op writes, status -------------------------------------------------------------
def test_delete_with_a_finalizer_marks_and_removing_the_finalizer_deletes(
    server: APIServer,
) -> None:
    created = server.create("pods", pod(finalizers=["example.com/hold"]), namespace="default")
    events = watch(server, f"/api/v1/pods?watch=1&resourceVersion={server.resource_version}")

    marked = server.delete("pods", "web", namespace="default")
    assert marked["metadata"]["deletionTimestamp"] == created["metadata"]["creationTimestamp"]
    assert server.get("pods", "web", namespace="default") == marked
    again = server.delete("pods", "web", namespace="default")
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]

    server.patch("pods", "web", {"metadata": {"finalizers": None}}, namespace="default")
    with pytest.raises(StatusError, match='pods "web" not found'):
        server.get("pods", "web", namespace="default")
    seen = lines(events.next_chunk())
    assert [e["type"] for e in seen] == ["MODIFIED", "DELETED"]
    assert seen[0]["object"]["metadata"]["deletionTimestamp"]
    assert int(seen[1]["object"]["metadata"]["resourceVersion"]) == server.resource_version


def test_a_no_op_update_writes_no_new_rv_and_no_event(server: APIServer) -> None:
    created = server.create("pods", pod(labels={"app": "a"}), namespace="default")
    events = watch(server, f"/api/v1/pods?watch=1&resourceVersion={server.resource_version}")
    rv = server.resource_version
    assert server.update("pods", created, namespace="default") == created
    assert (
        server.patch("pods", "web", {"metadata": {"labels": {"app": "a"}}}, namespace="default")
        == created
    )
    assert server.resource_version == rv
    assert events.poll() is None


def test_a_main_resource_update_keeps_the_status_and_status_updates_keep_the_spec(
    server: APIServer,
) -> None:
    created = server.create("pods", pod(), namespace="default")
    assert created["status"] == {"phase": "Pending"}

    change = dict(created, status={"phase": "Running"})
    change["metadata"] = dict(created["metadata"], labels={"app": "a"})
    updated = server.update("pods", change, namespace="default")
    assert updated["status"] == {"phase": "Pending"}, "PUT on the pod ignores status"
    assert updated["metadata"]["labels"] == {"app": "a"}

    change = dict(updated, status={"phase": "Running"}, spec={"containers": []})
    change["metadata"] = dict(updated["metadata"], labels={"app": "b"})
    running = server.update("pods", change, namespace="default", subresource="status")
    assert running["status"] == {"phase": "Running"}
    assert running["spec"] == updated["spec"], "PUT on pods/status ignores spec"
    assert running["metadata"]["labels"] == {"app": "a"}, "and metadata"


# -- faults ---------------------------------------------------------------------------------------
def test_expire_watches_ends_every_watch_cleanly(server: APIServer) -> None:
    streams = [watch(server, "/api/v1/pods?watch=1"), watch(server, "/api/v1/namespaces?watch=1")]
    assert streams[0].poll() is None
    assert len(lines(streams[1].poll() or b"")) == 4  # the default namespaces
    assert server.expire_watches() == 2
    assert [s.poll() for s in streams] == [b"", b""]
    assert [s.next_chunk() for s in streams] == [b"", b""]
    assert server.open_watches == 0


def test_drop_watches_cuts_the_stream_without_a_clean_end(server: APIServer) -> None:
    stream = watch(server, "/api/v1/pods?watch=1")
    assert server.drop_watches() == 1
    with pytest.raises(WatchDropped):
        stream.next_chunk()
    assert server.open_watches == 0


def test_after_compaction_a_watch_from_an_old_rv_gets_one_410_error_then_a_clean_end(
    server: APIServer,
) -> None:
    server.create("pods", pod("a"), namespace="default")
    old = server.resource_version
    server.create("pods", pod("b"), namespace="default")
    assert server.compact() == server.resource_version

    stream = watch(server, f"/api/v1/pods?watch=1&resourceVersion={old}")
    assert lines(stream.next_chunk()) == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {old} ({server.resource_version})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]
    assert stream.next_chunk() == b""
    listed = get(server, f"/api/v1/pods?resourceVersion={old}&resourceVersionMatch=Exact")
    assert listed.status == 410
    assert listed.json()["message"] == "The resourceVersion for the provided list is too old."
    current = watch(server, f"/api/v1/pods?watch=1&resourceVersion={server.resource_version}")
    assert current.poll() is None, "a watch from the compaction RV itself is fine"


def test_the_gone_toggle_sends_reason_gone_for_older_clients() -> None:
    server = APIServer(seed=0, expired_reason="Gone")
    server.create("pods", pod(), namespace="default")
    server.compact()
    stream = watch(server, "/api/v1/pods?watch=1&resourceVersion=1")
    assert lines(stream.next_chunk())[0]["object"]["reason"] == "Gone"


# -- time: timeouts and bookmarks -----------------------------------------------------------------
def test_a_watch_ends_cleanly_after_timeout_seconds_of_virtual_time(server: APIServer) -> None:
    stream = watch(server, "/api/v1/pods?watch=1&timeoutSeconds=5")
    server.advance(4.999)
    assert stream.poll() is None
    server.advance(0.001)
    assert stream.poll() == b""


def default_watch_end(seed: int) -> float:
    server = APIServer(seed=seed, wait_policy=AutojumpWait())
    stream = server.watch(server.resource("pods"))
    server.advance(1799.999)
    assert stream.poll() is None
    assert stream.next_chunk() == b""  # nothing else can happen: virtual time jumps ahead
    return server.clock.now()


def test_a_watch_without_timeout_ends_at_a_seeded_time_in_1800_to_3600_s() -> None:
    ends = [default_watch_end(seed) for seed in range(6)]
    assert all(1800 <= end < 3600 for end in ends), ends
    assert ends == [default_watch_end(seed) for seed in range(6)]
    assert len(set(ends)) == 6


def test_bookmarks_arrive_only_when_allowed(server: APIServer) -> None:
    server.create("pods", pod(), namespace="default")
    rv = server.resource_version
    plain = watch(server, f"/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=100")
    marked = watch(
        server,
        f"/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=100&allowWatchBookmarks=true",
    )
    bookmark = {
        "type": "BOOKMARK",
        "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)}},
    }
    server.advance(60)  # the periodic bookmark tick
    assert lines(marked.poll() or b"") == [bookmark]
    assert plain.poll() is None
    server.advance(38)  # 2 s before the deadline (cache_watcher.go)
    assert lines(marked.poll() or b"") == [bookmark]
    assert plain.poll() is None
    server.advance(2)
    assert (plain.poll(), marked.poll()) == (b"", b"")


def test_the_initial_events_end_bookmark_needs_allow_watch_bookmarks(server: APIServer) -> None:
    server.create("pods", pod(), namespace="default")
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion="
    without = watch(server, f"/api/v1/pods?{query}")
    assert [e["type"] for e in lines(without.next_chunk())] == ["ADDED"]
    with_bookmarks = watch(server, f"/api/v1/pods?{query}&allowWatchBookmarks=true")
    added, end = lines(with_bookmarks.next_chunk())
    assert added["type"] == "ADDED"
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"] == {
        "resourceVersion": str(server.resource_version),
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


# -- constructor arguments ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"history_window": 0}, "history_window=0"),
        ({"history_window": 2.5}, "history_window=2.5"),
        ({"bookmark_interval": 0}, "bookmark_interval=0"),
        ({"bookmark_interval": -1.0}, "bookmark_interval=-1.0"),
        ({"expired_reason": "Nope"}, "expired_reason"),
        ({"min_request_timeout": -1.0}, "min_request_timeout=-1.0"),
        ({"watch_buffer": 0}, "watch_buffer=0"),
    ],
)
def test_bad_constructor_arguments_raise_value_error_naming_the_argument(
    kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        APIServer(**kwargs)


def test_a_seed_that_is_not_an_int_or_str_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=re.escape("seed=1.5")):
        APIServer(seed=1.5)  # type: ignore[arg-type]


def test_a_resource_name_resolves_to_what_is_served_now() -> None:
    # resource() caches lookups by name; registering or unregistering must not leave a stale
    # answer, and a miss must not be cached.
    from kubesim.apiserver.resources import ResourceType

    server = APIServer(seed=1)
    with pytest.raises(KeyError, match="no resource named 'widgets'"):
        server.resource("widgets")
    widgets = ResourceType("example.com", "v1", "Widget", "widgets", short_names=("wg",))
    server.register(widgets)
    assert server.resource("widgets") is widgets
    assert server.resource("wg") is widgets
    assert server.resource("pods") is server.resource("po")
    server.unregister(widgets)
    with pytest.raises(KeyError, match="no resource named 'wg'"):
        server.resource("wg")
    again = ResourceType("example.com", "v1", "Widget", "widgets")
    server.register(again)
    assert server.resource("widgets") is again
