"""Store threads that read watches run under the scheduler, in virtual time."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

import kubesim
from kubesim.sched import NondeterminismDetected, RandomWalk
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

    started = time.perf_counter()
    result = run_schedule(scenario, seed=1, strategy=RandomWalk(0.05))
    assert result.ok, result.failure
    assert seen["pods"] == ["a", "p0", "p1", "p2", "p3", "p4", "p5"]
    # Server-side timeouts in [1800, 3600) s over 9000 s: at least 3 re-watches.
    assert isinstance(seen["watches"], int)
    assert seen["watches"] >= 3
    assert seen["now"] == 9000
    assert time.perf_counter() - started < 30


def test_uncontrolled_nondeterminism_is_reported_as_a_harness_problem() -> None:
    def scenario() -> None:
        box = {"n": 0}

        def bump() -> None:
            box["n"] += 1

        # os.urandom is outside the choice source: the run differs every time.
        threads = [threading.Thread(target=bump) for _ in range(1 + os.urandom(1)[0] % 3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        raise AssertionError("always fails, so explore replays it")

    def explore_until_caught() -> None:
        for _ in range(20):  # a replay draws the same thread count 1 time in 3
            explore(scenario, schedules=1, seed=0)

    with pytest.raises(NondeterminismDetected, match="on replay") as caught:
        explore_until_caught()
    assert "something the scheduler does not control" in str(caught.value)
