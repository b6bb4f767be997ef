"""Metadata-only answers: ``Accept: application/json;as=PartialObjectMetadata[List];...``.

What client-go's metadata client (metadata informers, the garbage collector) and kube-rs'
``get_metadata``/``list_metadata``/``watch_metadata``/``patch_metadata`` ask for, and what
kube-apiserver's handlers/response.go answers: the object's whole ObjectMeta under
``meta.k8s.io`` kinds, a list's resourceVersion and continue token, 406 for a conversion that
does not fit the answer, watch events converted one by one.
"""

from __future__ import annotations

from typing import Any

from .objects import configmap, configmaps, pod, pods
from .wire import Endpoint, query, rv_of

OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# client-go's metadata client: protobuf first (kubesim answers JSON), then JSON, then plain JSON.
CLIENT_GO_LIST = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    + LIST
    + ",application/json"
)
MERGE = "application/merge-patch+json"
TIMEOUT = 900


def _as(api: Endpoint, method: str, path: str, accept: str, body: Any = None, **kw: Any) -> Any:
    reply = api.request(method, path, body, headers={"Accept": accept}, **kw)
    assert 200 <= reply.status < 300, reply
    return reply.json()


def test_an_object_is_its_whole_metadata_under_the_meta_group(api: Endpoint, ns: str) -> None:
    labelled = pod("meta", labels={"app": "web"})
    labelled["metadata"]["annotations"] = {"note": "kept"}
    api.ok("POST", pods(ns), labelled, expect=201)
    stored = api.ok("GET", pods(ns, "meta"))
    partial = _as(api, "GET", pods(ns, "meta"), OBJECT)
    assert partial == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": stored["metadata"],
    }
    beta = _as(api, "GET", pods(ns, "meta"), OBJECT.replace("v=v1", "v=v1beta1"))
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert beta["metadata"] == stored["metadata"]


def test_a_list_keeps_its_resource_version_and_continue_token_and_types_every_item(
    api: Endpoint, ns: str
) -> None:
    for name in ("a", "b", "c"):
        api.ok("POST", configmaps(ns), configmap(name), expect=201)
    plain = api.ok("GET", configmaps(ns) + query(limit=2))
    page = _as(api, "GET", configmaps(ns) + query(limit=2), CLIENT_GO_LIST)
    assert page["kind"] == "PartialObjectMetadataList"
    assert page["apiVersion"] == "meta.k8s.io/v1"
    assert set(page["metadata"]) == {"resourceVersion", "continue", "remainingItemCount"}
    assert page["metadata"]["remainingItemCount"] == 1
    assert [item["metadata"] for item in page["items"]] == [
        item["metadata"] for item in plain["items"]
    ]
    assert {(item["kind"], item["apiVersion"]) for item in page["items"]} == {
        ("PartialObjectMetadata", "meta.k8s.io/v1")
    }
    rest = _as(api, "GET", configmaps(ns) + "?continue=" + page["metadata"]["continue"], LIST)
    assert [item["metadata"]["name"] for item in rest["items"]] == ["c"]
    assert "continue" not in rest["metadata"]


def test_an_empty_list_has_null_items_as_the_go_list_encodes(api: Endpoint, ns: str) -> None:
    empty = _as(api, "GET", configmaps(ns) + query(labelSelector="none=here"), LIST)
    assert empty["items"] is None
    assert empty["metadata"]["resourceVersion"]


def test_the_wrong_conversion_for_the_answer_is_406_after_the_request_was_carried_out(
    api: Endpoint, ns: str
) -> None:
    listed = api.request("GET", configmaps(ns), headers={"Accept": OBJECT})
    assert listed.status == 406, listed
    assert listed.json()["reason"] == "NotAcceptable"
    assert listed.json()["message"] == (
        "you requested PartialObjectMetadata, but the requested object is a list "
        "(*core.ConfigMapList)"
    )
    # A create asked for as a list is stored, then refused: the conversion runs on the answer.
    created = api.request("POST", configmaps(ns), configmap("kept"), headers={"Accept": LIST})
    assert created.status == 406, created
    assert created.json()["message"] == (
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        "(*core.ConfigMap)"
    )
    assert api.ok("GET", configmaps(ns, "kept"))["metadata"]["name"] == "kept"


def test_writes_answer_with_metadata_and_errors_stay_statuses(api: Endpoint, ns: str) -> None:
    created = _as(api, "POST", pods(ns), OBJECT, pod("w"))
    assert created["kind"] == "PartialObjectMetadata"
    patch = {"metadata": {"labels": {"patched": "yes"}}}
    patched = _as(api, "PATCH", pods(ns, "w"), OBJECT, patch, content_type=MERGE)
    assert patched["metadata"]["labels"]["patched"] == "yes"
    assert int(rv_of(patched)) > int(rv_of(created))
    missing = api.request("GET", pods(ns, "absent"), headers={"Accept": OBJECT})
    assert missing.status == 404
    assert missing.json()["kind"] == "Status"
    # A delete that answers with the object (pods do) answers with its metadata.
    deleted = _as(api, "DELETE", pods(ns, "w"), OBJECT)
    assert deleted["kind"] == "PartialObjectMetadata"
    assert deleted["metadata"]["name"] == "w"


def test_a_custom_resource_converts_and_names_its_unstructured_type(api: Endpoint, ns: str) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    definition = {
        "metadata": {"name": "gadgets.metadata.example.com"},
        "spec": {
            "group": "metadata.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    api.ok("POST", crds, definition, expect=201)
    try:
        gadgets = f"/apis/metadata.example.com/v1/namespaces/{ns}/gadgets"
        api.ok("POST", gadgets, {"metadata": {"name": "g"}, "spec": {"size": 3}}, expect=201)
        partial = _as(api, "GET", f"{gadgets}/g", OBJECT)
        assert partial["kind"] == "PartialObjectMetadata"
        assert "spec" not in partial
        listed = api.request("GET", f"{gadgets}/g", headers={"Accept": LIST})
        assert listed.status == 406
        assert listed.json()["message"].endswith("(*unstructured.Unstructured)")
    finally:
        api.ok("DELETE", f"{crds}/gadgets.metadata.example.com")


def test_watch_events_carry_metadata_and_a_list_conversion_leaves_them_whole(
    api: Endpoint, ns: str
) -> None:
    rv = str(api.current_rv())
    path = configmaps(ns) + query(
        watch=1, resourceVersion=rv, timeoutSeconds=TIMEOUT, allowWatchBookmarks="true"
    )
    with (
        api.watch(path, headers={"Accept": OBJECT}) as partial,
        api.watch(path, headers={"Accept": LIST}) as whole,
    ):
        partial.assert_watch_head()
        whole.assert_watch_head()
        api.ok("POST", configmaps(ns), configmap("seen"), expect=201)
        api.ok("DELETE", configmaps(ns, "seen"))
        events = partial.read_events(2)
        assert [e["type"] for e in events] == ["ADDED", "DELETED"]
        for event in events:
            assert event["object"]["kind"] == "PartialObjectMetadata"
            assert event["object"]["apiVersion"] == "meta.k8s.io/v1"
            assert set(event["object"]) == {"kind", "apiVersion", "metadata"}
        # PartialObjectMetadataList fits no single object: the watch encoder sends each whole.
        assert [e["object"]["kind"] for e in whole.read_events(2)] == ["ConfigMap"] * 2
        api.advance(TIMEOUT + 1)
        assert partial.read_to_end() == []
