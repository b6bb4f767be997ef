"""The admin API's fault endpoints, as a plain script against ``kubesim serve`` uses them.

Each test runs a server of its own: a stalled watch cache or a failing window would disturb
the tests sharing the session's server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.conftest import serve
from tests.conformance.objects import pod
from tests.conformance.wire import Endpoint

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def own() -> Iterator[Endpoint]:
    with serve() as endpoint:
        yield endpoint


def names(api: Endpoint, query: str) -> list[str]:
    listed = api.ok("GET", f"{PODS}?{query}")
    return sorted(item["metadata"]["name"] for item in listed["items"])


def test_a_stalled_watch_cache_serves_its_past_until_it_resumes(own: Endpoint) -> None:
    own.ok("POST", PODS, pod("web"))
    stalled = own.admin("stall-watch-cache")["stalledAt"]
    own.ok("DELETE", f"{PODS}/web")
    newer = own.current_rv()
    assert int(stalled) < newer
    # resourceVersion "0" is any version: the stalled cache answers with the deleted pod.
    assert names(own, "resourceVersion=0") == ["web"]
    # A list from a newer version than the cache holds waits, then is a 504 (too large RV).
    refused = own.get(f"{PODS}?resourceVersion={newer}&resourceVersionMatch=NotOlderThan")
    assert refused.status == 504, refused
    assert refused.json()["reason"] == "Timeout"
    held = own.admin("resume-watch-cache")["held"]
    assert held >= 1
    assert names(own, "resourceVersion=0") == []


def test_a_lasting_failure_fails_every_list_for_its_seconds_then_ends(own: Endpoint) -> None:
    answer = own.admin("fail-requests", code=429, seconds=30, retryAfter=2, verbs="list")
    assert answer["failing"] == {"code": 429, "retry_after": 2, "seconds": 30.0, "verbs": ["list"]}
    for _ in range(3):  # however many requests come, every one fails while the window lasts
        refused = own.get(PODS)
        assert refused.status == 429, refused
        assert refused.headers["retry-after"] == "2"
        assert refused.json()["reason"] == "TooManyRequests"
    own.ok("POST", PODS, pod("web"))  # verbs=list: a create is not refused
    own.advance(31)
    assert names(own, "") == ["web"]


def test_a_counted_failure_fails_that_many_requests(own: Endpoint) -> None:
    own.admin("fail-requests", code=500, count=2)
    assert [own.get(PODS).status for _ in range(3)] == [500, 500, 200]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("code=418", "code must be one of"),
        ("code=abc", "code must be an integer, got code='abc'"),
        ("count=0", "count must be an int >= 1"),
        ("seconds=-1", "seconds must be a number > 0"),
        ("seconds=soon", "seconds must be a number > 0, got seconds='soon'"),
        ("verbs=list,fly", "verbs must be a non-empty collection of"),
    ],
)
def test_a_bad_fail_requests_argument_is_a_400_naming_it(
    own: Endpoint, query: str, message: str
) -> None:
    reply = own.request("POST", f"/kubesim/fail-requests?{query}")
    assert reply.status == 400, reply
    status = reply.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "BadRequest"
    assert message in status["message"], status["message"]
    assert own.get(PODS).status == 200  # nothing was registered, the server goes on


def test_reset_connections_reads_a_request_and_resets_it_unanswered(own: Endpoint) -> None:
    answer = own.admin("reset-connections", count=2, verbs="create")
    assert answer["resetting"] == {"count": 2, "verbs": ["create"]}
    for _ in range(2):
        with pytest.raises(ConnectionResetError):
            own.post(PODS, pod("web"))  # read, then reset: not created
    assert names(own, "") == []
    own.ok("POST", PODS, pod("web"))
    assert names(own, "") == ["web"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("count=0", "count must be an int >= 1"),
        ("code=500", "reset-connections takes count, seconds and verbs, not code"),
        ("verbs=fly", "verbs must be a non-empty collection of"),
    ],
)
def test_a_bad_reset_connections_argument_is_a_400_naming_it(
    own: Endpoint, query: str, message: str
) -> None:
    reply = own.request("POST", f"/kubesim/reset-connections?{query}")
    assert reply.status == 400, reply
    assert message in reply.json()["message"], reply.json()["message"]
    assert own.get(PODS).status == 200


def test_the_admin_index_lists_the_fault_endpoints(own: Endpoint) -> None:
    endpoints = own.ok("GET", "/kubesim/")["endpoints"]
    assert "POST /kubesim/stall-watch-cache" in endpoints
    assert "POST /kubesim/resume-watch-cache" in endpoints
    assert any(key.startswith("POST /kubesim/fail-requests") for key in endpoints)
