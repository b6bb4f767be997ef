"""The simulation: the store's threads run under the controlled scheduler, one at a time,
until every one of them waits; the driver (the test) then writes, injects faults, moves time."""

from __future__ import annotations

import _thread
import json
import queue
import sys
import threading
import time

import pytest
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from kubesim import Simulation, StoreBlockedOutsideSimulation, StoreCrashed
from kubesim.sched import RandomWalk
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
    never = threading.Event()  # created before the run: a real Event
    sim = Simulation(seed=1, handoff_timeout=0.5)
    with pytest.raises(StoreBlockedOutsideSimulation, match="blocked outside the simulation"):
        sim.start(never.wait)
    never.set()


def _pod_names(api: client.ApiClient) -> list[str]:
    pods = client.CoreV1Api(api).list_pod_for_all_namespaces().items
    return sorted(p.metadata.name for p in pods)


def test_a_store_polling_with_sleep_sees_a_write_after_virtual_seconds() -> None:
    polls: list[list[str]] = []

    with Simulation(seed=1) as sim:
        api = sim.kubernetes_client()

        def poll_forever() -> None:
            while True:
                polls.append(_pod_names(api))
                time.sleep(5)  # virtual: the store waits, the simulation is quiescent

        sim.start(poll_forever)
        assert polls == [[]]
        sim.server.create("pods", make_pod("b", "default"))
        sim.settle()
        assert polls == [[]]  # still asleep: settle() does not move time
        sim.advance(5)
        assert polls == [[], ["b"]]
        assert sim.clock.now() == 5


