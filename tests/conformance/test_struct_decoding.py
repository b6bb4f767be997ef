"""A value of a shape the kind's Go struct cannot hold is refused by the decoder that met it.

kube-apiserver decodes every body into the kind's Go struct first: a create's JSON decoder
answers 400 (``transformDecodeError`` around encoding/json's UnmarshalTypeError); a patch whose
result does not decode is 422 Invalid on the field ``patch`` (handlers/patch.go), whose value
is the strategic merge patch as ``%v`` prints it (the unstructured converter's ``cannot restore
map from string``, what kubectl's own test suite checks) or the patched object as JSON (the JSON
decoder's message). Nothing is stored, no event is sent.
"""

from __future__ import annotations

from typing import Any

from .objects import configmap, configmaps, pod, pods
from .test_bad_input import assert_status
from .wire import Endpoint

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def test_a_create_with_a_string_for_a_map_is_the_json_decoders_400(api: Endpoint, ns: str) -> None:
    body = pod("labels-as-text")
    body["metadata"]["labels"] = "invalid"
    status = assert_status(api.post(pods(ns), body), 400, "BadRequest")
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go '
        "struct field ObjectMeta.metadata.labels of type map[string]string"
    )
    assert api.get(pods(ns, "labels-as-text")).status == 404


def test_the_decoder_names_the_innermost_struct_and_the_whole_path(api: Endpoint, ns: str) -> None:
    body = pod("ports-as-object", containers=[{"name": "c", "image": "i", "ports": {"a": 1}}])
    status = assert_status(api.post(pods(ns), body), 400, "BadRequest")
    assert status["message"].endswith(
        "json: cannot unmarshal object into Go struct field Container.spec.containers.ports "
        "of type []v1.ContainerPort"
    )
    body = pod("spec-as-list")
    body["spec"] = []
    status = assert_status(api.post(pods(ns), body), 400, "BadRequest")
    assert status["message"].endswith(
        "json: cannot unmarshal array into Go struct field Pod.spec of type v1.PodSpec"
    )


def test_a_strategic_merge_patch_that_does_not_decode_is_422_on_patch(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", pods(ns), pod("valid-pod", labels={"name": "valid-pod"}), expect=201)
    reply = api.patch(pods(ns, "valid-pod"), {"metadata": {"labels": "invalid"}}, SMP)
    status = assert_status(reply, 422, "Invalid")
    message = 'Invalid value: "map[metadata:map[labels:invalid]]": cannot restore map from string'
    assert status["message"] == f' "" is invalid: patch: {message}'
    # StatusDetails' kind and name are omitempty: the decoder knows neither.
    assert status["details"] == {
        "causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]
    }
    assert api.ok("GET", pods(ns, "valid-pod")) == created
    unchanged = api.patch(
        pods(ns, "valid-pod"), {"metadata": {"labels": {"name": "valid-pod"}}}, SMP
    )
    assert unchanged.status == 200


def test_the_converter_names_slices_structs_and_scalars(api: Endpoint, ns: str) -> None:
    api.ok("POST", pods(ns), pod("p", containers=[{"name": "c", "image": "i"}]), expect=201)
    cases: list[tuple[Any, str]] = [
        (
            {"spec": {"containers": [{"name": "c", "ports": "x"}]}},
            "cannot restore slice from string",
        ),
        ({"spec": {"securityContext": 3}}, "cannot restore struct from: int64"),
        (
            {"spec": {"containers": [{"name": "c", "image": {"x": 1}}]}},
            "cannot convert map[string]interface {} to string",
        ),
    ]
    for patch, detail in cases:
        status = assert_status(api.patch(pods(ns, "p"), patch, SMP), 422, "Invalid")
        assert status["message"].endswith(f": {detail}"), status


def test_a_merge_or_json_patch_that_does_not_decode_quotes_the_patched_object(
    api: Endpoint, ns: str
) -> None:
    created = configmap("c", {"a": "b"})
    created["metadata"]["annotations"] = {"note": "a<b"}
    api.ok("POST", configmaps(ns), created, expect=201)
    reply = api.patch(configmaps(ns, "c"), {"data": "x"}, MERGE)
    status = assert_status(reply, 422, "Invalid")
    cause = status["details"]["causes"][0]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(
        '": json: cannot unmarshal string into Go struct field ConfigMap.data of type '
        "map[string]string"
    )
    # The value is the patched object as Go's encoder writes it: keys sorted, HTML escaped.
    assert cause["message"].startswith(
        'Invalid value: "{\\"apiVersion\\":\\"v1\\",\\"data\\":\\"x\\"'
    )
    assert '\\"note\\":\\"a\\\\u003cb\\"' in cause["message"]
    operations = [{"op": "replace", "path": "/data", "value": ["x"]}]
    status = assert_status(api.patch(configmaps(ns, "c"), operations, JSON_PATCH), 422, "Invalid")
    assert status["message"].endswith(
        "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string"
    )
    assert api.ok("GET", configmaps(ns, "c"))["data"] == {"a": "b"}
