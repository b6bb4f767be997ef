"""Async stores (``async def run()`` on kubernetes_asyncio) under ``kubesim check``.

The store runs on a loop inside its controlled thread (kubesim.sim.async_store); its reads
and its stop() run on that loop; the schedule's points reorder its ready callbacks.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("kubernetes_asyncio")

from kubesim._core.clock import VirtualClock
from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import (
    CompactHistory,
    CrashAndRestart,
    CreatePods,
    ExpireWatches,
    ReadConcurrently,
)
from kubesim.sched.aio_thread import ControlledThreadLoop, LoopOrder
from kubesim.sim.async_store import is_async_factory, is_async_store
from kubesim.sim.simulation import Simulation
from kubesim.testing.check import check_store
from tests.unit import async_stores

ROOT = Path(__file__).resolve().parents[2]
KINDS = ["create", "delete", "churn", "labels", "expire", "drop", "compact", "read", "crash"]


def test_async_factories_and_stores_are_told_apart() -> None:
    assert is_async_factory(async_stores.reflector)
    assert not is_async_factory(async_stores.plain_factory)
    assert is_async_store(async_stores.Reflector)  # the class will do: run is async def
    assert not is_async_store(object())


def test_a_correct_async_reflector_passes_every_oracle_its_hooks_allow() -> None:
    report = check_store(
        async_stores.reflector, examples=25, seed=3, kinds=KINDS, database=":memory:"
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "snapshot-reads", "isolation", "clean-stop"} <= report.ran


def test_a_paged_reflector_that_swaps_its_map_at_once_passes_snapshot_reads() -> None:
    report = check_store(
        async_stores.paged_reflector,
        examples=25,
        seed=4,
        kinds=["create", "compact", "expire", "read"],
        database=":memory:",
    )
    assert report.ok, str(report.found)


def test_a_relist_torn_across_awaits_is_found_shrunk_and_replays() -> None:
    report = check_store(
        async_stores.torn_relist,
        spec="tests.unit.async_stores:torn_relist",
        examples=100,
        seed=0,
        kinds=["create", "compact", "expire", "read"],
        database=":memory:",
    )
    found = report.found
    assert found is not None, "the torn relist was not found"
    assert "snapshot-reads" in found.properties, str(found)
    assert len(found.result.lines) <= 4, found.result.lines
    # The replay line, run as a user would paste it, fails the same way.
    command = found.replay.command()
    assert command.startswith("kubesim replay ks1."), command
    token = command.split()[-1]
    done = subprocess.run(
        [sys.executable, "-m", "kubesim", "replay", token],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "snapshot-reads" in done.stdout
    assert f"trace {found.result.trace_hash[:16]}" in done.stdout


def test_the_schedule_decides_whether_a_read_lands_between_two_pages() -> None:
    # The reader hands its read() to the store's loop; whether it runs between two pages of
    # the relist (each request yields to the loop, as over aiohttp) is the schedule's choice.
    steps = [ReadConcurrently()]
    torn = run_scenario(async_stores.torn_relist, steps, seed=0, schedule=(3,))
    assert torn.recording.failure is None, torn.recording.failure
    assert [v.property for v in judge(torn.recording).violations] == ["snapshot-reads"]
    whole = run_scenario(async_stores.torn_relist, steps, seed=0, schedule=())
    assert judge(whole.recording).ok


def test_same_seed_same_trace_for_an_async_store() -> None:
    steps = [
        CreatePods(2),
        ReadConcurrently(),
        CompactHistory(),
        ExpireWatches(),
        CrashAndRestart(),
    ]
    first = run_scenario(async_stores.reflector, steps, seed=5, schedule=(1, 3))
    second = run_scenario(async_stores.reflector, steps, seed=5, schedule=(1, 3))
    assert first.recording.failure is None, first.recording.failure
    assert first.trace_hash == second.trace_hash
    other = run_scenario(async_stores.reflector, steps, seed=5, schedule=())
    assert other.trace_hash != first.trace_hash, "the schedule did not reach the store's loop"


def test_a_store_that_builds_its_own_asyncio_client_reaches_the_simulation() -> None:
    for factory in (async_stores.own_client, async_stores.plain_factory):
        result = run_scenario(factory, [CreatePods(3), ExpireWatches()], seed=2)
        assert result.recording.failure is None, (factory, result.recording.failure)
        verdict = judge(result.recording)
        assert verdict.ok, (factory, verdict)
        assert len(result.recording.rounds[-1].view or {}) == 9  # 6 at start, 3 created


def test_an_async_stop_that_leaves_the_loop_running_fails_clean_stop() -> None:
    good = judge(run_scenario(async_stores.reflector, [], seed=0).recording)
    assert good.ok, good
    bad = judge(run_scenario(async_stores.ignores_stop, [], seed=0).recording)
    assert [v.property for v in bad.violations] == ["clean-stop"], bad


# -- the loop itself ------------------------------------------------------------------------


def test_loop_order_is_fifo_except_at_its_points() -> None:
    order = LoopOrder([1, 3])
    assert [order.integer(0, 2) for _ in range(5)] == [0, 2, 0, 2, 0]
    order.rebase()
    assert order.integer(0, 4) == 0
    assert order.integer(0, 4) == 4  # counted from the rebase
    assert order.reordered == 3
    with pytest.raises(ValueError, match="non-negative int points"):
        LoopOrder([-1])


def test_a_reorder_point_runs_the_newest_ready_callback_first() -> None:
    ran: list[str] = []

    def program(order: LoopOrder) -> list[str]:
        ran.clear()
        with Simulation(seed=0) as sim:

            def store() -> None:
                loop = ControlledThreadLoop(choices=order, clock=sim.clock)

                def step(name: str) -> None:
                    ran.append(name)
                    if len(ran) == 3:
                        loop.stop()

                for name in ("a", "b", "c"):
                    loop.call_soon(step, name)
                loop.run_forever()
                loop.close()

            sim.start(store)
        return list(ran)

    assert program(LoopOrder()) == ["a", "b", "c"]
    assert program(LoopOrder([0])) == ["c", "a", "b"]
    assert program(LoopOrder([1])) == ["a", "c", "b"]


def test_an_idle_loop_waits_like_a_thread_and_wakes_at_its_timer() -> None:
    woke: list[float] = []
    with Simulation(seed=0) as sim:

        def store() -> None:
            loop = ControlledThreadLoop(clock=sim.clock)

            async def main() -> None:
                await asyncio.sleep(30)
                woke.append(loop.time())

            loop.run_until_complete(main())
            loop.close()

        start = sim.clock.now()
        sim.start(store)
        assert woke == []  # quiescent: the loop waits, time did not jump
        sim.advance(29)
        assert woke == []
        sim.advance(1)
        assert woke == [start + 30]
        assert sim.store_finished


def test_a_loop_that_never_waits_is_a_livelock() -> None:
    from kubesim.sim.simulation import StoreCrashed

    with Simulation(seed=0) as sim:

        def store() -> None:
            loop = ControlledThreadLoop(clock=VirtualClock(), max_busy_steps=1_000)

            async def spin() -> None:
                while True:
                    await asyncio.sleep(0)

            try:
                loop.run_until_complete(spin())
            finally:
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                    task._log_destroy_pending = False  # type: ignore[attr-defined]
                loop.close()

        with pytest.raises(StoreCrashed, match="1,000 callbacks without ever waiting"):
            sim.start(store)


def test_projections_with_only_an_identity_are_checked_by_version_not_by_content() -> None:
    # The contract lets view() and read() hand out projections carrying metadata.uid and
    # metadata.resourceVersion; their content is the store's own, not a torn object.
    report = check_store(
        async_stores.projecting,
        examples=15,
        seed=1,
        kinds=["create", "labels", "read"],
        database=":memory:",
    )
    assert report.ok, str(report.found)
    assert {"snapshot-reads", "isolation", "monotone"} <= report.ran


def test_cleanup_that_starts_a_task_while_the_store_is_unwound_is_run_not_left_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async_stores.ShieldedCleanup.closed.clear()
    async_stores.ShieldedCleanup.started.clear()
    result = run_scenario(async_stores.shielded_cleanup, [CrashAndRestart()], seed=0)
    assert result.recording.failure is None, result.recording.failure
    gc.collect()
    # Once per store that ran: the crashed one, the one that ran to the end, and the fresh
    # ones the history oracle compared it with (at least three in all).
    started = len(async_stores.ShieldedCleanup.started)
    assert started >= 3
    assert async_stores.ShieldedCleanup.closed == ["closed"] * started
    assert "Task was destroyed but it is pending" not in caplog.text
