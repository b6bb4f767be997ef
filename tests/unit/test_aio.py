"""The deterministic asyncio loop: ready-callback order from the choices, time from the clock."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from kubesim._core import (
    ChoiceSource,
    RecordingChoices,
    ReplayChoices,
    SeededChoices,
    Trace,
    VirtualClock,
)
from kubesim.sched import Deadlock, Livelock
from kubesim.sched.aio import (
    AsyncDeadlock,
    AsyncLivelock,
    DeterministicEventLoop,
    RealIOUnsupported,
    run,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Schedules are cheap but not free; keep Hypothesis' budget small and without a deadline.
fast = settings(max_examples=40, deadline=None)


class AlwaysLow:
    """The shrink target: every draw returns ``lo`` (stock asyncio order)."""

    def __init__(self) -> None:
        self.draws = 0

    def integer(self, lo: int, hi: int) -> int:
        self.draws += 1
        return lo

    def fork(self, name: str) -> AlwaysLow:
        return self


class ScriptChoices:
    """Draws from a list (clamped into range), then ``lo`` once the list is used up."""

    def __init__(self, script: Sequence[int]) -> None:
        self.script = list(script)
        self.position = 0

    def integer(self, lo: int, hi: int) -> int:
        if self.position >= len(self.script):
            return lo
        value = self.script[self.position]
        self.position += 1
        return lo + min(value, hi - lo)

    def fork(self, name: str) -> ScriptChoices:
        return self


class DataChoices:
    """A Hypothesis-backed source: the schedule is part of the example and shrinks with it."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def fork(self, name: str) -> DataChoices:
        return self


# -- programs under test -----------------------------------------------------------------------
async def appenders(tasks: int = 4, rounds: int = 3) -> list[tuple[int, int]]:
    """Several tasks appending to a shared list between awaits."""
    log: list[tuple[int, int]] = []

    async def worker(i: int) -> None:
        for r in range(rounds):
            log.append((i, r))
            await asyncio.sleep(0)

    await asyncio.gather(*(worker(i) for i in range(tasks)))
    return log


async def counter(*, locked: bool, workers: int = 3) -> int:
    """``read; await; write``: racy unless ``locked``.

    Worker ``i`` first yields ``2 * i`` times, so in stock FIFO order each increment finishes
    before the next one starts; only a different order of ready tasks can lose an update.
    """
    count = 0
    lock = asyncio.Lock()

    async def increment() -> None:
        nonlocal count
        value = count
        await asyncio.sleep(0)
        count = value + 1

    async def worker(i: int) -> None:
        for _ in range(2 * i):
            await asyncio.sleep(0)
        if locked:
            async with lock:
                await increment()
        else:
            await increment()

    await asyncio.gather(*(worker(i) for i in range(workers)))
    return count


async def rich_program(n: int) -> list[str]:
    """Callbacks, timers due now, futures, Queue, Lock, Semaphore, Condition, Event, gather."""
    log: list[str] = []
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[int | None] = asyncio.Queue(maxsize=2)
    lock = asyncio.Lock()
    semaphore = asyncio.Semaphore(2)
    condition = asyncio.Condition()
    start = asyncio.Event()
    resolved: asyncio.Future[int] = loop.create_future()

    async def producer() -> None:
        for i in range(2 * n):
            await queue.put(i)
            log.append(f"put {i}")
        await queue.put(None)

    async def consumer() -> None:
        while (item := await queue.get()) is not None:
            log.append(f"got {item}")

    async def locker(i: int) -> None:
        await start.wait()
        async with lock:
            log.append(f"lock {i}")
            await asyncio.sleep(0)
            log.append(f"unlock {i}")
        async with semaphore:
            log.append(f"sem {i}")
            await asyncio.sleep(0)
        async with condition:
            await condition.wait_for(resolved.done)
            log.append(f"cond {i}")

    async def resolver() -> None:
        await asyncio.sleep(0)
        resolved.set_result(1)
        async with condition:
            condition.notify_all()
        log.append("resolved")

    loop.call_soon(log.append, "soon 1")
    loop.call_later(0, log.append, "later 0")  # due now: runs after the current batch
    loop.call_soon(log.append, "soon 2")
    lockers = [asyncio.create_task(locker(i)) for i in range(n)]
    start.set()
    await asyncio.gather(producer(), consumer(), resolver(), *lockers)
    return log


