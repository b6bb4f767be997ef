"""``fieldValidation`` on writes: what kube-apiserver does with fields a built-in kind lacks.

Strict refuses the write (400, the strict decoding error naming every unknown field in document
order); Warn, the default, drops them and names each in a ``Warning: 299`` header; Ignore drops
them silently; any other directive is 422 on the request's options. Over a real socket.
"""

from __future__ import annotations

from typing import Any

import pytest

from .objects import pod, pods
from .wire import Endpoint

JSON = dict[str, Any]


def with_unknown_fields(name: str) -> JSON:
    body = pod(name, labels={"app": "web"})
    body["metadata"]["colour"] = "blue"
    body["spec"]["containers"][0]["sidecarMode"] = True
    body["spec"]["replicas"] = 3
    return body


UNKNOWN = ("metadata.colour", "spec.containers[0].sidecarMode", "spec.replicas")


def test_strict_refuses_a_body_with_unknown_fields_and_stores_nothing(
    api: Endpoint, ns: str
) -> None:
    reply = api.request("POST", pods(ns) + "?fieldValidation=Strict", with_unknown_fields("s"))
    assert reply.status == 400, reply
    status = reply.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        + ", ".join(f'unknown field "{field}"' for field in UNKNOWN)
    )
    assert api.request("GET", pods(ns, "s")).status == 404
    # A body with only known fields passes Strict.
    assert api.request("POST", pods(ns) + "?fieldValidation=Strict", pod("s")).status == 201
    replaced = with_unknown_fields("s")
    reply = api.request("PUT", pods(ns, "s") + "?fieldValidation=Strict", replaced)
    assert reply.status == 400, reply


@pytest.mark.parametrize("query", ["", "?fieldValidation=Warn"])
def test_warn_the_default_drops_unknown_fields_and_names_each_in_a_warning(
    api: Endpoint, ns: str, query: str
) -> None:
    reply = api.request("POST", pods(ns) + query, with_unknown_fields("w"))
    assert reply.status == 201, reply
    assert reply.headers["warning"] == ", ".join(
        f'299 - "unknown field \\"{field}\\""' for field in UNKNOWN
    )
    stored = api.ok("GET", pods(ns, "w"))
    assert "colour" not in stored["metadata"]
    assert stored["metadata"]["labels"] == {"app": "web"}
    assert "sidecarMode" not in stored["spec"]["containers"][0]
    assert "replicas" not in stored["spec"]


def test_ignore_drops_unknown_fields_without_a_warning(api: Endpoint, ns: str) -> None:
    reply = api.request("POST", pods(ns) + "?fieldValidation=Ignore", with_unknown_fields("i"))
    assert reply.status == 201, reply
    assert "warning" not in reply.headers
    assert "replicas" not in api.ok("GET", pods(ns, "i"))["spec"]


@pytest.mark.parametrize(
    ("method", "options"), [("POST", "CreateOptions"), ("PATCH", "PatchOptions")]
)
def test_an_unknown_directive_is_422_on_the_options(
    api: Endpoint, ns: str, method: str, options: str
) -> None:
    api.ok("POST", pods(ns), pod("d"), expect=201)
    path = (pods(ns) if method == "POST" else pods(ns, "d")) + "?fieldValidation=Loose"
    reply = api.request(
        method,
        path,
        pod("d2") if method == "POST" else {"metadata": {"labels": {"a": "b"}}},
        content_type="application/json" if method == "POST" else "application/merge-patch+json",
    )
    assert reply.status == 422, reply
    status = reply.json()
    assert status["details"]["kind"] == options
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Loose": supported values: "Ignore", "Strict", "Warn"',
            "field": "fieldValidation",
        }
    ]
