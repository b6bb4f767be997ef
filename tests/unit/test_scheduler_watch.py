"""Store threads that read watches run under the scheduler, in virtual time."""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

import kubesim
import kubesim.apiserver
import kubesim.wire
from kubesim.sched import PCT, NondeterminismDetected, RandomWalk, RunResult
from kubesim.sched import scheduler as sched
from kubesim.sched.explore import explore, run_schedule
from kubesim.sim.threads import controlled_server
from kubesim.workload import make_pod


class Reflector:
    """List, then watch from the last RV forever; counts what it saw."""

    def __init__(self, api: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api)
        self.pods: dict[str, str] = {}
        self.watches = 0
        self.synced = threading.Event()

    def run(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        rv = listed["metadata"]["resourceVersion"]
        self.pods = {
            p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in listed["items"]
        }
        self.synced.set()
        while True:
            self.watches += 1
            response = self.core.list_pod_for_all_namespaces(
                watch=True, resource_version=rv, _preload_content=False
            )
            for line in iter_resp_lines(response):
                event = json.loads(line)
                rv = event["object"]["metadata"]["resourceVersion"]
                name = event["object"]["metadata"]["name"]
                if event["type"] == "DELETED":
                    self.pods.pop(name, None)
                else:
                    self.pods[name] = rv


def test_an_hour_of_watch_traffic_with_expiries_runs_in_virtual_time() -> None:
    seen: dict[str, object] = {}

    def scenario() -> None:
        server = controlled_server(seed=3)
        server.create("pods", make_pod("a", "default"))
        reflector = Reflector(kubesim.kubernetes_client(server))
        threading.Thread(target=reflector.run, name="reflector", daemon=True).start()
        reflector.synced.wait()
        for n in range(6):
            time.sleep(600)  # ten virtual minutes
            server.create("pods", make_pod(f"p{n}", "default"))
        time.sleep(5400)
        seen["pods"] = sorted(reflector.pods)
        seen["watches"] = reflector.watches
        seen["now"] = server.clock.now()

    result = run_schedule(scenario, seed=1, strategy=RandomWalk(0.05))
    assert result.ok, result.failure
    assert seen["pods"] == ["a", "p0", "p1", "p2", "p3", "p4", "p5"]
    # Server-side timeouts in [1800, 3600) s over 9000 s: at least 3 re-watches.
    assert isinstance(seen["watches"], int)
    assert seen["watches"] >= 3
    assert seen["now"] == 9000


def test_uncontrolled_nondeterminism_is_reported_as_a_harness_problem() -> None:
    runs = itertools.count()

    def scenario() -> None:
        box = {"n": 0}

        def bump() -> None:
            box["n"] += 1

        # A count kept outside the run decides how many threads start: the run and its replay
        # differ, as with anything the choice source does not control (os.urandom, a clock).
        threads = [threading.Thread(target=bump) for _ in range(1 + next(runs) % 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        raise AssertionError("always fails, so explore replays it")

    with pytest.raises(NondeterminismDetected, match="on replay") as caught:
        explore(scenario, schedules=1, seed=0)
    assert "something the scheduler does not control" in str(caught.value)


def _bookmarked_watches(strategy_seed: int, strategy: kubesim.sched.Strategy) -> RunResult:
    """A store thread reads watches with bookmarks while the scenario writes and sleeps, so
    virtual time jumps over bookmark ticks and watch timeouts with every thread waiting."""

    def scenario() -> None:
        server = controlled_server(seed=3, bookmark_interval=5.0)
        server.create("pods", make_pod("a", "default"))
        core = client.CoreV1Api(kubesim.kubernetes_client(server))

        def reader() -> None:
            rv = ""
            while True:
                response = core.list_pod_for_all_namespaces(
                    watch=True,
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=30,
                    _preload_content=False,
                )
                for line in iter_resp_lines(response):
                    rv = json.loads(line)["object"]["metadata"]["resourceVersion"]

        threading.Thread(target=reader, name="reader", daemon=True).start()
        for n in range(4):
            time.sleep(7)
            server.create("pods", make_pod(f"p{n}", "default"))
        time.sleep(60)

    return run_schedule(scenario, seed=strategy_seed, strategy=strategy)


@pytest.mark.parametrize(
    "strategy", [lambda: PCT(2, 200), lambda: PCT(3, 200), lambda: RandomWalk(0.3)]
)
def test_time_jumps_over_bookmark_ticks_under_every_strategy(strategy: Any) -> None:
    for seed in range(3):
        result = _bookmarked_watches(seed, strategy())
        assert result.ok, result.failure
        assert result.virtual_time == 88


def test_a_point_from_a_thread_that_is_not_runnable_is_not_a_scheduling_point() -> None:
    # What a timer callback taking a simulated lock does while its thread hands off.
    seen: dict[str, int] = {}

    def scenario() -> None:
        run = sched.active()
        assert run is not None
        me = run.current_thread()
        assert me is not None
        before = run.steps
        me.state = sched.State.BLOCKED
        try:
            run.point()
        finally:
            me.state = sched.State.RUNNABLE
        seen["steps"] = run.steps - before

    result = run_schedule(scenario, seed=0, strategy=PCT(2, 10))
    assert result.ok, result.failure
    assert seen["steps"] == 0


def test_no_scheduling_point_while_a_thread_holds_the_server_lock_even_when_traced() -> None:
    # A thread preempted inside a server operation would leave the lock taken for the others
    # (and for the timer callbacks fired while they all wait).
    steps: list[int] = []

    def scenario() -> None:
        run = sched.active()
        assert run is not None
        server = controlled_server(seed=1)
        with server.lock:
            before = run.steps
            server.create("pods", make_pod("a", "default"))
            server.patch("pods", "a", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
            server.expire_watches()
            steps.append(run.steps - before)

    result = run_schedule(
        scenario,
        seed=0,
        strategy=RandomWalk(0.5),
        traced=[kubesim.apiserver, kubesim.wire],
        granularity="line",
    )
    assert result.ok, result.failure
    assert steps == [0]
