"""Tests for :mod:`kubesim.apiserver.patch`: the three PATCH media types of kube-apiserver.

Expected values come from RFC 7386 appendix A, RFC 6902 appendix A, the test tables of
evanphx/json-patch v4 (``patch_test.go``) and of apimachinery ``strategicpatch/patch_test.go``,
and from the bodies kubectl sends. The Hypothesis properties check the contract itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.apiserver.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_MERGE_KEYS,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    PatchTestFailed,
    apply_patch,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)


def canon(value: Any) -> str:
    """JSON text that tells ``1`` from ``1.0`` and ``true``, unlike ``==`` on Python values."""
    return json.dumps(value, sort_keys=True)


def test_patch_types_are_the_three_media_types() -> None:
    assert set(PATCH_TYPES) == {
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    }


# ---------------------------------------------------------------------------------------------
# JSON merge patch

RFC7386_APPENDIX_A = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_APPENDIX_A)
def test_rfc7386_appendix_a(target: Any, patch: Any, expected: Any) -> None:
    assert canon(json_merge_patch(target, patch)) == canon(expected)


def test_merge_patch_drops_null_members_of_inserted_values_like_evanphx() -> None:
    # evanphx merge.go pruneNulls: RFC 7386 would keep the null inside the array.
    patched = json_merge_patch({}, {"a": [{"b": None, "c": 1}], "d": {"e": None}})
    assert patched == {"a": [{"c": 1}], "d": {}}


def test_kubectl_label_sends_a_merge_patch() -> None:
    pod = {"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": {"nodeName": "n1"}}
    labeled = apply_patch(pod, {"metadata": {"labels": {"a": "b"}}}, MERGE_PATCH)
    assert labeled == {
        "metadata": {"name": "p", "labels": {"app": "web", "a": "b"}},
        "spec": {"nodeName": "n1"},
    }
    unlabeled = apply_patch(labeled, {"metadata": {"labels": {"a": None}}}, MERGE_PATCH)
    assert unlabeled == pod


def test_merge_patch_replaces_lists_wholesale() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    patched = apply_patch(pod, {"spec": {"containers": [{"name": "a", "image": "y"}]}}, MERGE_PATCH)
    assert patched == {"spec": {"containers": [{"name": "a", "image": "y"}]}}


@pytest.mark.parametrize("body", [None, "x", 3, True])
def test_merge_patch_body_must_be_an_object(body: Any) -> None:
    with pytest.raises(PatchError, match=r"^Invalid JSON Patch$"):
        apply_patch({"a": 1}, body, MERGE_PATCH)


def test_merge_patch_array_body_cannot_make_an_object() -> None:
    with pytest.raises(PatchError, match="cannot unmarshal array"):
        apply_patch({"a": 1}, [1], MERGE_PATCH)


# ---------------------------------------------------------------------------------------------
# JSON patch

RFC6902_APPENDIX_A = {
    "A.1 add object member": (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux"}],
        {"baz": "qux", "foo": "bar"},
    ),
    "A.2 add array element": (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    "A.3 remove object member": (
        {"baz": "qux", "foo": "bar"},
        [{"op": "remove", "path": "/baz"}],
        {"foo": "bar"},
    ),
    "A.4 remove array element": (
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "remove", "path": "/foo/1"}],
        {"foo": ["bar", "baz"]},
    ),
    "A.5 replace value": (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    "A.6 move value": (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    "A.7 move array element": (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    "A.8 test success": (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    "A.10 add nested member object": (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    "A.11 ignore unrecognized members": (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    "A.14 ~ escape ordering": (
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}],
        {"/": 9, "~1": 10},
    ),
    "A.16 add array value": (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    "copy": (
        {"foo": {"bar": [1]}},
        [{"op": "copy", "from": "/foo", "path": "/baz"}],
        {"foo": {"bar": [1]}, "baz": {"bar": [1]}},
    ),
    "escaped slash in member name": (
        {"a/b": {"m~n": 1}},
        [{"op": "replace", "path": "/a~1b/m~0n", "value": 2}],
        {"a/b": {"m~n": 2}},
    ),
    "replace whole document": (
        {"a": 1},
        [{"op": "replace", "path": "", "value": {"b": 2}}],
        {"b": 2},
    ),
}


@pytest.mark.parametrize(
    ("target", "operations", "expected"),
    list(RFC6902_APPENDIX_A.values()),
    ids=list(RFC6902_APPENDIX_A),
)
def test_rfc6902_examples(target: Any, operations: Any, expected: Any) -> None:
    assert canon(json_patch(target, operations)) == canon(expected)


@pytest.mark.parametrize(
    ("target", "operations", "message"),
    [
        # A.9 and A.15: a failed test, and a string that is not the number it looks like.
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "/baz"),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], "/~01"),
        ({"a": True}, [{"op": "test", "path": "/a", "value": 1}], "/a"),
        ({"foo": {}}, [{"op": "test", "path": "/foo", "value": None}], "/foo"),
        ({"foo": []}, [{"op": "test", "path": "/foo"}], "/foo"),
        ({"a": 1}, [{"op": "test", "path": "", "value": {}}], ""),
    ],
)
def test_failed_test_operation(target: Any, operations: Any, message: str) -> None:
    with pytest.raises(PatchTestFailed) as caught:
        json_patch(target, operations)
    assert str(caught.value) == f"testing value {message} failed: test failed"


def test_test_operation_reads_a_missing_member_as_null() -> None:
    # evanphx/json-patch v4 TestCases: a missing member equals a null value.
    document = {"baz": "qux", "foo": None}
    operations = [
        {"op": "test", "path": "/nope", "value": None},
        {"op": "test", "path": "/foo", "value": None},
        {"op": "test", "path": "/baz", "value": "qux"},
    ]
    assert json_patch(document, operations) == document


def test_negative_indices_count_from_the_end() -> None:
    document = {"foo": ["a", "b", "c"]}
    assert json_patch(document, [{"op": "add", "path": "/foo/-1", "value": "z"}]) == {
        "foo": ["a", "b", "c", "z"]
    }
    assert json_patch(document, [{"op": "remove", "path": "/foo/-1"}]) == {"foo": ["a", "b"]}
    assert json_patch(document, [{"op": "replace", "path": "/foo/-3", "value": "z"}]) == {
        "foo": ["z", "b", "c"]
    }


def test_add_at_the_end_index_appends() -> None:
    assert json_patch([1], [{"op": "add", "path": "/1", "value": 2}]) == [1, 2]


def test_replace_of_a_missing_member_adds_it_like_kube_apiserver() -> None:
    # evanphx/json-patch v4 (gopkg.in/evanphx/json-patch.v4, used by kube-apiserver) reverted
    # the RFC-strict check (evanphx/json-patch#85), so this succeeds against a real cluster.
    patched = json_patch({"m": {}}, [{"op": "replace", "path": "/m/k", "value": "v"}])
    assert patched == {"m": {"k": "v"}}


def test_operations_apply_in_order_and_see_earlier_results() -> None:
    operations = [
        {"op": "add", "path": "/a", "value": {}},
        {"op": "add", "path": "/a/b", "value": [1]},
        {"op": "move", "from": "/a/b", "path": "/c"},
        {"op": "copy", "from": "/c", "path": "/a/d"},
        {"op": "test", "path": "/a/d/0", "value": 1},
    ]
    assert json_patch({}, operations) == {"a": {"d": [1]}, "c": [1]}


def test_json_patch_with_a_failing_step_changes_nothing() -> None:
    target = {"metadata": {"labels": {"a": "1"}}}
    operations = [
        {"op": "remove", "path": "/metadata/labels/a"},
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
    ]
    with pytest.raises(PatchTestFailed):
        apply_patch(target, operations, JSON_PATCH)
    assert target == {"metadata": {"labels": {"a": "1"}}}


# Messages of evanphx/json-patch v4 patch.go, which kube-apiserver returns verbatim.
JSON_PATCH_ERRORS = {
    "body not a list": (
        {},
        {"op": "add", "path": "/a", "value": 1},
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
    ),
    "operation not an object": (
        {},
        ["add"],
        "json: cannot unmarshal string into Go value of type jsonpatch.Operation",
    ),
    "no op": ({}, [{"path": "/a"}], "Unexpected kind: unknown"),
    "unknown op": ({}, [{"op": "frob", "path": "/a"}], "Unexpected kind: frob"),
    "add without path": (
        {},
        [{"op": "add", "value": 1}],
        "add operation failed to decode path: missing value",
    ),
    "remove without path": (
        {},
        [{"op": "remove"}],
        "remove operation failed to decode path: missing value",
    ),
    "replace without path": (
        {},
        [{"op": "replace", "value": 1}],
        "replace operation failed to decode path: operation missing path field: missing value",
    ),
    "test without path": (
        {},
        [{"op": "test", "value": 1}],
        "test operation failed to decode path: operation missing path field: missing value",
    ),
    "move without from": (
        {"a": 1},
        [{"op": "move", "path": "/b"}],
        "move operation failed to decode from: operation, missing from field: missing value",
    ),
    "copy without from": (
        {"a": 1},
        [{"op": "copy", "path": "/b"}],
        "copy operation failed to decode from: operation, missing from field: missing value",
    ),
    "add under a missing parent": (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz/bat", "value": "qux"}],
        'add operation does not apply: doc is missing path: "/baz/bat": missing value',
    ),
    "add at the root": (
        {"foo": "bar"},
        [{"op": "add", "path": "", "value": "qux"}],
        'add operation does not apply: doc is missing path: "": missing value',
    ),
    "remove a missing member": (
        {"a": {"b": {"d": 1}}},
        [{"op": "remove", "path": "/a/b/c"}],
        "error in remove for path: '/a/b/c': Unable to remove nonexistent key: c: missing value",
    ),
    "remove under a missing parent": (
        {"a": 1},
        [{"op": "remove", "path": "/x/y"}],
        'remove operation does not apply: doc is missing path: "/x/y": missing value',
    ),
    "remove past the end": (
        {"a": {"b": [1]}},
        [{"op": "remove", "path": "/a/b/1"}],
        "error in remove for path: '/a/b/1': Unable to access invalid index: 1: "
        "invalid index referenced",
    ),
    "remove with a non-numeric index": (
        {"foo": []},
        [{"op": "remove", "path": "/foo/-"}],
        "error in remove for path: '/foo/-': strconv.Atoi: parsing \"-\": invalid syntax",
    ),
    "replace under a missing parent": (
        {"name": {"foo": "bat"}},
        [{"op": "replace", "path": "/foo/bar", "value": "baz"}],
        "replace operation does not apply: doc is missing path: /foo/bar: missing value",
    ),
    "replace past the end": (
        {"foo": ["bar", "baz"]},
        [{"op": "replace", "path": "/foo/2", "value": "bum"}],
        "replace operation does not apply: doc is missing key: /foo/2: missing value",
    ),
    "add two past the end": (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/2", "value": "bum"}],
        "error in add for path: '/foo/2': Unable to access invalid index: 2: "
        "invalid index referenced",
    ),
    "add before the start": (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/-4", "value": "bum"}],
        "error in add for path: '/foo/-4': Unable to access invalid index: -4: "
        "invalid index referenced",
    ),
    "add with a non-numeric index": (
        {"foo": []},
        [{"op": "add", "path": "/foo/x", "value": 1}],
        "error in add for path: '/foo/x': value was not a proper array index: 'x': "
        'strconv.Atoi: parsing "x": invalid syntax',
    ),
    "move a missing member": (
        {"a": {"b": {"d": 1}}},
        [{"op": "move", "from": "/a/b/c", "path": "/a/b/e"}],
        "error in move for path: 'c': Unable to remove nonexistent key: c: missing value",
    ),
    "move past the end": (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/4"}],
        "error in move for path: '/foo/4': Unable to access invalid index: 4: "
        "invalid index referenced",
    ),
    "copy into a missing parent": (
        {"a": 1},
        [{"op": "copy", "from": "/a", "path": "/x/y"}],
        "copy operation does not apply: doc is missing destination path: /x/y: missing value",
    ),
    "copy past the end": (
        {"foo": ["bar"]},
        [{"op": "copy", "path": "/foo/2", "from": "/foo/0"}],
        "error while adding value during copy: Unable to access invalid index: 2: "
        "invalid index referenced",
    ),
    "test under a missing parent": (
        {"a": 1},
        [{"op": "test", "path": "/x/y", "value": 1}],
        "test operation does not apply: is missing path: /x/y: missing value",
    ),
    "replace the root with a scalar": (
        {"a": 1},
        [{"op": "replace", "path": "", "value": 1}],
        "replace operation value must be object or array: %!w(<nil>)",
    ),
}


@pytest.mark.parametrize(
    ("target", "operations", "message"),
    list(JSON_PATCH_ERRORS.values()),
    ids=list(JSON_PATCH_ERRORS),
)
def test_json_patch_errors(target: Any, operations: Any, message: str) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch(target, operations)
    assert str(caught.value) == message
    assert not isinstance(caught.value, PatchTestFailed)


def test_null_json_patch_body_is_an_empty_patch() -> None:
    # encoding/json decodes `null` into an empty jsonpatch.Patch.
    assert apply_patch({"a": 1}, None, JSON_PATCH) == {"a": 1}


def test_json_patch_that_leaves_no_object_is_refused() -> None:
    with pytest.raises(PatchError, match="cannot unmarshal array"):
        apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], JSON_PATCH)


# ---------------------------------------------------------------------------------------------
# Strategic merge patch


def smp(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return apply_patch(target, patch, STRATEGIC_MERGE_PATCH)


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_merge_key_table_covers_core_and_workload_lists() -> None:
    expected = {
        ("spec", "containers"): "name",
        ("spec", "initContainers"): "name",
        ("spec", "ephemeralContainers"): "name",
        ("spec", "containers", "env"): "name",
        ("spec", "containers", "ports"): "containerPort",
        ("spec", "containers", "volumeMounts"): "mountPath",
        ("spec", "volumes"): "name",
        ("spec", "imagePullSecrets"): "name",
        ("spec", "template", "spec", "containers"): "name",
        ("spec", "template", "spec", "initContainers", "env"): "name",
        ("spec", "jobTemplate", "spec", "template", "spec", "containers"): "name",
        ("status", "conditions"): "type",
        ("metadata", "finalizers"): "",
        ("metadata", "ownerReferences"): "uid",
        ("spec", "template", "metadata", "finalizers"): "",
        ("spec", "ports"): "port",
    }
    assert {path: STRATEGIC_MERGE_KEYS.get(path) for path in expected} == expected
    assert ("spec", "tolerations") not in STRATEGIC_MERGE_KEYS


def test_containers_merge_by_name() -> None:
    live = pod(
        containers=[
            {"name": "app", "image": "app:1", "terminationMessagePath": "/dev/termination-log"},
            {"name": "sidecar", "image": "proxy:1"},
        ]
    )
    patched = smp(live, {"spec": {"containers": [{"name": "app", "image": "app:2"}]}})
    assert patched["spec"]["containers"] == [
        {"name": "app", "image": "app:2", "terminationMessagePath": "/dev/termination-log"},
        {"name": "sidecar", "image": "proxy:1"},
    ]


def test_new_container_goes_before_live_only_ones() -> None:
    # strategicpatch mergeSortedSlice: an element unknown to the live list wins every
    # comparison, so without $setElementOrder an added element lands first.
    live = pod(containers=[{"name": "app", "image": "app:1"}])
    patched = smp(live, {"spec": {"containers": [{"name": "debug", "image": "busybox"}]}})
    assert [c["name"] for c in patched["spec"]["containers"]] == ["debug", "app"]


def test_workload_template_containers_env_and_ports_merge() -> None:
    deployment = {
        "kind": "Deployment",
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "volumeMounts": [{"mountPath": "/data", "name": "data"}],
                        }
                    ]
                }
            },
        },
    }
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "env": [{"name": "B", "value": "3"}],
                            "ports": [{"containerPort": 80, "name": "http"}],
                            "volumeMounts": [{"mountPath": "/data", "readOnly": True}],
                        }
                    ]
                }
            }
        }
    }
    container = smp(deployment, patch)["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}]
    assert container["volumeMounts"] == [{"mountPath": "/data", "name": "data", "readOnly": True}]


def test_service_ports_merge_by_port() -> None:
    service = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    patched = smp(service, {"spec": {"ports": [{"port": 443, "name": "https"}]}})
    assert patched["spec"]["ports"] == [
        {"port": 80, "targetPort": 8080},
        {"port": 443, "name": "https"},
    ]


def test_status_conditions_merge_by_type() -> None:
    live = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "Starting"},
                {"type": "PodScheduled", "status": "True"},
            ]
        }
    }
    patched = smp(
        live, {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": None}]}}
    )
    assert patched["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_finalizers_merge_as_a_set() -> None:
    live = {"metadata": {"finalizers": ["a", "b"]}}
    patched = smp(live, {"metadata": {"finalizers": ["b", "c"]}})
    assert patched["metadata"]["finalizers"] == ["a", "b", "c"]


def test_delete_from_primitive_list() -> None:
    live = {"metadata": {"finalizers": ["a", "b", "c", "b"]}}
    patched = smp(live, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}})
    assert patched == {"metadata": {"finalizers": ["a", "c"]}}


def test_delete_from_primitive_list_never_creates_the_list() -> None:
    patched = smp({"metadata": {}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}})
    assert patched == {"metadata": {}}


def test_lists_without_a_strategy_are_replaced() -> None:
    live = pod(tolerations=[{"key": "a", "operator": "Exists"}], containers=[{"name": "c"}])
    patched = smp(live, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}})
    assert patched["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    assert patched["spec"]["containers"] == [{"name": "c"}]


def test_custom_resource_lists_fall_back_to_replace() -> None:
    widget = {"kind": "Widget", "spec": {"items": [{"name": "a"}, {"name": "b"}], "tags": ["x"]}}
    patched = smp(widget, {"spec": {"items": [{"name": "b", "size": 2}], "tags": ["y"]}})
    assert patched["spec"] == {"items": [{"name": "b", "size": 2}], "tags": ["y"]}


def test_maps_merge_and_null_deletes() -> None:
    live = {"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}}}
    patched = smp(live, {"metadata": {"labels": {"a": None, "c": "3"}, "annotations": None}})
    assert patched == {"metadata": {"labels": {"b": "2", "c": "3"}}}


def test_patch_delete_removes_list_element_by_merge_key() -> None:
    live = pod(containers=[{"name": "app"}, {"name": "sidecar"}], volumes=[{"name": "v"}])
    patch = {
        "spec": {
            "containers": [
                {"name": "sidecar", "$patch": "delete"},
                {"name": "ghost", "$patch": "delete"},
            ],
            "volumes": [{"name": "v", "$patch": "delete"}],
        }
    }
    patched = smp(live, patch)
    assert patched["spec"] == {"containers": [{"name": "app"}], "volumes": []}


def test_patch_replace_in_a_list_replaces_the_list() -> None:
    live = pod(containers=[{"name": "app", "image": "x"}, {"name": "sidecar"}])
    patch = {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "y"}]}}
    assert smp(live, patch)["spec"]["containers"] == [{"name": "only", "image": "y"}]


def test_patch_replace_on_a_map_replaces_it() -> None:
    live = {"metadata": {"labels": {"a": "1", "b": "2"}}}
    patched = smp(live, {"metadata": {"labels": {"$patch": "replace", "c": "3"}}})
    assert patched == {"metadata": {"labels": {"c": "3"}}}


def test_patch_delete_on_a_map_empties_it() -> None:
    live = {"spec": {"selector": {"app": "x"}, "type": "ClusterIP"}}
    assert smp(live, {"spec": {"selector": {"$patch": "delete"}}}) == {
        "spec": {"selector": {}, "type": "ClusterIP"}
    }


def test_retain_keys_clears_unlisted_fields() -> None:
    # kubectl apply switching a Deployment from RollingUpdate to Recreate.
    live = {
        "spec": {
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "replicas": 2,
        }
    }
    patch = {
        "spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}}
    }
    assert smp(live, patch) == {"spec": {"strategy": {"type": "Recreate"}, "replicas": 2}}


def test_retain_keys_in_a_merged_list_element() -> None:
    live = pod(
        volumes=[{"name": "v", "emptyDir": {}}, {"name": "w", "secret": {"secretName": "s"}}]
    )
    patch = {
        "spec": {
            "volumes": [
                {"$retainKeys": ["configMap", "name"], "name": "v", "configMap": {"name": "c"}}
            ]
        }
    }
    assert smp(live, patch)["spec"]["volumes"] == [
        {"name": "v", "configMap": {"name": "c"}},
        {"name": "w", "secret": {"secretName": "s"}},
    ]


def test_set_element_order_orders_the_list_and_leaves_no_directive() -> None:
    live = pod(containers=[{"name": "a"}, {"name": "b"}, {"name": "sidecar"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
            "containers": [{"name": "c", "image": "c:1"}],
        }
    }
    patched = smp(live, patch)
    # The directive's order first; the live-only sidecar keeps its place after "a" but, being
    # compared with "c" that the live list lacks, yields to it (strategicpatch mergeSortedSlice).
    assert [c["name"] for c in patched["spec"]["containers"]] == ["b", "a", "c", "sidecar"]
    assert "$setElementOrder/containers" not in patched["spec"]


# apimachinery strategicpatch/patch_test.go raw cases: (current, three-way patch, result) for a
# schema where mergingList merges by name and mergingIntList merges as a set.
UPSTREAM_SCHEMA: dict[tuple[str, ...], str] = {("mergingList",): "name", ("mergingIntList",): ""}
UPSTREAM_CASES = {
    "add map and delete map from merging list": (
        {"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]},
        {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
            "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}],
        },
        {"mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]},
    ),
    "nested patch merge with empty list": (
        {"name": "hi", "mergingList": [{"name": "hello2"}]},
        {
            "$setElementOrder/mergingList": [{"name": "hello"}, {"name": "doesntexist"}],
            "mergingList": [{"name": "hello"}],
        },
        {"name": "hi", "mergingList": [{"name": "hello"}, {"name": "hello2"}]},
    ),
    "merge lists of maps": (
        {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]},
        {
            "$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}],
        },
        {
            "mergingList": [
                {"name": 4, "value": 4},
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
    ),
    "set elements order in a list with server-only items 3": (
        {"mergingList": [{"name": n} for n in (1, 2, 7, 9, 8, 3, 4)]},
        {"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}]},
        {"mergingList": [{"name": n} for n in (2, 1, 7, 9, 8, 4, 3)]},
    ),
    "add and delete items in lists of scalars": (
        {"mergingIntList": [1, 2, 3, 4]},
        {
            "$setElementOrder/mergingIntList": [1, 2, 4],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        {"mergingIntList": [1, 2, 4]},
    ),
    "set elements order in a int list with server-only items 2": (
        {"mergingIntList": [1, 2, 9, 3, 4]},
        {"$setElementOrder/mergingIntList": [2, 1, 4, 3]},
        {"mergingIntList": [2, 1, 9, 4, 3]},
    ),
}


@pytest.mark.parametrize(
    ("current", "patch", "result"), list(UPSTREAM_CASES.values()), ids=list(UPSTREAM_CASES)
)
def test_upstream_strategic_cases(current: Any, patch: Any, result: Any) -> None:
    assert strategic_merge_patch(current, patch, merge_keys=UPSTREAM_SCHEMA) == result


def test_kubectl_apply_patch_with_directives() -> None:
    # What `kubectl apply` sends after the manifest drops env DEBUG, bumps the image, replaces
    # a finalizer and keeps a label; the live object has fields the server and others own.
    live = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "labels": {"app": "web", "team": "x"},
            "finalizers": ["example.com/keep", "example.com/old", "other.io/theirs"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.25",
                            "env": [
                                {"name": "DEBUG", "value": "1"},
                                {"name": "MODE", "value": "a"},
                            ],
                            "imagePullPolicy": "IfNotPresent",
                        },
                        {"name": "injected-sidecar", "image": "proxy"},
                    ]
                }
            }
        },
    }
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
            "$setElementOrder/finalizers": ["example.com/keep", "example.com/new"],
            "$deleteFromPrimitiveList/finalizers": ["example.com/old"],
            "finalizers": ["example.com/new"],
        },
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "MODE"}],
                            "env": [{"$patch": "delete", "name": "DEBUG"}],
                            "image": "nginx:1.27",
                            "name": "web",
                        }
                    ],
                }
            }
        },
    }
    patched = smp(live, patch)
    assert patched["metadata"] == {
        "name": "web",
        "labels": {"app": "web", "team": "x"},
        "finalizers": ["example.com/keep", "example.com/new", "other.io/theirs"],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
    }
    assert patched["spec"]["template"]["spec"]["containers"] == [
        {
            "name": "web",
            "image": "nginx:1.27",
            "env": [{"name": "MODE", "value": "a"}],
            "imagePullPolicy": "IfNotPresent",
        },
        {"name": "injected-sidecar", "image": "proxy"},
    ]
    assert "$" not in json.dumps(patched)


def test_kubectl_set_image_strategic_patch() -> None:
    live = pod(containers=[{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    patched = smp(live, {"spec": {"containers": [{"name": "b", "image": "b:2"}]}})
    assert patched["spec"]["containers"] == [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:2"},
    ]


def test_new_values_lose_nulls_and_directives() -> None:
    patched = smp(
        {},
        {
            "spec": {
                "containers": [
                    {"name": "x", "image": None, "$setElementOrder/env": [{"name": "e"}]}
                ],
                "gone": {"$patch": "replace", "a": 1},
            }
        },
    )
    assert patched == {"spec": {"containers": [{"name": "x"}]}}


# strategicpatch and mergepatch/errors.go messages.
STRATEGIC_ERRORS = {
    "body not an object": (
        {},
        ["x"],
        "json: cannot unmarshal array into Go value of type map[string]interface {}",
    ),
    "element without merge key": (
        pod(containers=[{"name": "a"}]),
        {"spec": {"containers": [{"image": "b"}]}},
        "map: map[image:b] does not contain declared merge key: name",
    ),
    "delete without merge key": (
        pod(containers=[{"name": "a"}]),
        {"spec": {"containers": [{"$patch": "delete"}]}},
        "map: map[$patch:delete] does not contain declared merge key: name",
    ),
    "unknown map directive": (
        {"spec": {}},
        {"spec": {"$patch": "frob"}},
        "unknown patch type: frob in map: map[$patch:frob]",
    ),
    "merge directive in a list": (
        pod(containers=[{"name": "a"}]),
        {"spec": {"containers": [{"$patch": "merge"}]}},
        "merging lists cannot yet be specified in the patch",
    ),
    "retainKeys not a list": (
        {"spec": {"strategy": {}}},
        {"spec": {"strategy": {"$retainKeys": "type"}}},
        "invalid patch format of retainKeys",
    ),
    "patch sets a key retainKeys drops": (
        {"spec": {"strategy": {}}},
        {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}},
        "invalid patch format of retainKeys",
    ),
    "setElementOrder without field": (
        {"spec": {}},
        {"spec": {"$setElementOrder": []}},
        "invalid patch format of setElementOrder list",
    ),
    "deleteFromPrimitiveList without field": (
        {"metadata": {}},
        {"metadata": {"$deleteFromPrimitiveList": ["a"]}},
        "invalid patch format of primitive list",
    ),
    "patch list out of setElementOrder's order": (
        pod(containers=[{"name": "a"}, {"name": "b"}]),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b"}, {"name": "a"}],
            }
        },
        "The order in patch list:\n[map[name:b] map[name:a]]\n doesn't match $setElementOrder "
        "list:\n[map[name:a] map[name:b]]\n",
    ),
    "list of lists": (
        {"metadata": {"finalizers": [["a"]]}},
        {"metadata": {"finalizers": [["b"]]}},
        "lists of lists are not supported",
    ),
}


@pytest.mark.parametrize(
    ("target", "patch", "message"), list(STRATEGIC_ERRORS.values()), ids=list(STRATEGIC_ERRORS)
)
def test_strategic_errors(target: Any, patch: Any, message: str) -> None:
    with pytest.raises(PatchError) as caught:
        apply_patch(target, patch, STRATEGIC_MERGE_PATCH)
    assert str(caught.value) == message


def test_null_strategic_body_is_an_empty_patch() -> None:
    assert smp({"a": 1}, None) == {"a": 1}  # type: ignore[arg-type]


def test_unknown_content_type_is_refused() -> None:
    with pytest.raises(PatchError, match="unknown Content-Type"):
        apply_patch({}, {}, "application/apply-patch+yaml")


# ---------------------------------------------------------------------------------------------
# Properties

# The code under test has no time budget, and CI shares two cores with other suites.
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYS = st.sampled_from(["a", "b", "c", "name", "~", "/", "x/y~z", ""])
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=3)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)
OBJECTS = st.dictionaries(KEYS, JSON, max_size=4)

# Values a merge patch can produce: no object member is null (it would mean "delete").
NON_NULL_SCALARS = st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=3)
MERGEABLE = st.recursive(
    NON_NULL_SCALARS,
    lambda inner: (
        st.lists(inner | st.none(), max_size=3) | st.dictionaries(KEYS, inner, max_size=3)
    ),
    max_leaves=12,
)
MERGEABLE_OBJECTS = st.dictionaries(KEYS, MERGEABLE, max_size=4)


def merge_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The merge patch that turns ``before`` into ``after`` (like evanphx CreateMergePatch)."""
    patch: dict[str, Any] = {key: None for key in before if key not in after}
    for key, value in after.items():
        if key in before and canon(before[key]) == canon(value):
            continue
        old = before.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            patch[key] = merge_diff(old, value)
        else:
            patch[key] = value
    return patch


