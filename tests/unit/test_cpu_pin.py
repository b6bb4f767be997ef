"""A controlled run keeps its threads on one CPU while it lasts, and gives them back after.

kubesim.sched.affinity explains why (a hand-off between two cores costs about twice one on a
core); these tests pin down what it does: who is pinned, when, and that nothing stays pinned.
"""

from __future__ import annotations

import os
import threading

import pytest

from kubesim.sched import Preemptions, Scheduler
from kubesim.sched.affinity import CpuPin

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs a platform with CPU affinity (Linux) and at least two usable CPUs",
)


def _cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def _run(scenario, **options) -> Scheduler:
    scheduler = Scheduler(strategy=Preemptions([]), **options)
    result = scheduler.run(scenario)
    assert result.ok, result.failure
    return scheduler


def test_every_thread_of_a_run_is_on_one_cpu_and_the_driver_gets_its_cpus_back() -> None:
    before = _cpus()
    seen: dict[str, set[int]] = {}

    def scenario() -> None:
        seen["main"] = _cpus()

        def child() -> None:
            seen["child"] = _cpus()

        thread = threading.Thread(target=child)
        thread.start()
        thread.join()

    _run(scenario)
    assert len(seen["main"]) == 1
    assert seen["child"] == seen["main"]
    assert seen["main"] <= before
    assert _cpus() == before


def test_a_driven_run_is_pinned_from_start_to_finish() -> None:
    before = _cpus()
    seen: list[set[int]] = []
    scheduler = Scheduler(strategy=Preemptions([]))
    scheduler.start_external()
    try:
        assert len(_cpus()) == 1  # the driver itself, so the threads it spawns inherit it
        scheduler.spawn(lambda: seen.append(_cpus()), name="store")
        scheduler.run_until_quiescent()
    finally:
        scheduler.finish()
    assert len(seen) == 1
    assert len(seen[0]) == 1
    assert _cpus() == before


def test_a_thread_still_alive_after_the_run_gets_its_cpus_back() -> None:
    """A thread started during the run that outlives it (a pool's worker) is not left on one
    CPU for the rest of the process."""
    before = _cpus()
    pin = CpuPin()
    pin.pin()
    release = threading.Event()
    ident: list[int] = []

    def worker() -> None:
        ident.append(threading.get_native_id())
        release.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        while not ident:
            release.wait(0.001)
        assert len(os.sched_getaffinity(ident[0])) == 1
        pin.release()
        assert set(os.sched_getaffinity(ident[0])) == before
        assert _cpus() == before
    finally:
        pin.release()
        release.set()
        thread.join()


def test_a_nested_pin_keeps_the_outer_one() -> None:
    before = _cpus()
    outer, inner = CpuPin(), CpuPin()
    outer.pin()
    try:
        pinned = _cpus()
        inner.pin()
        assert not inner.pinned  # already on one CPU: nothing to do, nothing to undo
        inner.release()
        assert _cpus() == pinned
    finally:
        outer.release()
    assert _cpus() == before


def test_one_cpu_false_leaves_affinity_alone() -> None:
    before = _cpus()
    seen: list[set[int]] = []
    _run(lambda: seen.append(_cpus()), one_cpu=False)
    assert seen == [before]
