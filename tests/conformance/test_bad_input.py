"""Bad requests get the right 4xx Status, never a 500, and never take the server down.

k8s-wire.md §1.5 (Status table, 406) and behaviours 16 and 19; the media-type errors are
apimachinery ``negotiation`` (``NewUnsupportedMediaTypeError``, ``NewNotAcceptableError``);
the 3 MiB body limit and its 413 are apiserver ``handlers/rest.go`` ``limitedReadBody``;
continue-token errors are apiserver ``storage/continue.go`` wrapped by ``invalid continue
token: %v``. After every bad request the test checks the server still answers.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
from typing import Any

import pytest

from kubesim.apiserver.selectors import LabelSelector, SelectorError

from .objects import configmap, configmaps, pod, pods
from .wire import HANG_GUARD_SECONDS, Endpoint, query

BODY_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
PATCH_TYPES = (
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml"
)
MAX_BODY = 3 * 1024 * 1024


def failure(code: int, reason: str, message: str, **extra: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    status.update(extra)
    status["code"] = code
    return status


def assert_status(reply: Any, code: int, reason: str) -> dict[str, Any]:
    assert reply.status == code, reply
    assert reply.content_type == "application/json", reply.headers
    status: dict[str, Any] = reply.json()
    assert (status["kind"], status["status"], status["reason"], status["code"]) == (
        "Status",
        "Failure",
        reason,
        code,
    ), status
    return status


def label_parser_message(text: str) -> str:
    try:
        LabelSelector.parse(text)
    except SelectorError as exc:
        return str(exc)
    raise AssertionError(f"{text!r} parses")


@pytest.mark.parametrize("body", [b'{"metadata": ', b"not json", b'{"a":1}}', b"\xff\xfe"])
def test_a_malformed_json_body_is_a_400_bad_request(api: Endpoint, ns: str, body: bytes) -> None:
    for method, path in (("POST", configmaps(ns)), ("PUT", configmaps(ns, "c"))):
        status = assert_status(api.request(method, path, body), 400, "BadRequest")
        # handlers/create.go transformDecodeError: the kind, the decoder's error, the body.
        assert status["message"].startswith(
            "the object provided is unrecognized (must be of type ConfigMap): "
            "couldn't get version/kind; json parse error: "
        )
        summary = body.decode() if body.startswith(b"{") else body.hex()
        assert status["message"].endswith(f" ({summary})")
    assert_status(
        api.request(
            "PATCH", configmaps(ns, "c"), body, content_type="application/merge-patch+json"
        ),
        400,
        "BadRequest",
    )
    assert api.alive()


def test_a_json_body_that_is_not_an_object_is_a_400(api: Endpoint, ns: str) -> None:
    for body in (b"[]", b'"pod"', b"42", b"null"):
        status = assert_status(api.request("POST", pods(ns), body), 400, "BadRequest")
        assert status["message"].startswith(
            "the object provided is unrecognized (must be of type Pod): couldn't get "
            "version/kind; json parse error: json: cannot unmarshal "
        )
        assert status["message"].endswith(f" ({body.hex()})")
    # kubectl's own test: YAML sent as JSON, longer than the 30 bytes the message quotes.
    yaml = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: valid-pod\n"
    status = assert_status(api.request("POST", pods(ns), yaml), 400, "BadRequest")
    assert status["message"].endswith(f" ({yaml[:30].hex()} ...)")
    assert api.alive()


def test_an_invalid_object_is_a_422_invalid_with_causes(api: Endpoint, ns: str) -> None:
    reply = api.post(pods(ns), {"metadata": {"name": "no-containers"}, "spec": {}})
    status = assert_status(reply, 422, "Invalid")
    assert status["message"] == 'Pod "no-containers" is invalid: spec.containers: Required value'
    assert status["details"] == {
        "name": "no-containers",
        "kind": "Pod",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value",
                "field": "spec.containers",
            }
        ],
    }
    assert api.alive()


@pytest.mark.parametrize("selector", ["a b", "app in (web", "=x", "k>x", "a=b=c"])
def test_an_invalid_label_selector_is_a_400_with_the_parser_message(
    api: Endpoint, ns: str, selector: str
) -> None:
    expected = label_parser_message(selector)
    list_reply = api.get(pods(ns) + query(labelSelector=selector))
    assert list_reply.json() == failure(400, "BadRequest", expected)
    assert list_reply.status == 400
    with api.watch(pods(ns) + query(watch=1, labelSelector=selector)) as stream:
        assert stream.status == 400
        assert stream.json_body() == failure(400, "BadRequest", expected)
    assert api.alive()


def test_the_label_selector_parser_message_is_apimachinerys() -> None:
    assert label_parser_message("a b") == (
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    )
    assert label_parser_message("a=b=c") == "found '=', expected: ',' or 'end of string'"


@pytest.mark.parametrize("selector", ["spec.bogus=x", "status.nope!=1", "metadata.labels=x"])
def test_an_unsupported_field_selector_is_a_400_field_label_not_supported(
    api: Endpoint, ns: str, selector: str
) -> None:
    field = selector.split("!=")[0].split("=")[0]
    expected = failure(400, "BadRequest", f"field label not supported: {field}")
    assert api.get(pods(ns) + query(fieldSelector=selector)).json() == expected
    with api.watch(pods(ns) + query(watch=1, fieldSelector=selector)) as stream:
        assert stream.status == 400
        assert stream.json_body() == expected
    configmap_reply = api.get(configmaps(ns) + query(fieldSelector="data.k=v"))
    assert configmap_reply.json() == failure(400, "BadRequest", "field label not supported: data.k")
    assert api.alive()


@pytest.mark.parametrize("rv", ["abc", "-1", "1.5", "0x10", " 5"])
def test_a_non_numeric_resource_version_is_a_400_never_a_500(
    api: Endpoint, ns: str, rv: str
) -> None:
    assert_status(api.get(configmaps(ns) + query(resourceVersion=rv)), 400, "BadRequest")
    with api.watch(configmaps(ns) + query(watch=1, resourceVersion=rv)) as stream:
        assert stream.status == 400
        assert stream.json_body()["reason"] == "BadRequest"
    assert api.alive()


@pytest.mark.parametrize("param", ["limit", "timeoutSeconds"])
def test_a_non_integer_numeric_query_parameter_is_a_400(api: Endpoint, ns: str, param: str) -> None:
    status = assert_status(api.get(configmaps(ns) + query(**{param: "ten"})), 400, "BadRequest")
    assert status["message"] == 'strconv.ParseInt: parsing "ten": invalid syntax'
    assert api.alive()


def test_a_malformed_continue_token_is_a_400_invalid_continue_token(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    foreign = (
        base64.urlsafe_b64encode(json.dumps({"v": "other/v9", "rv": 1, "start": "x"}).encode())
        .rstrip(b"=")
        .decode()
    )
    zero_rv = (
        base64.urlsafe_b64encode(
            json.dumps({"v": "meta.k8s.io/v1", "rv": 0, "start": "x"}).encode()
        )
        .rstrip(b"=")
        .decode()
    )
    expected = {
        foreign: "invalid continue token: continue key is not valid: "
        "server does not recognize this encoded version other/v9",
        zero_rv: "invalid continue token: continue key is not valid: "
        "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    }
    for token, message in expected.items():
        reply = api.get(configmaps(ns) + query(limit=1, **{"continue": token}))
        assert reply.json() == failure(400, "BadRequest", message)
    garbage = assert_status(
        api.get(configmaps(ns) + query(**{"continue": "%%%not-base64"})), 400, "BadRequest"
    )
    assert garbage["message"].startswith("invalid continue token: continue key is not valid")
    assert api.alive()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/{ns}/widgets",
        "/api/v1/namespaces/{ns}/pods/p/bogus-subresource",
        "/apis/nope.example.com/v1/things",
        "/apis/apps/v9/deployments",
        "/api/v2/pods",
        "/nothing-here",
    ],
)
def test_an_unknown_resource_or_path_is_a_404_not_found(api: Endpoint, ns: str, path: str) -> None:
    reply = api.get(path.format(ns=ns))
    assert reply.json() == failure(
        404, "NotFound", "the server could not find the requested resource", details={}
    )
    assert reply.status == 404
    assert api.alive()


def test_a_missing_namespace_is_a_404_naming_the_namespace(api: Endpoint) -> None:
    reply = api.post(pods("no-such-namespace"), pod("p"))
    assert reply.json() == failure(
        404,
        "NotFound",
        'namespaces "no-such-namespace" not found',
        details={"name": "no-such-namespace", "kind": "namespaces"},
    )


def test_a_body_over_3_mib_is_a_413_and_the_server_survives(api: Endpoint, ns: str) -> None:
    big = configmap("big", {"blob": "x" * (MAX_BODY + 1)})
    body = json.dumps(big).encode()
    assert len(body) > MAX_BODY
    head = (
        f"POST {configmaps(ns)} HTTP/1.1\r\nHost: {api.host}:{api.port}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((api.host, api.port), timeout=HANG_GUARD_SECONDS) as sock:
        sock.sendall(head)
        # The server answers from the headers alone; it may stop reading the body at any time.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(body)
        with sock.makefile("rb") as stream:
            status_line = stream.readline()
            headers: dict[str, str] = {}
            while (line := stream.readline().decode()) not in ("\r\n", ""):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            payload = stream.read(int(headers["content-length"]))
    assert status_line.split(b" ")[1] == b"413", status_line
    assert json.loads(payload) == failure(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}"
    )
    assert api.get(configmaps(ns, "big")).status == 404
    assert api.alive()


def test_a_body_just_under_3_mib_is_accepted(api: Endpoint, ns: str) -> None:
    small = configmap("fits", {"blob": "x" * (MAX_BODY - 1024)})
    assert api.post(configmaps(ns), small).status == 201


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/merge-patch+json"],
)
def test_a_create_with_an_unsupported_content_type_is_a_415(
    api: Endpoint, ns: str, content_type: str
) -> None:
    reply = api.request("POST", configmaps(ns), configmap("c"), content_type=content_type)
    assert reply.json() == failure(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{BODY_TYPES}",
    )
    assert reply.status == 415
    assert api.get(configmaps(ns, "c")).status == 404
    assert api.alive()


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
def test_a_patch_with_a_content_type_that_is_not_a_patch_type_is_a_415(
    api: Endpoint, ns: str, content_type: str | None
) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    reply = api.request(
        "PATCH", configmaps(ns, "c"), {"data": {"a": "b"}}, content_type=content_type
    )
    assert reply.json() == failure(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{PATCH_TYPES}",
    )
    assert reply.status == 415
    assert api.ok("GET", configmaps(ns, "c")) == created
    assert api.alive()


@pytest.mark.parametrize("accept", ["text/html", "application/xml, text/plain;q=0.5"])
def test_an_unacceptable_accept_header_is_a_406(api: Endpoint, ns: str, accept: str) -> None:
    # Only what kubesim can answer in (it reads YAML and protobuf bodies, but writes JSON).
    expected = failure(
        406, "NotAcceptable", "only the following media types are accepted: application/json"
    )
    reply = api.get(configmaps(ns), Accept=accept)
    assert reply.status == 406
    assert reply.json() == expected
    with api.watch(configmaps(ns) + query(watch=1), headers={"Accept": accept}) as stream:
        assert stream.status == 406
        assert stream.json_body() == expected
    assert api.alive()


@pytest.mark.parametrize(
    "accept", ["application/json", "*/*", "application/*", "text/html, application/json;q=0.9"]
)
def test_an_accept_header_admitting_json_is_served(api: Endpoint, ns: str, accept: str) -> None:
    assert api.get(configmaps(ns), Accept=accept).status == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/api/v1/namespaces/{ns}/configmaps"),
        ("POST", "/api/v1/namespaces/{ns}/configmaps/c"),
        ("PATCH", "/api/v1/namespaces/{ns}/configmaps"),
    ],
)
def test_a_method_the_resource_does_not_support_is_a_405(
    api: Endpoint, ns: str, method: str, path: str
) -> None:
    reply = api.request(
        method,
        path.format(ns=ns),
        configmap("c"),
        content_type="application/merge-patch+json" if method == "PATCH" else "application/json",
    )
    status = assert_status(reply, 405, "MethodNotAllowed")
    assert status["message"].startswith(
        "the server does not allow this method on the requested resource"
    )
    assert api.alive()


def test_an_abandoned_half_sent_request_does_not_hurt_the_server(api: Endpoint, ns: str) -> None:
    with socket.create_connection((api.host, api.port), timeout=HANG_GUARD_SECONDS) as sock:
        sock.sendall(
            f"POST {configmaps(ns)} HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode()
        )
    with socket.create_connection((api.host, api.port), timeout=HANG_GUARD_SECONDS) as sock:
        sock.sendall(b"GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n")
        status_line = sock.recv(65536).split(b"\r\n")[0]
        assert status_line.startswith(b"HTTP/1.1 "), status_line
        assert status_line.split(b" ")[1][:1] in (b"4", b"5"), status_line
    assert api.alive()
    assert api.ok("GET", configmaps(ns))["items"] == []


def test_a_yaml_body_is_converted_to_json_as_sigs_k8s_io_yaml_does(api: Endpoint, ns: str) -> None:
    # Keys that are not strings become strings and dates stay as written; a lone surrogate
    # cannot be JSON at all, so the body is the client's error (400), never a 500.
    body = (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yaml-keys}\n"
        b"data: {1: one, day: 2024-01-02}\n"
    )
    reply = api.request("POST", configmaps(ns), body, content_type="application/yaml")
    assert reply.status == 201, reply
    assert reply.json()["data"] == {"1": "one", "day": "2024-01-02"}
    for method, path in (("POST", configmaps(ns)), ("PUT", configmaps(ns, "yaml-keys"))):
        status = assert_status(
            api.request(method, path, b'{"\\ud800"}', content_type="application/yaml"),
            400,
            "BadRequest",
        )
        assert status["message"].startswith("error converting YAML to JSON: ")
    assert api.alive()


def test_a_yaml_body_nested_beyond_any_limit_is_a_400(api: Endpoint, ns: str) -> None:
    body = b"[" * 5000 + b"]" * 5000
    status = assert_status(
        api.request("POST", configmaps(ns), body, content_type="application/yaml"),
        400,
        "BadRequest",
    )
    assert status["message"] == "error converting YAML to JSON: the document nests too deeply"
    assert api.alive()