@PROPERTY
@given(MERGEABLE_OBJECTS, MERGEABLE_OBJECTS)
def test_merge_patch_of_the_diff_turns_one_object_into_the_other(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    assert canon(json_merge_patch(before, merge_diff(before, after))) == canon(after)


def scramble(value: Any) -> None:
    """Empty every dict and list inside ``value``, to expose any sharing with the inputs."""
    if isinstance(value, dict):
        for item in value.values():
            scramble(item)
        value.clear()
    elif isinstance(value, list):
        for item in value:
            scramble(item)
        value.clear()


# Strategic patches shaped like Pods, so merge keys and directives are really exercised.
NAMES = st.sampled_from(["a", "b", "c"])
CONTAINER = st.fixed_dictionaries(
    {"name": NAMES},
    optional={
        "image": st.sampled_from(["x", "y"]) | st.none(),
        "env": st.lists(
            st.fixed_dictionaries({"name": NAMES}, optional={"value": NAMES}), max_size=2
        ),
        "$patch": st.sampled_from(["delete", "replace"]),
        "$setElementOrder/env": st.lists(st.fixed_dictionaries({"name": NAMES}), max_size=2),
    },
)
POD_PATCH = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(NAMES, NAMES | st.none(), max_size=2),
                "finalizers": st.lists(NAMES, max_size=2),
                "$deleteFromPrimitiveList/finalizers": st.lists(NAMES, max_size=2),
                "$setElementOrder/finalizers": st.lists(NAMES, max_size=3, unique=True),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(CONTAINER, max_size=3),
                "$setElementOrder/containers": st.lists(
                    st.fixed_dictionaries({"name": NAMES}), max_size=3
                ),
                "tolerations": st.lists(st.dictionaries(KEYS, JSON, max_size=2), max_size=2),
                "$retainKeys": st.lists(st.sampled_from(["containers", "tolerations"]), max_size=2),
            },
        ),
    },
)
LIVE_POD = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {
                "labels": st.dictionaries(NAMES, NAMES, max_size=2),
                "finalizers": st.lists(NAMES, max_size=3, unique=True),
            }
        ),
        "spec": st.fixed_dictionaries(
            {
                "containers": st.lists(
                    st.fixed_dictionaries(
                        {
                            "name": NAMES,
                            "image": NAMES,
                            "env": st.lists(st.fixed_dictionaries({"name": NAMES}), max_size=2),
                        }
                    ),
                    max_size=3,
                    unique_by=lambda c: c["name"],
                )
            }
        ),
    }
)


