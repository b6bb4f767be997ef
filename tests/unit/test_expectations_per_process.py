"""effects-expected asks a store only about what its own process was shown.

Two ways it once asked for more, both false alarms on a correct informer (dask-gateway's):

- a restarted store was expected to react to the deletion of a pod only the crashed process
  had seen (a new process knows only what its own lists and watches told it);
- a consistent list that waited for a watch cache behind storage was evaluated twice (the
  in-process transports wait on the virtual clock, then ask again), and the objects of the
  first answer, which the client never got, counted as shown.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("kubernetes")

from kubesim import APIServer
from kubesim.apiserver.lists import ASKS_AGAIN
from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import CrashAndRestart, DeletePods
from kubesim.wire.routes import Request, handle
from models.endpoint_table import PodController


class SlowToStart(PodController):
    """NPM's pod controller, fixed (it keys tombstones), that expects a cleanup for every
    deletion (a store cannot always tell what it programmed) and, once restarted, waits 30 s
    before its first list (a process that comes back slowly)."""

    starts = 0

    def run(self) -> None:
        SlowToStart.starts += 1
        if SlowToStart.starts > 1:
            time.sleep(30)
        super().run()

    def expects(self, event: dict[str, Any]) -> str | None:
        return event["object"]["metadata"]["uid"] if event["type"] == "DELETED" else None


def slow_to_start(api_client: Any) -> SlowToStart:
    return SlowToStart(api_client, tombstone_key=True)


def test_a_restarted_store_owes_nothing_for_what_only_its_predecessor_saw() -> None:
    SlowToStart.starts = 0
    # The crashed process was shown team-0/web-000; it is deleted before the new process
    # lists, and that list is the new process's first sight of the world.
    result = run_scenario(slow_to_start, [CrashAndRestart(), DeletePods(1)], seed=0)
    assert "delete team-0/web-000" in result.lines[1]
    verdict = {v.property: str(v) for v in judge(result.recording).violations}
    assert "effects-expected" not in verdict, verdict["effects-expected"]
    assert all("web-000" not in str(e.key) for e in result.recording.expected or [])


def _pod(name: str) -> dict[str, Any]:
    spec = {"containers": [{"name": "main", "image": "nginx"}]}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _pods_listed(server: APIServer, **options: Any) -> tuple[float, list[int], int]:
    shown: list[int] = []
    server.delivery_listeners.append(lambda stored: shown.append(stored.rv))
    before = server.lists_completed
    response = handle(server, Request("GET", "/api/v1/pods"), **options)
    server.delivery_listeners.clear()
    return response.wait, shown, server.lists_completed - before


def test_an_answer_the_client_will_ask_again_for_shows_it_nothing() -> None:
    server = APIServer(consistent_list_from_cache=True)
    server.create("pods", _pod("web"))
    server.stall_watch_cache()
    server.create("pods", _pod("api"))
    # The in-process transports on virtual time: the first answer waits and is thrown away.
    wait, shown, completed = _pods_listed(server, asks_again=True)
    assert wait > 0
    assert (shown, completed) == ([], 0)
    # The answer they deliver, after the wait.
    _, shown, completed = _pods_listed(server, asks_again=True, waited=True)
    assert len(shown) == 2
    assert completed == 1
    # Over HTTP the first answer is the one delivered.
    _, shown, completed = _pods_listed(server)
    assert len(shown) == 2
    assert completed == 1
    assert ASKS_AGAIN.get() is False  # the request's setting does not outlive it
