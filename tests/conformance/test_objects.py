"""Objects over raw HTTP: metadata the server owns, the write verbs and their error Statuses.

k8s-wire.md §1.5 (Status shapes and exact messages), §6 behaviours 7, 16 and 18. Patch
failures follow apiserver ``pkg/endpoints/handlers/patch.go``: a JSON patch whose ``test``
operation fails is ``NewGenericServerResponse(422, ...)``, i.e. reason ``Invalid`` with the
generic message.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from .objects import configmap, configmaps, deployment, deployments, pod, pods
from .wire import Endpoint, is_named, query, rv_of

TIMESTAMP = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")
OPTIMISTIC_LOCK = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def test_every_write_gets_a_numeric_strictly_increasing_resource_version_across_kinds(
    api: Endpoint, ns: str
) -> None:
    rvs = [
        rv_of(api.ok("POST", pods(ns), pod("p1"), expect=201)),
        rv_of(api.ok("POST", configmaps(ns), configmap("c1"), expect=201)),
        rv_of(api.ok("POST", deployments(ns), deployment("d1"), expect=201)),
        rv_of(
            api.ok(
                "PATCH", pods(ns, "p1"), {"metadata": {"labels": {"x": "1"}}}, content_type=MERGE
            )
        ),
        rv_of(api.ok("POST", configmaps(ns), configmap("c2"), expect=201)),
    ]
    assert all(rv.isdigit() for rv in rvs), rvs
    numbers = [int(rv) for rv in rvs]
    assert numbers == sorted(set(numbers)), numbers
    assert int(api.state()["resourceVersion"]) >= numbers[-1]


def test_created_objects_carry_kind_a_unique_uid_and_a_creation_timestamp(
    api: Endpoint, ns: str
) -> None:
    created = [api.ok("POST", pods(ns), pod(f"p{i}"), expect=201) for i in range(3)]
    created.append(api.ok("POST", configmaps(ns), configmap("c"), expect=201))
    uids = [obj["metadata"]["uid"] for obj in created]
    assert len(set(uids)) == len(uids), uids
    for obj in created:
        assert str(uuid.UUID(obj["metadata"]["uid"])) == obj["metadata"]["uid"]
        assert TIMESTAMP.match(obj["metadata"]["creationTimestamp"]), obj["metadata"]
        assert obj["metadata"]["namespace"] == ns
    assert (created[0]["kind"], created[0]["apiVersion"]) == ("Pod", "v1")
    assert (created[3]["kind"], created[3]["apiVersion"]) == ("ConfigMap", "v1")
    fetched = api.ok("GET", pods(ns, "p0"))
    assert fetched == created[0]


def test_a_client_supplied_uid_is_replaced_on_create(api: Endpoint, ns: str) -> None:
    body = configmap("c")
    body["metadata"]["uid"] = "not-a-uid"
    created = api.ok("POST", configmaps(ns), body, expect=201)
    assert created["metadata"]["uid"] != "not-a-uid"


def test_a_create_with_a_resource_version_is_refused_as_etcd3_refuses_it(
    api: Endpoint, ns: str
) -> None:
    """etcd3 store.Create refuses an object whose resourceVersion parses as a revision: a bare
    500 (no reason: the error is not an API error), and nothing is stored. Clients re-creating
    an object they read hit this on a real cluster; a fake server that took it would hide it."""
    before = api.current_rv()
    body = configmap("again")
    body["metadata"]["resourceVersion"] = "1"
    refused = api.request("POST", configmaps(ns), body)
    assert refused.status == 500, refused
    assert refused.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "resourceVersion should not be set on objects to be created",
        "code": 500,
    }
    assert api.request("GET", configmaps(ns, "again")).status == 404
    assert api.current_rv() == before
    # What strconv.ParseUint does not read as a revision other than 0 is let through, and the
    # server's own resourceVersion replaces it.
    for sent in ("0", "-1", "abc", "18446744073709551616"):
        body = configmap(f"rv-{len(sent)}-{sent.strip('-')[:3]}")
        body["metadata"]["resourceVersion"] = sent
        created = api.ok("POST", configmaps(ns), body, expect=201)
        assert int(created["metadata"]["resourceVersion"]) > int(before), sent


def test_a_created_object_has_its_metadata_in_go_field_order(api: Endpoint, ns: str) -> None:
    """ObjectMeta is encoded in declaration order: resourceVersion right after uid, in the
    answer to the POST, a GET, a list and the ADDED event alike."""
    start = api.current_rv()
    watch = api.watch(configmaps(ns) + query(watch=1, resourceVersion=start, timeoutSeconds=30))
    try:
        created = api.ok(
            "POST", configmaps(ns), configmap("ordered", labels={"b": "2", "a": "1"}), expect=201
        )
        (event,) = watch.read_events(1)
    finally:
        watch.close()
    order = ["name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels"]
    for shown in (
        created,
        api.ok("GET", configmaps(ns, "ordered")),
        api.ok("GET", configmaps(ns))["items"][0],
        event["object"],
    ):
        assert [k for k in shown["metadata"] if k != "managedFields"] == order
        assert list(shown["metadata"]["labels"]) == ["a", "b"]


def test_deployment_generation_starts_at_one_and_bumps_on_spec_changes_only(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", deployments(ns), deployment("web"), expect=201)
    assert created["metadata"]["generation"] == 1

    relabelled = dict(created, metadata=dict(created["metadata"], labels={"app": "web", "t": "1"}))
    after_labels = api.ok("PUT", deployments(ns, "web"), relabelled)
    assert after_labels["metadata"]["generation"] == 1
    assert int(rv_of(after_labels)) > int(rv_of(created))

    scaled = dict(after_labels, spec=dict(after_labels["spec"], replicas=3))
    after_spec = api.ok("PUT", deployments(ns, "web"), scaled)
    assert after_spec["metadata"]["generation"] == 2

    annotated = api.ok(
        "PATCH",
        deployments(ns, "web"),
        {"metadata": {"annotations": {"note": "x"}}},
        content_type=MERGE,
    )
    assert annotated["metadata"]["generation"] == 2
    patched = api.ok("PATCH", deployments(ns, "web"), {"spec": {"replicas": 5}}, content_type=MERGE)
    assert patched["metadata"]["generation"] == 3


def test_an_update_with_a_stale_resource_version_is_a_409_conflict_with_the_optimistic_lock_message(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", pods(ns), pod("p"), expect=201)
    api.ok("PATCH", pods(ns, "p"), {"metadata": {"labels": {"v": "2"}}}, content_type=MERGE)
    stale = dict(created, metadata=dict(created["metadata"], labels={"v": "3"}))

    reply = api.put(pods(ns, "p"), stale)

    assert reply.status == 409
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Operation cannot be fulfilled on pods "p": {OPTIMISTIC_LOCK}',
        "reason": "Conflict",
        "details": {"name": "p", "kind": "pods"},
        "code": 409,
    }
    assert api.ok("GET", pods(ns, "p"))["metadata"]["labels"] == {"v": "2"}


def test_a_stale_resource_version_conflict_names_the_group_qualified_resource(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", deployments(ns), deployment("web"), expect=201)
    api.ok("PATCH", deployments(ns, "web"), {"spec": {"replicas": 2}}, content_type=MERGE)

    reply = api.put(deployments(ns, "web"), created)

    assert reply.status == 409
    status = reply.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        f'Operation cannot be fulfilled on deployments.apps "web": {OPTIMISTIC_LOCK}'
    )
    assert status["details"] == {"name": "web", "group": "apps", "kind": "deployments"}


def test_an_update_carrying_the_current_resource_version_succeeds_with_a_new_one(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c", {"k": "1"}), expect=201)
    updated = api.ok("PUT", configmaps(ns, "c"), dict(created, data={"k": "2"}))
    assert updated["data"] == {"k": "2"}
    assert int(rv_of(updated)) > int(rv_of(created))
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


def test_creating_an_existing_name_is_a_409_already_exists(api: Endpoint, ns: str) -> None:
    api.ok("POST", pods(ns), pod("dup"), expect=201)
    reply = api.post(pods(ns), pod("dup"))
    assert reply.status == 409
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "dup" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "dup", "kind": "pods"},
        "code": 409,
    }


def test_reading_or_deleting_a_missing_object_is_a_404_not_found_naming_it(
    api: Endpoint, ns: str
) -> None:
    expected = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "kind": "pods"},
        "code": 404,
    }
    for reply in (
        api.get(pods(ns, "x")),
        api.delete(pods(ns, "x")),
        api.patch(pods(ns, "x"), {"metadata": {}}, MERGE),
    ):
        assert reply.status == 404
        assert reply.json() == expected
    missing_deployment = api.get(deployments(ns, "x")).json()
    assert missing_deployment["message"] == 'deployments.apps "x" not found'
    assert missing_deployment["details"] == {"name": "x", "group": "apps", "kind": "deployments"}


def test_a_merge_patch_merges_maps_and_replaces_lists(api: Endpoint, ns: str) -> None:
    api.ok(
        "POST",
        pods(ns),
        pod(
            "p",
            labels={"a": "1", "b": "2"},
            containers=[
                {"name": "main", "image": "nginx:1"},
                {"name": "side", "image": "busybox:1"},
            ],
        ),
        expect=201,
    )
    patched = api.ok(
        "PATCH",
        pods(ns, "p"),
        {
            "metadata": {"labels": {"b": None, "c": "3"}},
            "spec": {"containers": [{"name": "only", "image": "alpine:3"}]},
        },
        content_type=MERGE,
    )
    assert patched["metadata"]["labels"] == {"a": "1", "c": "3"}
    # The list is replaced whole (then defaulted, as every write of a pod is).
    [only] = patched["spec"]["containers"]
    assert (only["name"], only["image"], only["imagePullPolicy"]) == (
        "only",
        "alpine:3",
        "IfNotPresent",
    )


def test_a_strategic_merge_patch_merges_containers_by_name(api: Endpoint, ns: str) -> None:
    api.ok(
        "POST",
        pods(ns),
        pod(
            "p",
            containers=[
                {"name": "main", "image": "nginx:1"},
                {"name": "side", "image": "busybox:1"},
            ],
        ),
        expect=201,
    )

    patched = api.ok(
        "PATCH",
        pods(ns, "p"),
        {
            "spec": {
                "containers": [
                    {"name": "side", "image": "busybox:2"},
                    {"name": "extra", "image": "alpine:3"},
                ]
            }
        },
        content_type=STRATEGIC,
    )
    by_name = {c["name"]: c["image"] for c in patched["spec"]["containers"]}
    assert by_name == {"main": "nginx:1", "side": "busybox:2", "extra": "alpine:3"}

    removed = api.ok(
        "PATCH",
        pods(ns, "p"),
        {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
        content_type=STRATEGIC,
    )
    assert [c["name"] for c in removed["spec"]["containers"]] == ["main", "extra"]


def test_a_json_patch_applies_its_operations_in_order(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("c", {"a": "1"}), expect=201)
    patched = api.ok(
        "PATCH",
        configmaps(ns, "c"),
        [
            {"op": "test", "path": "/data/a", "value": "1"},
            {"op": "replace", "path": "/data/a", "value": "2"},
            {"op": "add", "path": "/data/b", "value": "3"},
            {"op": "copy", "from": "/data/b", "path": "/data/c"},
            {"op": "remove", "path": "/data/b"},
        ],
        content_type=JSON_PATCH,
    )
    assert patched["data"] == {"a": "2", "c": "3"}


def test_a_json_patch_whose_test_operation_fails_is_a_422_and_changes_nothing(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c", {"a": "1"}), expect=201)

    reply = api.patch(
        configmaps(ns, "c"),
        [
            {"op": "replace", "path": "/data/a", "value": "2"},
            {"op": "test", "path": "/data/a", "value": "1"},
        ],
        JSON_PATCH,
    )

    assert reply.status == 422
    # handlers/patch.go: NewGenericServerResponse(422, "", GroupResource{}, "", err, 0, false).
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }
    assert api.ok("GET", configmaps(ns, "c")) == created


def test_a_json_patch_removing_a_missing_member_is_a_422_but_an_undecodable_one_a_400(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", configmaps(ns), configmap("c", {"a": "1"}), expect=201)

    failed_apply = api.patch(
        configmaps(ns, "c"), [{"op": "remove", "path": "/data/zz"}], JSON_PATCH
    )
    assert failed_apply.status == 422
    assert failed_apply.json()["reason"] == "Invalid"
    assert failed_apply.json()["message"] == (
        "the server rejected our request due to an error in our request"
    )

    not_a_patch = api.patch(configmaps(ns, "c"), {"op": "remove", "path": "/data/a"}, JSON_PATCH)
    assert not_a_patch.status == 400  # jsonpatch.DecodePatch fails: NewBadRequest
    assert not_a_patch.json()["reason"] == "BadRequest"


def test_a_patch_carrying_a_stale_resource_version_is_a_409_conflict(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    api.ok("PATCH", configmaps(ns, "c"), {"data": {"x": "1"}}, content_type=MERGE)
    reply = api.patch(
        configmaps(ns, "c"),
        {"metadata": {"resourceVersion": rv_of(created)}, "data": {"x": "2"}},
        MERGE,
    )
    assert reply.status == 409
    assert reply.json()["message"] == (
        f'Operation cannot be fulfilled on configmaps "c": {OPTIMISTIC_LOCK}'
    )


def test_deleting_a_pod_returns_its_last_state_stamped_with_the_deletion_rv_as_the_event_does(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", pods(ns), pod("p", labels={"v": "1"}), expect=201)
    last = api.ok("PATCH", pods(ns, "p"), {"metadata": {"labels": {"v": "2"}}}, content_type=MERGE)
    with api.watch(pods(ns) + query(watch=1, resourceVersion=rv_of(last))) as stream:
        stream.assert_watch_head()
        deleted = api.ok("DELETE", pods(ns, "p"))
        (event,) = stream.read_events(1)

    assert event["type"] == "DELETED"
    assert int(rv_of(deleted)) > int(rv_of(last))
    assert event["object"] == deleted

    def without_rv(obj: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
        return {**obj, "metadata": meta}

    assert without_rv(deleted) == without_rv(last)
    assert api.get(pods(ns, "p")).status == 404


def test_deleting_a_configmap_answers_a_success_status_naming_it(api: Endpoint, ns: str) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    status = api.ok("DELETE", configmaps(ns, "c"))
    assert status["kind"] == "Status"
    assert status["status"] == "Success"
    assert status["details"] == {
        "name": "c",
        "kind": "configmaps",
        "uid": created["metadata"]["uid"],
    }


def test_a_recreated_name_gets_a_new_uid(api: Endpoint, ns: str) -> None:
    first = api.ok("POST", pods(ns), pod("p"), expect=201)
    api.ok("DELETE", pods(ns, "p"))
    second = api.ok("POST", pods(ns), pod("p"), expect=201)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert int(rv_of(second)) > int(rv_of(first))


def test_finalizers_keep_a_deleted_object_until_the_last_one_is_removed(
    api: Endpoint, ns: str
) -> None:
    created = api.ok(
        "POST",
        configmaps(ns),
        configmap("held", {"k": "v"}, finalizers=["example.com/hold"]),
        expect=201,
    )
    with api.watch(configmaps(ns) + query(watch=1, resourceVersion=rv_of(created))) as stream:
        marked = api.ok("DELETE", configmaps(ns, "held"))
        assert marked["metadata"]["name"] == "held"
        assert "deletionTimestamp" in marked["metadata"]
        assert marked["metadata"]["finalizers"] == ["example.com/hold"]

        still_there = api.ok("GET", configmaps(ns, "held"))
        assert still_there == marked
        listed = api.ok("GET", configmaps(ns))["items"]
        assert [item["metadata"]["name"] for item in listed] == ["held"]
        again = api.ok("DELETE", configmaps(ns, "held"))
        assert rv_of(again) == rv_of(marked)  # nothing to write the second time

        released = api.ok(
            "PATCH", configmaps(ns, "held"), {"metadata": {"finalizers": None}}, content_type=MERGE
        )
        assert int(rv_of(released)) > int(rv_of(marked))
        events = stream.read_until(lambda e: e["type"] == "DELETED")

    assert [(e["type"], rv_of(e["object"])) for e in events] == [
        ("MODIFIED", rv_of(marked)),
        ("DELETED", rv_of(released)),
    ]
    assert api.get(configmaps(ns, "held")).status == 404
    assert is_named("held")(events[-1])


def test_json_answers_end_with_the_newline_of_go_json_encoder_except_version(
    api: Endpoint, ns: str
) -> None:
    # apimachinery's JSON serializer writes through json.Encoder.Encode, which ends every
    # object with "\n"; clients that compare error bodies (the official client's own e2e
    # tests do) see it. /version is written raw and indented by its own handler.
    created = api.request("POST", configmaps(ns), configmap("nl"))
    got = api.request("GET", configmaps(ns, "nl"))
    listed = api.request("GET", configmaps(ns))
    conflict = api.request("POST", configmaps(ns), configmap("nl"))
    discovery = api.request("GET", "/api/v1")
    for reply in (created, got, listed, conflict, discovery):
        assert reply.body.endswith(b"}\n"), reply.body[-40:]
        assert reply.body.count(b"\n") == 1
    version = api.request("GET", "/version")
    assert version.body.startswith(b'{\n  "major": ')
    assert version.body.endswith(b"}")


def test_pretty_json_for_pretty_true_and_for_curl(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("c", {"a": "b"}), expect=201)
    compact = api.get(configmaps(ns, "c"))
    pretty = api.request("GET", configmaps(ns, "c") + query(pretty="true"))
    assert pretty.body.startswith(b'{\n  "kind": "ConfigMap",\n  "apiVersion": "v1",\n')
    assert pretty.body.endswith(b"}\n")
    assert pretty.json() == compact.json()
    curl = api.request("GET", configmaps(ns, "c"), headers={"User-Agent": "curl/8.5.0"})
    assert curl.body == pretty.body
    asked_not = api.request(
        "GET", configmaps(ns, "c") + query(pretty="false"), headers={"User-Agent": "curl/8.5.0"}
    )
    assert asked_not.body == compact.body
    missing = api.request("GET", configmaps(ns, "nope"), headers={"User-Agent": "Wget/1.21"})
    assert missing.body.startswith(b'{\n  "kind": "Status"')
