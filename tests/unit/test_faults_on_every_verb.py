"""Faults reach every verb a store uses, not only its lists and watches.

A store that polls with ``get`` or writes with ``patch`` never met an ``http-error`` or an
``outage`` when both failed lists and watches only: its verdict of "held up" meant nothing.
An ``http-error`` may now fail one of the verbs the store has sent so far; an ``outage`` fails
every request, as an API server that is down does.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import AdvanceTime, FailRequests, LastingErrors, step_from_json
from kubesim.wire.routes import Request, handle


def test_the_verbs_sent_are_those_asked_in_the_order_first_asked() -> None:
    server = APIServer(seed=1)
    server.create("namespaces", {"metadata": {"name": "team"}})
    assert server.verbs_sent() == ()
    for method, target in [
        ("GET", "/api/v1/namespaces/team"),
        ("GET", "/api/v1/pods"),
        ("GET", "/api/v1/namespaces/team"),
        ("GET", "/api/v1/pods?watch=1&timeoutSeconds=1"),
    ]:
        handle(server, Request.from_target(method, target))
    assert server.verbs_sent() == ("get", "list", "watch")


@pytest.mark.parametrize(
    ("verb", "sent", "failed"),
    [
        (-1, ("get", "patch"), ("list", "watch")),  # the drawn default: the list/watch path
        (0, ("get", "patch"), ("get",)),
        (1, ("get", "patch"), ("patch",)),
        (3, ("get", "patch"), ("patch",)),  # modulo what was sent
        (2, (), ("list", "watch")),  # nothing sent yet
    ],
)
def test_an_http_error_fails_one_verb_the_store_sent(
    verb: int, sent: tuple[str, ...], failed: tuple[str, ...]
) -> None:
    step = FailRequests(count=1, code=500, verb=verb)
    assert step.verbs(sent) == failed
    assert step_from_json(step.to_json()) == step
    # A token written before the field existed reads as the list/watch path.
    assert step_from_json({"kind": "http-error", "count": 1, "code": 500}).verb == -1


class Poller:
    """Polls a namespace with get and marks it with patch every 10 s; keeps what failed."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self.failed: list[tuple[str, int]] = []
        self.polls = 0

    def run(self) -> None:
        while True:
            for verb, call in (
                ("get", lambda: self.core.read_namespace("default")),
                (
                    "patch",
                    lambda: self.core.patch_namespace(
                        "default", {"metadata": {"annotations": {"polled": str(self.polls)}}}
                    ),
                ),
            ):
                try:
                    call()
                except client.ApiException as error:
                    self.failed.append((verb, error.status))
            self.polls += 1
            time.sleep(10)


def _run(steps: list[Any]) -> tuple[Poller, list[str]]:
    made: list[Poller] = []

    def factory(api_client: client.ApiClient) -> Poller:
        made.append(Poller(api_client))
        return made[-1]

    result = run_scenario(factory, [AdvanceTime(30), *steps], seed=1)
    return made[0], result.lines


@pytest.mark.parametrize(("verb", "expected"), [(0, "get"), (1, "patch")])
def test_a_poller_meets_the_http_error_on_the_verb_drawn(verb: int, expected: str) -> None:
    poller, lines = _run([FailRequests(count=1, code=500, verb=verb), AdvanceTime(30)])
    assert poller.failed == [(expected, 500)]
    assert f"fail the next 1 {expected} request with 500" in lines


def test_a_poller_on_the_list_and_watch_path_meets_nothing() -> None:
    poller, _ = _run([FailRequests(count=3, code=500), AdvanceTime(30)])
    assert poller.failed == []


def test_an_outage_fails_a_pollers_gets_and_writes_while_it_lasts() -> None:
    poller, lines = _run([LastingErrors(seconds=30, code=500)])
    verbs = {verb for verb, _ in poller.failed}
    assert verbs == {"get", "patch"}
    assert {code for _, code in poller.failed} == {500}
    assert 3 <= len(poller.failed) <= 8  # a poll every 10 s through 30 s: each of its requests
    assert "a 500 outage for 30 s: watches cut, every request fails" in lines