@st.composite
def pointers(draw: st.DrawFn, document: Any) -> str:
    """A JSON pointer that often names something in ``document``, sometimes not."""
    tokens: list[str] = []
    node = document
    while isinstance(node, (dict, list)) and node and draw(st.booleans()):
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)))
            node = node[key]
        else:
            index = draw(st.integers(0, len(node) - 1))
            key, node = str(index), node[index]
        tokens.append(key.replace("~", "~0").replace("/", "~1"))
    tokens.append(draw(KEYS | st.sampled_from(["-", "0", "1", "-1", "9"])))
    return "".join("/" + token for token in tokens)


@st.composite
def json_patches(draw: st.DrawFn, document: Any) -> list[dict[str, Any]]:
    operations = []
    for _ in range(draw(st.integers(0, 4))):
        operation: dict[str, Any] = {
            "op": draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"])),
            "path": draw(pointers(document)),
        }
        if operation["op"] in ("move", "copy"):
            operation["from"] = draw(pointers(document))
        else:
            operation["value"] = draw(JSON)
        operations.append(operation)
    return operations


@st.composite
def targets_and_patches(draw: st.DrawFn) -> tuple[dict[str, Any], Any, str]:
    content_type = draw(st.sampled_from(PATCH_TYPES))
    if content_type == STRATEGIC_MERGE_PATCH:
        return draw(LIVE_POD), draw(POD_PATCH | OBJECTS), content_type
    target = draw(OBJECTS)
    if content_type == JSON_PATCH:
        return target, draw(json_patches(target)), content_type
    return target, draw(OBJECTS | JSON), content_type


