"""Hostile input over the real HTTP wire, drawn by Hypothesis: the server never dies, never
answers 500, and every error is a well-formed ``Status`` as kube-apiserver's.

Requests mix real path prefixes with garbage segments and percent-encoding, known query
parameters with bad values and unknown ones, every method, odd and missing content types and
``Accept`` headers, and bodies of every shape (bytes, JSON of the wrong type, deep nesting,
oversize). Separate tests send truncated chunked uploads and a client that stalls mid-request.
The shared ``kubesim serve`` process is checked for tracebacks in its log when the session
ends (tests/conformance/conftest.py). The number of requests sent is printed in pytest's
summary (tests/conftest.py adds it up from the test's report, a pytest-xdist worker's too).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .wire import Endpoint

WIRE_FUZZ_SENT = "kubesim_wire_fuzz_sent"  # the user_properties name tests/conftest.py reads

PREFIXES = [
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/pods",
    "/api/v1/namespaces",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/batch/v1/jobs",
    "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers",  # served by conversion
    "/apis",
    "/api",
    "/openapi/v3",
    "/version",
    "/kubesim",
]
segment = st.one_of(
    st.sampled_from(
        ["x", "status", "scale", "watch", "{name}", "..", ".", "%2F", "%00", "a" * 300]
    ),
    st.text(
        alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/?#"),
        min_size=1,
        max_size=12,
    ),
)
paths = st.builds(
    lambda prefix, rest: prefix + "".join("/" + s for s in rest),
    st.sampled_from(PREFIXES),
    st.lists(segment, max_size=3),
)
PARAMS = [
    "watch",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "labelSelector",
    "fieldSelector",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "dryRun",
    "fieldManager",
    "force",
    "propagationPolicy",
    "unknownParam",
]
values = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "abc",
            "1e9",
            "99999999999999999999",
            "true",
            "All",
            "=",
            "!x",
            "a in (",
            "metadata.name=",
            "NotOlderThan",
        ]
    ),
    st.text(max_size=20),
)
queries = st.lists(st.tuples(st.sampled_from(PARAMS), values), max_size=4)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)
bodies = st.one_of(
    st.none(),
    st.binary(max_size=64),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.builds(
        lambda name, extra: json.dumps({"metadata": {"name": name}, **extra}).encode(),
        st.text(max_size=20),
        st.dictionaries(
            st.sampled_from(["spec", "data", "kind", "apiVersion", "status"]),
            json_values,
            max_size=3,
        ),
    ),
    st.just(b"[" * 5000 + b"]" * 5000),  # deep nesting
)
content_types = st.sampled_from(
    [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
        "text/plain",
        "",
        "application/json; charset=ütf",
    ]
)
accepts = st.sampled_from(
    [
        "application/json",
        "*/*",
        "",
        "text/html",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/vnd.kubernetes.protobuf",
    ]
)
# The verbs kube-apiserver serves, and methods it does not (each must get a Status 405).
methods = st.sampled_from(
    ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "BREW"]
)


def _check_status_body(status: int, headers: dict[str, str], body: bytes, what: str) -> None:
    assert status != 500, f"{what}: 500 {body[:500]!r}"
    if status < 400:
        return
    if headers.get("content-type", "").startswith("text/plain"):
        return  # /healthz and friends
    try:
        status_obj: Any = json.loads(body)
    except ValueError:
        pytest.fail(f"{what}: {status} with a body that is not JSON: {body[:300]!r}")
    assert isinstance(status_obj, dict), what
    assert status_obj.get("kind") == "Status", (what, status_obj)
    assert status_obj.get("apiVersion") == "v1", (what, status_obj)
    assert status_obj.get("status") == "Failure", (what, status_obj)
    assert status_obj.get("code") == status, (what, status_obj)
    assert isinstance(status_obj.get("message"), str), (what, status_obj)
    assert isinstance(status_obj.get("reason", ""), str), (what, status_obj)


@pytest.fixture
def sent(request: pytest.FixtureRequest) -> Iterator[list[int]]:
    """The fuzzer's requests, one entry each (one list for all of a test's examples); the
    count goes into the test's report, for the summary line."""
    requests: list[int] = []
    yield requests
    request.node.user_properties.append((WIRE_FUZZ_SENT, len(requests)))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(
    method=methods,
    path=paths,
    query=queries,
    content_type=content_types,
    accept=accepts,
    body=bodies,
)
def test_hostile_requests_get_a_status_and_never_kill_the_server(
    api: Endpoint,
    sent: list[int],
    method: str,
    path: str,
    query: list[tuple[str, str]],
    content_type: str,
    accept: str,
    body: bytes | None,
) -> None:
    import urllib.parse

    target = path + ("?" + urllib.parse.urlencode(query) if query else "")
    headers = {"Accept": accept} if accept else {}
    # A watch that opens is held open by the server: what matters is that it opened (headers),
    # not when the shared server's clock ends it.
    reply = api.request(
        method,
        target,
        body,
        headers=headers,
        content_type=content_type or None,
        leave_streams=True,
    )
    sent.append(1)
    if method == "HEAD":
        return
    if reply.headers.get("transfer-encoding") == "chunked":
        return  # a watch stream that opened: fine
    _check_status_body(reply.status, reply.headers, reply.body, f"{method} {target}")


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "CONNECT", "BREW"])
def test_a_method_the_server_does_not_serve_is_a_405_status(api: Endpoint, method: str) -> None:
    reply = api.request(method, "/api/v1/namespaces/default/pods", None)
    assert reply.status == 405, reply.body[:300]
    _check_status_body(reply.status, reply.headers, reply.body, method)
    assert json.loads(reply.body)["reason"] == "MethodNotAllowed"


def test_a_body_over_three_mebibytes_is_413(api: Endpoint) -> None:
    # The server answers from the Content-Length alone, before reading the body: the headers
    # are sent and the body withheld, so the answer is read without a reset in the way.
    head = (
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\nContent-Length: {3 * 1024 * 1024 + 1}\r\n\r\n"
    ).encode()
    with socket.create_connection((api.host, api.port), timeout=30) as sock:
        sock.sendall(head)
        answer = sock.makefile("rb").read()
    status_line, _, rest = answer.partition(b"\r\n")
    assert b" 413 " in status_line, answer[:300]
    status = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert status["reason"] == "RequestEntityTooLarge"
    assert status["message"] == "Request entity too large: limit is 3145728"
    assert api.alive()


def test_a_truncated_chunked_upload_and_a_stalled_client_do_not_stop_the_server(
    api: Endpoint,
) -> None:
    # A chunked body cut off mid-chunk, then the connection closed.
    with socket.create_connection((api.host, api.port), timeout=30) as sock:
        sock.sendall(
            b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
            b'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"meta'
        )
    # A client that sends half a request line and stalls: others are served meanwhile.
    stalled = socket.create_connection((api.host, api.port), timeout=30)
    try:
        stalled.sendall(b"GET /api/v1/namespa")
        assert api.alive()
        assert api.get("/api/v1/namespaces").status == 200
    finally:
        stalled.close()
    assert api.alive()
