"""The scheduler's watchdog: a controlled thread blocked on something kubesim does not control
is named within seconds, once, and the run ends cleanly without it."""

from __future__ import annotations

import _thread
import threading
import time
from pathlib import Path

from kubesim.sched import Preemptions, Scheduler
from kubesim.sched.scheduler import BlockedOutsideSimulation


def test_a_thread_blocked_on_a_real_lock_ends_the_run_with_its_stack() -> None:
    gate = _thread.allocate_lock()  # created before the run: a real lock
    gate.acquire()
    unwound: list[str] = []

    def sleeper() -> None:
        try:
            time.sleep(3600)  # virtual: parked in the scheduler
        finally:
            unwound.append("sleeper")

    def scenario() -> None:
        threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
        time.sleep(1)  # the sleeper starts its hour-long sleep
        gate.acquire()  # blocks in C, holding the baton

    scheduler = Scheduler(strategy=Preemptions([]), stuck_after=1.0, handoff_timeout=8.0)
    try:
        result = scheduler.run(scenario, name="gatekeeper")
    finally:
        gate.release()
    assert isinstance(result.failure, BlockedOutsideSimulation)
    assert result.failure.thread_name == "gatekeeper"
    assert "gate.acquire()  # blocks in C, holding the baton" in str(result.failure)
    assert unwound == ["sleeper"]  # every other thread was unwound


def test_a_busy_wait_on_another_thread_is_reported_as_a_spin_and_stopped() -> None:
    # The waiting thread polls a flag the other thread would set: on a machine the OS would
    # preempt it; kubesim runs one thread at a time and switches at scheduling points only,
    # and this code has none (nothing is traced). It must not hang the run, nor burn a core
    # afterwards.
    from kubesim.sched.scheduler import Spinning

    state: dict[str, object] = {}
    stopped = threading.Event()  # created before the run: a real event

    def setter() -> None:
        state["ready"] = True

    def scenario() -> None:
        threading.Thread(target=setter, name="setter", daemon=True).start()
        try:
            while "ready" not in state:
                pass
        finally:
            stopped.set()

    scheduler = Scheduler(strategy=Preemptions([]), spin_after=1.0, handoff_timeout=10.0)
    result = scheduler.run(scenario, name="poller")
    assert isinstance(result.failure, Spinning)
    assert result.failure.thread_name == "poller"
    text = str(result.failure)
    assert "used CPU for 1 s of wall time without reaching a scheduling point" in text
    assert "in scenario" in text  # the frame that spins, with its line
    assert 'while "ready" not in state:' in text
    assert stopped.wait(10), "the spinning thread was stopped, not left burning a core"


def test_a_traced_busy_wait_yields_after_a_time_slice_and_ends() -> None:
    # The same poller, in traced code: it reaches scheduling points, and the strategy (no
    # preemption drawn) would run it for ever (a livelock it is not). After TIME_SLICE points
    # while the setter is runnable, the scheduler switches to it, as an OS would.
    from kubesim.sched.scheduler import TIME_SLICE

    state: dict[str, object] = {}

    def setter() -> None:
        state["ready"] = True

    def scenario() -> None:
        threading.Thread(target=setter, name="setter", daemon=True).start()
        while "ready" not in state:
            pass
        state["done"] = True

    scheduler = Scheduler(strategy=Preemptions([]), traced=[__file__])
    result = scheduler.run(scenario, name="poller")
    assert result.failure is None, result.failure
    assert state == {"ready": True, "done": True}
    assert TIME_SLICE <= scheduler.steps < 2 * TIME_SLICE


def test_a_campaign_past_its_max_time_gives_up_the_run_that_waits(tmp_path: Path) -> None:
    # An untraced busy-wait is called a spin only after 30 s of CPU; --max-time is shorter.
    from kubesim.testing.check import check_store

    class Spins:
        def __init__(self, api_client: object) -> None:
            self.ready = False

        def run(self) -> None:
            threading.Thread(target=self._set, daemon=True).start()
            while not self.ready:
                pass

        def _set(self) -> None:
            self.ready = True

    report = check_store(
        Spins, spec="spins", examples=5, database=":memory:", max_time=2, trace_store=False
    )
    assert report.out_of_time
    assert report.found is None  # no verdict: the example was given up, not judged
    assert report.examples == 1
