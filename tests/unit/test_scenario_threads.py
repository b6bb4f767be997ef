"""The property layer with the store's own threads: readers, workers, crashes, deadlocks."""

from __future__ import annotations

from typing import Any

import property_stores as stores

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import (
    CompactHistory,
    CrashAndRestart,
    CreatePods,
    DeletePods,
    ExpireWatches,
    ReadConcurrently,
)
from kubesim.sched import Preemptions
from kubesim.testing.check import check_store


def violated(result: object) -> dict[str, str]:
    verdict = judge(result.recording)  # type: ignore[attr-defined]
    return {v.property: str(v) for v in verdict.violations}


def test_a_store_built_with_locks_and_conditions_runs_them_simulated() -> None:
    # The factory runs inside the simulation: its Lock and Condition are the simulated ones, so
    # the store is not reported as blocked outside the simulation.
    result = run_scenario(stores.locked_cache, [CreatePods(2), ExpireWatches()], seed=1)
    assert violated(result) == {}
    assert {"read", "view"} <= result.recording.hooks


def test_readers_overlap_the_next_step_and_their_reads_are_judged() -> None:
    steps = [ReadConcurrently(), CreatePods(2), ReadConcurrently(), DeletePods(1)]
    result = run_scenario(stores.locked_cache, steps, seed=1)
    assert violated(result) == {}
    reads = result.recording.reads
    # A reader reads once per step from the step after its own on (a scraper), through the
    # quiesce and tail rounds: reader-1 from round 2, reader-2 from round 4. Its twin reads
    # whenever the store lists: at the forced relist of the quiesce round (round 6).
    first = {}
    for read in reads:
        first.setdefault(read.reader, read.round)
    assert first == {"reader-1": 2, "reader-2": 4, "reader-1-relist": 6, "reader-2-relist": 6}
    rounds = len(result.recording.rounds)
    assert sum(read.reader == "reader-1" for read in reads) == rounds - 2
    assert len(result.recording.snapshot_reads) == len(reads)
    assert result.lines[0].startswith("reader thread 'reader-1': read() while the store reacts")


def test_a_read_step_on_a_store_without_read_is_skipped_visibly() -> None:
    result = run_scenario(stores.reflector, [ReadConcurrently()], seed=1)
    assert result.lines == ["reader thread: skipped (the store has no read() hook)"]
    assert violated(result) == {}


def test_a_clear_then_add_relist_is_a_torn_read_found_by_check_store() -> None:
    report = check_store(
        stores.clear_then_add,
        spec="tests/unit/property_stores.py:clear_then_add",
        examples=200,
        seed=0,
        kinds=["read", "compact", "expire", "delete", "create"],
        database=":memory:",
    )
    assert report.found is not None, "the torn relist was not found"
    assert "snapshot-reads" in report.found.properties
    correct = check_store(
        stores.locked_cache,
        examples=100,
        seed=0,
        kinds=["read", "compact", "expire", "delete", "create"],
        database=":memory:",
    )
    assert correct.ok, str(correct.found)


def test_preemption_offsets_apply_to_every_step_so_a_late_relist_is_reached() -> None:
    # The relist comes last, after many scheduling points; offsets count from the start of
    # each step's settle, so small offsets reach into it all the same.
    steps = [ReadConcurrently(), *[CreatePods(1)] * 8, ExpireWatches(with_error=True)]
    torn = []
    for offset in range(16):
        result = run_scenario(stores.clear_then_add, steps, seed=1, schedule=[offset])
        if "snapshot-reads" in violated(result):
            torn.append(offset)
    assert torn, "no small offset reached the relist of the last step"
    assert result.recording.rounds[-1].index > 10


def test_crash_and_restart_builds_a_fresh_store_that_converges() -> None:
    result = run_scenario(
        stores.reflector, [CreatePods(1), CrashAndRestart(), DeletePods(1)], seed=2
    )
    assert violated(result) == {}
    assert result.lines[1] == "crash and restart the store"
    assert result.recording.rounds[2].view is not None


def test_two_locks_taken_in_opposite_orders_are_a_deadlock() -> None:
    result = run_scenario(stores.TwoLocks, [CompactHistory()], seed=1)
    found = violated(result)
    assert list(found) == ["deadlock"], found
    assert "every controlled thread waits" in found["deadlock"]


def test_stop_must_end_every_thread_the_store_started() -> None:
    clean = run_scenario(stores.stops_cleanly, [CreatePods(1)], seed=1)
    assert "clean-stop" in judge(clean.recording).ran
    assert violated(clean) == {}
    leaky = run_scenario(stores.leaves_a_worker, [CreatePods(1)], seed=1)
    found = violated(leaky)
    assert list(found) == ["clean-stop"], found
    assert "1 of the store's thread(s) still run after its stop() returned" in found["clean-stop"]
    assert "'worker' waits for" in found["clean-stop"]


def test_the_schedule_is_counted_again_from_every_steps_settle(monkeypatch: Any) -> None:
    # The same offsets preempt in every step's reaction (Preemptions.rebase at each settle), so
    # a relist in the last step is reached by a small offset as well as one in the first.
    origins: list[int] = []
    rebase = Preemptions.rebase

    def spy(self: Preemptions, origin: int) -> None:
        origins.append(origin)
        rebase(self, origin)

    monkeypatch.setattr(Preemptions, "rebase", spy)
    steps = [*[CreatePods(1)] * 8, ExpireWatches(with_error=True)]
    run_scenario(stores.clear_then_add, steps, seed=1, schedule=[3])
    assert len(origins) > len(steps)
    assert origins == sorted(origins)
    assert len(set(origins)) > len(steps)