def run_seeded(
    factory: Callable[[], Coroutine[Any, Any, Any]], seed: int, **kwargs: Any
) -> tuple[Any, str]:
    trace = Trace()
    result = run(factory, seed=seed, trace=trace, **kwargs)
    return result, trace.hexdigest()


# -- determinism -------------------------------------------------------------------------------
@given(st.integers(0, 2**32))
@fast
def test_the_same_seed_gives_the_same_interleaving_and_trace_hash(seed: int) -> None:
    first = run_seeded(appenders, seed)
    second = run_seeded(appenders, seed)
    assert first == second


SUBPROCESS_PROGRAM = textwrap.dedent(
    """
    import asyncio, json
    from kubesim._core import Trace
    from kubesim.sched.aio import run

    async def main():
        log = []
        queue = asyncio.Queue()

        async def worker(i):
            for r in range(3):
                log.append([i, r])
                await queue.put((i, r))
                await asyncio.sleep(0.5 * i)

        async def drain():
            for _ in range(12):
                log.append(list(await asyncio.wait_for(queue.get(), 5)))

        await asyncio.gather(drain(), *(worker(i) for i in range(4)))
        return log

    trace = Trace()
    log = run(main, seed=11, trace=trace)
    print(json.dumps({"log": log, "hash": trace.hexdigest(), "records": trace.count}))
    """
)


def test_the_same_seed_gives_the_same_trace_hash_in_two_processes() -> None:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": ROOT}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", SUBPROCESS_PROGRAM],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        for _ in range(2)
    ]
    first, second = (json.loads(output) for output in outputs)
    assert first == second
    assert first["records"] > 20


def test_different_seeds_interleave_ready_tasks_differently() -> None:
    interleavings = {tuple(run(appenders, seed=seed)) for seed in range(20)}
    assert len(interleavings) >= 10
    hashes = {run_seeded(appenders, seed)[1] for seed in range(20)}
    assert len(hashes) == len(interleavings)


def test_all_zero_choices_reproduce_stock_asyncio_order() -> None:
    stock = asyncio.run(appenders())
    assert run(appenders, choices=AlwaysLow()) == stock
    # Stock asyncio runs ready tasks round-robin: every task's round r before any round r + 1.
    assert stock == [(i, r) for r in range(3) for i in range(4)]


@given(st.integers(1, 5))
@fast
def test_all_zero_choices_reproduce_stock_asyncio_order_with_primitives_and_timers(
    n: int,
) -> None:
    stock = asyncio.run(rich_program(n))
    choices = AlwaysLow()
    assert run(lambda: rich_program(n), choices=choices) == stock
    assert choices.draws > 0  # there were real decisions, all answered with "FIFO"


def test_the_trace_records_each_scheduling_decision() -> None:
    trace = Trace()
    run(appenders, seed=3, trace=trace)
    steps = [record for record in trace if record[0] == "aio.step"]
    assert steps
    assert all(0 <= record[1] < record[2] for record in steps)  # type: ignore[operator]
    assert any(record[1] != 0 for record in steps)  # seed 3 does not pick FIFO every time
    assert any("worker" in str(record[3]) for record in steps)  # labels name the coroutine


def test_a_recorded_schedule_replays_to_the_same_trace() -> None:
    recorder = RecordingChoices(SeededChoices(21)).fork("asyncio")
    original = Trace()
    log = run(appenders, choices=recorder, trace=original)
    replayed = Trace()
    assert (
        run(appenders, choices=ReplayChoices(recorder.log).fork("asyncio"), trace=replayed) == log
    )
    assert replayed.hexdigest() == original.hexdigest()