@settings(PROPERTY, max_examples=300)
@given(targets_and_patches())
def test_applying_never_mutates_or_shares_its_inputs(case: tuple[dict[str, Any], Any, str]) -> None:
    target, patch, content_type = case
    before = (canon(target), canon(patch))
    try:
        result = apply_patch(target, patch, content_type)
    except PatchError:
        assert (canon(target), canon(patch)) == before
        return
    assert (canon(target), canon(patch)) == before
    scramble(result)
    assert (canon(target), canon(patch)) == before


@st.composite
def insertion_points(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A document and a pointer where ``add`` inserts something new (fresh key or index)."""
    document = draw(OBJECTS)
    tokens: list[str] = []
    node: Any = document
    while True:
        children = (
            [k for k, v in node.items() if isinstance(v, (dict, list))]
            if isinstance(node, dict)
            else [str(i) for i, v in enumerate(node) if isinstance(v, (dict, list))]
        )
        if not children or not draw(st.booleans()):
            break
        token = draw(st.sampled_from(children))
        node = node[token] if isinstance(node, dict) else node[int(token)]
        tokens.append(token)
    if isinstance(node, dict):
        last = draw(st.text(max_size=3).filter(lambda key: key not in node))
    else:
        last = str(draw(st.integers(0, len(node))))
    escaped = [token.replace("~", "~0").replace("/", "~1") for token in [*tokens, last]]
    return document, "".join("/" + token for token in escaped)


@PROPERTY
@given(insertion_points(), JSON)
def test_json_patch_add_then_remove_is_identity(
    point: tuple[dict[str, Any], str], value: Any
) -> None:
    document, path = point
    added = json_patch(document, [{"op": "add", "path": path, "value": value}])
    assert canon(added) != canon(document)
    restored = json_patch(added, [{"op": "remove", "path": path}])
    assert canon(restored) == canon(document)


# Merge-patch bodies whose arrays hold no object with a null member: evanphx keeps such nulls
# when an array replaces an object and the strategic patch drops them, a documented difference.
CLEAN = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(KEYS, inner.filter(lambda v: v is not None), max_size=3)
    ),
    max_leaves=8,
)
PATCH_OBJECTS = st.recursive(
    st.dictionaries(KEYS, SCALARS | st.lists(CLEAN, max_size=3), max_size=3),
    lambda inner: st.dictionaries(KEYS, inner | SCALARS | st.lists(CLEAN, max_size=3), max_size=3),
    max_leaves=10,
)


@PROPERTY
@given(OBJECTS, PATCH_OBJECTS)
def test_strategic_patch_without_known_fields_is_a_merge_patch(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    # No key of these objects is in STRATEGIC_MERGE_KEYS and none is a directive.
    assert canon(strategic_merge_patch(target, patch)) == canon(json_merge_patch(target, patch))
