"""The simulation: the store runs in a simulated thread that yields only at watch reads."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from kubesim import Simulation, StoreBlockedOutsideSimulation, StoreCrashed
from kubesim.workload import make_pod


class RawWatcher:
    """A minimal raw-watch store: remembers the last event type per pod, re-watches forever."""

    def __init__(self, api_client: client.ApiClient, *, fail_on: str | None = None) -> None:
        self.core = client.CoreV1Api(api_client)
        self.seen: list[tuple[str, str]] = []
        self.fail_on = fail_on
        self.watches = 0

    def run(self) -> None:
        while True:
            self.watches += 1
            response = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            for line in iter_resp_lines(response):
                event = json.loads(line)
                name = event["object"]["metadata"]["name"]
                if name == self.fail_on:
                    raise KeyError(name)
                self.seen.append((event["type"], name))


def test_the_store_runs_until_it_waits_and_reacts_to_each_step() -> None:
    sim = Simulation(seed=1)
    sim.server.create("pods", make_pod("a", "default"))
    store = RawWatcher(sim.kubernetes_client())
    sim.start(store.run)
    assert store.seen == [("ADDED", "a")]
    sim.server.create("pods", make_pod("b", "default"))
    sim.settle()
    assert store.seen[-1] == ("ADDED", "b")
    sim.server.expire_watches()
    sim.settle()
    assert store.watches == 2
    assert store.seen[-2:] == [("ADDED", "a"), ("ADDED", "b")]  # the re-watch replays everything
    sim.stop()
    assert sim.store_finished


def test_an_hour_of_watch_timeouts_passes_in_virtual_time() -> None:
    sim = Simulation(seed=2)
    sim.server.create("pods", make_pod("a", "default"))
    store = RawWatcher(sim.kubernetes_client())
    sim.start(store.run)
    sim.advance(6 * 3600)
    # Default server-side timeouts are drawn from [1800, 3600) s: 6 hours end 6 to 12 watches.
    assert 6 <= store.watches - 1 <= 12
    assert sim.clock.now() == 6 * 3600
    sim.stop()


def test_same_seed_same_trace_hash() -> None:
    def run(seed: int) -> str:
        with Simulation(seed=seed) as sim:
            for n in range(5):
                sim.server.create("pods", make_pod(f"p{n}", "default"))
            store = RawWatcher(sim.kubernetes_client())
            sim.start(store.run)
            sim.advance(4 * 3600)
            sim.server.expire_watches()
            sim.settle()
            return sim.trace.hexdigest()

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_a_crash_in_the_store_thread_is_reported_with_its_traceback() -> None:
    sim = Simulation(seed=1)
    store = RawWatcher(sim.kubernetes_client(), fail_on="boom")
    sim.start(store.run)
    sim.server.create("pods", make_pod("boom", "default"))
    with pytest.raises(StoreCrashed, match="KeyError") as crashed:
        sim.settle()
    assert "test_simulation.py" in str(crashed.value)


def test_a_store_blocked_outside_the_simulation_is_a_loud_error() -> None:
    never = threading.Event()
    sim = Simulation(seed=1, handoff_timeout=0.5)
    with pytest.raises(StoreBlockedOutsideSimulation, match="blocked outside the simulation"):
        sim.start(never.wait)
    never.set()
