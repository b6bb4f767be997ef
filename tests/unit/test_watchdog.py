"""The scheduler's watchdog: a controlled thread blocked on something kubesim does not control
is named within seconds, once, and the run ends cleanly without it."""

from __future__ import annotations

import _thread
import threading
import time

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
