"""Threads for the scheduler's turn-taking tests (tests/unit/test_scheduler_turns.py): this
module is traced, so its lines are scheduling points."""

from __future__ import annotations

import threading
import time
from typing import Any

from kubesim.sched import Scheduler


def _named(scheduler: Scheduler, name: str) -> Any:
    return next(t for t in scheduler.threads if t.name == name)


def yield_scenario(scheduler: Scheduler, order: list[str]) -> None:
    def first() -> None:
        order.append("first: before")
        scheduler.yield_to(_named(scheduler, "second").id)
        order.append("first: after")

    def second() -> None:
        order.append("second")

    one = threading.Thread(target=first, name="first")
    two = threading.Thread(target=second, name="second")
    one.start()
    two.start()
    one.join()
    two.join()


def atomic_scenario(scheduler: Scheduler, steps: list[int]) -> None:
    lock = threading.Lock()

    def holder() -> None:
        with lock:
            time.sleep(1)  # the other thread runs, enters its atomic block and waits for us
            before = scheduler.steps
            total = 0
            for number in range(40):
                total += number
            steps.append(scheduler.steps - before)

    def bookkeeper() -> None:
        with scheduler.atomic(), lock:
            pass

    one = threading.Thread(target=holder, name="holder")
    two = threading.Thread(target=bookkeeper, name="bookkeeper")
    one.start()
    two.start()
    one.join()
    two.join()
