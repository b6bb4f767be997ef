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