class WorkerStore:
    """run() starts a worker that lists and then watches; run() waits for it on an Event."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.listed: list[str] = []
        self.ready_seen = False
        self.watcher = RawWatcher(api)

    def run(self) -> None:
        ready = threading.Event()

        def worker() -> None:
            self.listed = _pod_names(self.api)
            ready.set()
            self.watcher.run()

        threading.Thread(target=worker, name="worker", daemon=True).start()
        ready.wait()
        self.ready_seen = True
        ready.clear()
        ready.wait()  # forever: only stop() ends it


def test_a_store_whose_run_waits_on_an_event_its_worker_sets() -> None:
    with Simulation(seed=1) as sim:
        sim.server.create("pods", make_pod("a", "default"))
        store = WorkerStore(sim.kubernetes_client())
        sim.start(store.run)
        assert store.ready_seen
        assert store.listed == ["a"]
        sim.server.create("pods", make_pod("b", "default"))
        sim.settle()
        assert store.watcher.seen == [("ADDED", "a"), ("ADDED", "b")]


class QueueStore:
    """A watch thread feeds a handler thread through a queue.Queue."""

    def __init__(self, api: client.ApiClient, *, fail_on: str | None = None) -> None:
        self.core = client.CoreV1Api(api)
        self.handled: list[tuple[str, str]] = []
        self.fail_on = fail_on

    def run(self) -> None:
        events: queue.Queue[tuple[str, str]] = queue.Queue()

        def handler() -> None:
            while True:
                kind, name = events.get()
                if name == self.fail_on:
                    raise KeyError(name)
                self.handled.append((kind, name))

        threading.Thread(target=handler, name="handler", daemon=True).start()
        while True:
            response = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            for line in iter_resp_lines(response):
                event = json.loads(line)
                events.put((event["type"], event["object"]["metadata"]["name"]))


def test_a_watch_thread_feeds_a_handler_thread_through_a_queue() -> None:
    with Simulation(seed=1) as sim:
        sim.server.create("pods", make_pod("a", "default"))
        store = QueueStore(sim.kubernetes_client())
        sim.start(store.run)
        assert store.handled == [("ADDED", "a")]
        sim.server.delete("pods", "a", namespace="default")
        sim.server.create("pods", make_pod("b", "default"))
        sim.settle()
        assert store.handled == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "b")]


def test_threaded_stores_give_the_same_trace_hash_for_the_same_seed() -> None:
    def run(seed: int) -> str:
        with Simulation(seed=seed) as sim:
            for n in range(3):
                sim.server.create("pods", make_pod(f"p{n}", "default"))
            sim.start(QueueStore(sim.kubernetes_client()).run)
            sim.advance(3600)
            sim.server.expire_watches()
            sim.settle()
            return sim.trace.hexdigest()

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_a_crash_in_a_store_thread_is_reported_once() -> None:
    with Simulation(seed=1) as sim:
        store = QueueStore(sim.kubernetes_client(), fail_on="boom")
        sim.start(store.run)
        sim.server.create("pods", make_pod("boom", "default"))
        with pytest.raises(StoreCrashed, match="'handler' raised KeyError") as crashed:
            sim.settle()
        sim.settle()  # the simulation ended with the crash: nothing more to report
    assert isinstance(crashed.value.__cause__, KeyError)
    assert crashed.value.__context__ is None  # one report, not chained onto another
    assert "test_simulation.py" in str(crashed.value)


def _store_threads(before: list[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before]


def test_stop_unwinds_every_store_thread() -> None:
    before = threading.enumerate()
    sim = Simulation(seed=1)
    sim.start(WorkerStore(sim.kubernetes_client()).run)
    assert len(_store_threads(before)) == 2  # the store's main thread and its worker
    sim.stop()
    assert _store_threads(before) == []
    assert sim.store_finished


def test_a_store_blocked_on_a_real_lock_is_named_within_seconds() -> None:
    gate = _thread.allocate_lock()  # created before the run: a real lock
    gate.acquire()

    def blocked_store() -> None:
        gate.acquire()  # the line the report must show

    try:
        # The cap (handoff_timeout) is the last resort; the watchdog must report first.
        with (
            pytest.raises(StoreBlockedOutsideSimulation) as blocked,
            Simulation(seed=1, stuck_after=1.0, handoff_timeout=8.0) as sim,
        ):
            sim.start(blocked_store, name="gatekeeper")
        message = str(blocked.value)
        assert "'gatekeeper' has not moved for 1 s" in message
        assert "gate.acquire()  # the line the report must show" in message
        assert "left behind" in message
        assert blocked.value.__context__ is None  # reported once, not chained onto itself
    finally:
        gate.release()  # the abandoned daemon thread then ends on its own


def test_a_long_computation_without_scheduling_points_is_not_reported() -> None:
    sim = Simulation(seed=1, stuck_after=1.0)
    watchdog = sim.scheduler

    def compute() -> None:
        # Pure Python with no scheduling point, until the watchdog has looked at this thread
        # for twice the window in which an unmoving thread would be reported.
        n = 0
        window = watchdog.watchdog_samples + 8
        while watchdog.watchdog_samples < window:
            n += 1

    sim.start(compute)
    assert sim.store_finished
    sim.stop()


def test_the_driver_spawns_readers_that_run_with_the_store() -> None:
    with Simulation(seed=1) as sim:
        sim.server.create("pods", make_pod("a", "default"))
        store = RawWatcher(sim.kubernetes_client())
        sim.start(store.run)
        reads: list[list[tuple[str, str]]] = []
        reader = sim.spawn(lambda: reads.append(list(store.seen)), name="reader")
        assert not reader.finished
        assert reads == []
        sim.server.create("pods", make_pod("b", "default"))
        sim.settle()
        assert reader.finished
        assert reads in ([[("ADDED", "a")]], [[("ADDED", "a"), ("ADDED", "b")]])
        assert store.seen == [("ADDED", "a"), ("ADDED", "b")]


def test_the_driver_can_set_an_event_the_store_waits_on() -> None:
    with Simulation(seed=1) as sim:
        box: dict[str, threading.Event] = {}
        woke: list[bool] = []

        def store() -> None:
            box["go"] = threading.Event()  # created in the run: a simulated Event
            woke.append(box["go"].wait())

        sim.start(store)
        assert woke == []
        box["go"].set()  # from the driver, between settles
        sim.settle()
        assert woke == [True]
        assert sim.store_finished


class Counter:
    """Two threads bump a shared count without a lock: a lost update needs a preemption."""

    def __init__(self) -> None:
        self.count = 0

    def bump(self) -> None:
        for _ in range(20):
            self.count += 1

    def run(self) -> None:
        other = threading.Thread(target=self.bump, name="other")
        other.start()
        self.bump()
        other.join()


def _count(**options: object) -> int:
    with Simulation(seed=options.pop("seed", 0), **options) as sim:  # type: ignore[arg-type]
        counter = Counter()
        sim.start(counter.run)
        assert sim.store_finished
        return counter.count


def test_a_traced_store_explores_interleavings_of_its_own_threads() -> None:
    traced = [sys.modules[__name__]]
    assert _count(traced=traced) == 40  # by default no thread is preempted: a fixed order
    explored = [_count(seed=s, strategy=RandomWalk(0.3), traced=traced) for s in range(3)]
    assert min(explored) < 40  # a preemption inside `count += 1` lost an update
    assert explored == [_count(seed=s, strategy=RandomWalk(0.3), traced=traced) for s in range(3)]


class InlineCounter:
    """Both threads wait across a settle, then bump inline in the frame that waited.

    The racy loop runs in a frame that started before the settle: scheduling points must
    reach it too (sys.monitoring enables events per code object, so a backend switched off
    and on again between settles would not see that frame again).
    """

    def __init__(self) -> None:
        self.count = 0
        self.go: threading.Event | None = None

    def bump_after_go(self) -> None:
        assert self.go is not None
        self.go.wait()
        for _ in range(20):
            self.count += 1

    def run(self) -> None:
        self.go = threading.Event()
        other = threading.Thread(target=self.bump_after_go, name="other")
        other.start()
        self.go.wait()
        for _ in range(20):
            self.count += 1
        other.join()


def _count_across_settles(seed: int, strategy: object) -> int:
    traced = [sys.modules[__name__]]
    with Simulation(seed=seed, strategy=strategy, traced=traced) as sim:  # type: ignore[arg-type]
        counter = InlineCounter()
        sim.start(counter.run)
        assert not sim.store_finished  # both threads wait for go
        assert counter.go is not None
        counter.go.set()
        sim.settle()
        assert sim.store_finished
        return counter.count


def test_scheduling_points_reach_frames_that_waited_across_a_settle() -> None:
    explored = [_count_across_settles(s, RandomWalk(0.3)) for s in range(6)]
    assert min(explored) < 40, explored