class SourceRanOut(Exception):
    pass


class RunsOut:
    """Like a Hypothesis-backed source that ran out of data: raises after ``n`` draws."""

    def __init__(self, n: int) -> None:
        self.left = n

    def integer(self, lo: int, hi: int) -> int:
        if self.left == 0:
            raise SourceRanOut
        self.left -= 1
        return hi

    def fork(self, name: str) -> RunsOut:
        return self


def test_a_choice_source_that_raises_fails_the_run_and_leaves_no_task_behind(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(SourceRanOut):
        run(appenders, choices=RunsOut(3))
    gc.collect()
    assert "destroyed but it is pending" not in caplog.text


# -- races -------------------------------------------------------------------------------------
def test_a_racy_async_counter_loses_updates_under_some_seed() -> None:
    assert run(lambda: counter(locked=False), choices=AlwaysLow()) == 3  # FIFO hides the race
    losing = [seed for seed in range(300) if run(lambda: counter(locked=False), seed=seed) < 3]
    assert losing, "no seed in range(300) lost an update"
    # And the losing schedule replays exactly.
    assert run(lambda: counter(locked=False), seed=losing[0]) < 3


def test_a_lock_protected_counter_never_loses_updates_over_hundreds_of_seeds() -> None:
    assert all(run(lambda: counter(locked=True), seed=seed) == 3 for seed in range(300))


@given(st.data())
@fast
def test_a_lock_protected_counter_never_loses_updates_under_any_drawn_schedule(
    data: st.DataObject,
) -> None:
    assert run(lambda: counter(locked=True, workers=4), choices=DataChoices(data)) == 4


def test_a_lost_update_shrinks_to_a_tiny_schedule() -> None:
    def loses(script: list[int]) -> bool:
        return run(lambda: counter(locked=False), choices=ScriptChoices(script)) < 3

    minimal = find(
        st.lists(st.integers(0, 8), max_size=40),
        loses,
        settings=settings(database=None, max_examples=2000, deadline=None),
    )
    assert loses(minimal)
    assert sum(1 for value in minimal if value) <= 2, minimal


# -- virtual time ------------------------------------------------------------------------------
def test_a_day_of_sleeps_takes_exact_virtual_time() -> None:
    # No wall-clock assertion: the loop has no selector to block in, so a real wait would be a
    # day-long hang, which pytest's timeout reports.
    async def sleeper(hours: int) -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for _ in range(hours):
            await asyncio.sleep(3600)
        return start, loop.time()

    start, end = run(sleeper(24))
    assert (start, end) == (0.0, 24 * 3600.0)

    clock = VirtualClock(start=100.0)
    assert run(sleeper(2), clock=clock) == (100.0, 7300.0)
    assert clock.now() == 7300.0


def test_concurrent_sleepers_wake_at_their_own_virtual_deadlines() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        woke: list[tuple[str, float]] = []

        async def sleeper(name: str, delay: float) -> None:
            await asyncio.sleep(delay)
            woke.append((name, loop.time()))

        await asyncio.gather(sleeper("c", 30), sleeper("a", 10), sleeper("b", 20.5))
        return woke

    assert run(main, seed=9) == [("a", 10.0), ("b", 20.5), ("c", 30.0)]


def test_wait_for_times_out_in_virtual_time() -> None:
    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(asyncio.sleep(3600), timeout=2.5)
        except asyncio.TimeoutError:
            return "timed out", loop.time()
        return "finished", loop.time()

    assert run(main) == ("timed out", 2.5)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in 3.11")
def test_asyncio_timeout_fires_in_virtual_time() -> None:
    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(90) as scope:  # type: ignore[attr-defined,unused-ignore]
            await asyncio.sleep(7200)
        return scope.expired(), loop.time()

    with pytest.raises(TimeoutError):
        run(main)

    async def caught() -> float:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(90):  # type: ignore[attr-defined,unused-ignore]
                await asyncio.sleep(7200)
        except TimeoutError:
            return loop.time()
        return -1.0

    assert run(caught) == 90.0


def test_call_later_and_call_at_fire_at_their_virtual_deadlines() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        fired: list[tuple[str, float]] = []
        done = asyncio.Event()
        loop.call_later(5, lambda: fired.append(("later 5", loop.time())))
        loop.call_at(1.25, lambda: fired.append(("at 1.25", loop.time())))
        cancelled = loop.call_later(2, lambda: fired.append(("cancelled", loop.time())))
        cancelled.cancel()
        loop.call_later(6, done.set)
        await done.wait()
        return fired

    assert run(main, seed=4) == [("at 1.25", 1.25), ("later 5", 5.0)]


def test_the_loop_also_wakes_for_timers_on_the_shared_virtual_clock() -> None:
    clock = VirtualClock()

    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        bookmark: asyncio.Future[str] = loop.create_future()
        # What the fake server does: a timer on the shared clock, not on the loop.
        clock.call_at(7.0, lambda: bookmark.set_result("bookmark"))
        return await bookmark, loop.time()

    assert run(main, clock=clock) == ("bookmark", 7.0)


# -- primitives, cancellation, teardown --------------------------------------------------------
@given(st.integers(0, 2**32))
@fast
def test_primitives_keep_their_guarantees_under_every_schedule(seed: int) -> None:
    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        semaphore = asyncio.Semaphore(2)
        inside = 0
        most_inside = 0
        queue: asyncio.Queue[int] = asyncio.Queue()
        consumed: list[int] = []

        async def guarded() -> None:
            nonlocal inside, most_inside
            async with semaphore:
                inside += 1
                most_inside = max(most_inside, inside)
                await asyncio.sleep(1)
                inside -= 1

        async def consume() -> None:
            while True:
                consumed.append(await queue.get())
                queue.task_done()

        async def stuck() -> None:
            await asyncio.sleep(10_000)

        consumer = asyncio.create_task(consume())
        for i in range(5):
            queue.put_nowait(i)
        victim = asyncio.create_task(stuck())
        await asyncio.sleep(3)
        victim.cancel()
        results = await asyncio.gather(
            *(guarded() for _ in range(5)), victim, return_exceptions=True
        )
        await queue.join()
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
        return {
            "most_inside": most_inside,
            "consumed": consumed,
            "victim_cancelled": victim.cancelled(),
            "cancel_result": type(results[-1]).__name__,
            "now": loop.time(),
        }

    outcome = run(main, seed=seed)
    assert outcome == {
        "most_inside": 2,
        "consumed": [0, 1, 2, 3, 4],
        "victim_cancelled": True,
        "cancel_result": "CancelledError",
        "now": 6.0,  # 3 s, then five 1 s holders two at a time: 3 + 3
    }


def test_leftover_tasks_are_cancelled_and_cleaned_up_when_main_returns() -> None:
    cleaned: list[float] = []

    async def main() -> str:
        loop = asyncio.get_running_loop()

        async def background() -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                cleaned.append(loop.time())

        keep = asyncio.create_task(background())
        await asyncio.sleep(1)
        assert not keep.done()
        return "done"

    assert run(main) == "done"
    assert cleaned == [1.0]


# -- failures: deadlock and livelock -----------------------------------------------------------
def test_two_tasks_awaiting_each_others_events_raise_async_deadlock_naming_them() -> None:
    async def main() -> None:
        alice_ready = asyncio.Event()
        bob_ready = asyncio.Event()

        async def alice() -> None:
            await bob_ready.wait()
            alice_ready.set()

        async def bob() -> None:
            await alice_ready.wait()
            bob_ready.set()

        await asyncio.gather(
            asyncio.create_task(alice(), name="alice"), asyncio.create_task(bob(), name="bob")
        )

    with pytest.raises(AsyncDeadlock) as caught:
        run(main, seed=2)
    error = caught.value
    message = str(error)
    assert isinstance(error, Deadlock)
    assert any("alice" in line and "wait" in line for line in error.tasks)
    assert any("bob" in line and "wait" in line for line in error.tasks)
    assert "await bob_ready.wait()" in message  # each task's await chain, with source lines
    assert "await alice_ready.wait()" in message
    assert message.rstrip().endswith("run(main, seed=2)")


def test_a_spin_loop_hits_the_step_bound_with_a_message_saying_how_to_raise_it() -> None:
    async def spin() -> None:
        flag = False
        while not flag:
            await asyncio.sleep(0)

    with pytest.raises(AsyncLivelock, match=r"max_steps=50") as caught:
        run(spin, max_steps=50)
    assert isinstance(caught.value, Livelock)
    assert caught.value.bound == "max_steps"
    assert caught.value.steps == 50
    assert "raise max_steps" in str(caught.value)


def test_an_endless_timer_loop_hits_the_virtual_time_bound() -> None:
    async def resync_forever() -> None:
        while True:
            await asyncio.sleep(30)

    with pytest.raises(AsyncLivelock, match=r"max_time=600") as caught:
        run(resync_forever, max_time=600)
    assert caught.value.bound == "max_time"
    assert caught.value.time == 600.0
    assert "raise max_time" in str(caught.value)


# -- a watch loop --------------------------------------------------------------------------------
async def watch_loop(gaps: Sequence[Sequence[float]], timeout: float) -> list[Any]:
    """Producers put watch events with timed gaps; the consumer uses wait_for(get, timeout)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[int, int] | None] = asyncio.Queue()
    seen: list[Any] = []

    async def producer(p: int, delays: Sequence[float]) -> None:
        for i, delay in enumerate(delays):
            await asyncio.sleep(delay)
            await queue.put((p, i))

    async def consumer() -> None:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), timeout)
            except asyncio.TimeoutError:
                seen.append(("timeout", loop.time()))  # a real watcher would relist here
                continue
            if event is None:
                return
            seen.append(("event", *event, loop.time()))

    reader = asyncio.create_task(consumer())
    await asyncio.gather(*(producer(p, delays) for p, delays in enumerate(gaps)))
    await queue.put(None)
    await reader
    return seen


def test_a_watch_loop_sees_events_and_timeouts_at_exact_virtual_times() -> None:
    seen = run(lambda: watch_loop([[1, 5, 31, 2]], timeout=10), seed=1)
    assert seen == [
        ("event", 0, 0, 1.0),
        ("event", 0, 1, 6.0),
        ("timeout", 16.0),
        ("timeout", 26.0),
        ("timeout", 36.0),
        ("event", 0, 2, 37.0),
        ("event", 0, 3, 39.0),
    ]


def test_a_watch_loop_behaves_identically_for_a_seed() -> None:
    # Three producers put at the same virtual instants, so their order is the schedule's call.
    gaps = [[5, 5, 20], [5, 5, 20], [5, 25]]
    outcomes = {}
    for seed in range(12):
        first = run_seeded(lambda: watch_loop(gaps, timeout=12), seed)
        assert run_seeded(lambda: watch_loop(gaps, timeout=12), seed) == first
        outcomes[seed] = first[0]
    assert len({json.dumps(seen) for seen in outcomes.values()}) > 1
    for seen in outcomes.values():
        times = [entry[-1] for entry in seen]
        assert times == sorted(times)
        assert ("timeout", 22.0) in seen  # 10 -> 22 has no event: one timeout at exactly 22


# -- no threads, no real I/O -------------------------------------------------------------------
def test_run_in_executor_runs_the_function_synchronously_as_one_step() -> None:
    caller = threading.get_ident()

    def blocking(x: int) -> tuple[int, bool]:
        return x * 2, threading.get_ident() == caller

    def broken() -> None:
        raise ValueError("boom")

    async def main() -> tuple[Any, ...]:
        loop = asyncio.get_running_loop()
        direct = await loop.run_in_executor(None, blocking, 21)
        threaded = await asyncio.to_thread(blocking, 4)
        with pytest.raises(ValueError, match="boom"):
            await loop.run_in_executor(None, broken)
        return direct, threaded, loop.time()

    trace = Trace()
    assert run(main, trace=trace) == ((42, True), (8, True), 0.0)
    assert any("run_in_executor(" in str(record[-1]) for record in trace)


def test_sockets_subprocesses_and_dns_raise_a_clear_error() -> None:
    async def connect() -> None:
        await asyncio.open_connection("127.0.0.1", 80)

    async def spawn() -> None:
        await asyncio.create_subprocess_exec("true")

    async def resolve() -> None:
        await asyncio.get_running_loop().getaddrinfo("example.com", 443)

    for program in (connect, spawn, resolve):
        with pytest.raises(RealIOUnsupported, match="in-process kubesim transport"):
            run(program)
    assert issubclass(RealIOUnsupported, NotImplementedError)


# -- plain loop use ------------------------------------------------------------------------------
def test_the_loop_is_an_ordinary_asyncio_loop() -> None:
    choices: ChoiceSource = SeededChoices(5).fork("asyncio")
    loop = DeterministicEventLoop(choices=choices, clock=VirtualClock())
    try:
        assert isinstance(loop, asyncio.AbstractEventLoop)
        expected = run(appenders(2, 2), choices=SeededChoices(5).fork("asyncio"))
        assert loop.run_until_complete(appenders(2, 2)) == expected
    finally:
        loop.close()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.Runner is new in 3.11")
def test_asyncio_runner_accepts_the_loop_as_its_loop_factory() -> None:
    def factory() -> asyncio.AbstractEventLoop:
        return DeterministicEventLoop(choices=SeededChoices(1), clock=VirtualClock())

    with asyncio.Runner(loop_factory=factory) as runner:  # type: ignore[attr-defined,unused-ignore]
        assert len(runner.run(appenders())) == 12
        assert runner.get_loop().time() == 0.0


def test_run_rejects_bad_arguments_without_leaking_the_coroutine() -> None:
    # filterwarnings=error turns a "coroutine was never awaited" RuntimeWarning into a failure.
    with pytest.raises(TypeError, match="not both"):
        run(appenders(), seed=1, choices=AlwaysLow())
    with pytest.raises(ValueError, match="max_steps=0"):
        run(appenders(), max_steps=0)
    gc.collect()


def test_trace_labels_carry_no_memory_address_nor_argument_reprs() -> None:
    # Libraries name tasks after repr(self) ("cleaner of <Scheduler object at 0x7f...>") and
    # hand partials to run_in_executor: an address or a wall-clock argument in a label would make
    # the trace hash differ between two processes running the same schedule.
    class Scheduler:
        pass

    owner = Scheduler()

    def login(*, started: object) -> str:
        return "ok"

    async def worker() -> None:
        await asyncio.sleep(0)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await loop.create_task(worker(), name=f"cleaner of {owner!r}")
        await loop.run_in_executor(None, functools.partial(login, started=object()))

    trace = Trace(keep_all=True)
    run(main, seed=0, trace=trace)
    labels = [str(record[3]) for record in trace.records or [] if record[0] == "aio.step"]
    assert any("cleaner of <" in label for label in labels), labels
    executed = f"run_in_executor({login.__qualname__})"  # the function, not the partial's repr
    assert executed in labels, labels
    assert not any(hex(id(owner))[2:] in label for label in labels), labels
    assert not any("object at 0x" in label.replace("0x?", "") for label in labels), labels
