"""The scheduler's verdicts are about the code under test, never about kubesim itself.

Thread names, lock descriptions and failure messages are the same in every run of a schedule;
a one-line read-modify-write race is found at the default granularity; a pending timer does not
hide a deadlock; a run that ends at max_time says where each thread was; and a real
nondeterminism is located (the first differing trace record) instead of blamed on hashing.
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kubesim._core import Trace
from kubesim.sched import (
    Deadlock,
    Livelock,
    NondeterminismDetected,
    RandomWalk,
    Scheduler,
    ThreadCrashed,
    explore,
    run_schedule,
)
from kubesim.sched import scheduler as sched

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import racy_stores  # noqa: E402

TRACED = [racy_stores]
ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


# -- 1. thread names ---------------------------------------------------------------------------


def test_a_race_between_unnamed_threads_is_reported_as_the_race_every_time() -> None:
    """Regression: threading's process-wide Thread-N counter entered the trace, so the replay
    of any failure with unnamed threads differed and explore blamed nondeterminism."""
    founds = [
        explore(racy_stores.check_then_act_scenario, schedules=200, seed=3, traced=TRACED).found
        for _ in range(2)
    ]
    for found in founds:
        assert found is not None
        assert isinstance(found.failure, ThreadCrashed)
        assert "claimed twice" in str(found.failure)
    assert founds[0].result.trace_hash == founds[1].result.trace_hash
    # The names are per run: the first thread the scenario starts is controlled thread 1.
    claimers = re.search(r"claimed twice, by (\[.*?\])", str(founds[0].failure))
    assert claimers is not None
    assert sorted(ast.literal_eval(claimers.group(1))) == ["Thread-1 (claim)", "Thread-2 (claim)"]


def test_threads_named_by_the_user_keep_their_names() -> None:
    seen: list[str] = []

    def scenario() -> None:
        t = threading.Thread(target=lambda: seen.append(threading.current_thread().name))
        named = threading.Thread(target=lambda: seen.append(threading.current_thread().name))
        named.name = "Thread-77 but mine"
        for thread in (t, named):
            thread.start()
            thread.join()

    assert run_schedule(scenario, seed=0, strategy=RandomWalk(0.0)).ok
    assert seen == ["Thread-1 (<lambda>)", "Thread-77 but mine"]


def test_a_thread_subclass_that_keeps_its_own_data_in_name_is_adopted_as_it_is() -> None:
    # Patroni's ObjectCache(Thread) sets ``self._name`` to its pod's name, or None: Thread.name
    # is then None, which CPython's start() accepts; the scheduler must too, and leave it.
    seen: list[object] = []

    class Cache(threading.Thread):
        def __init__(self) -> None:
            super().__init__()
            self._name = None  # type: ignore[assignment]

        def run(self) -> None:
            seen.append(self.name)

    def scenario() -> None:
        cache = Cache()
        cache.start()
        cache.join()

    assert run_schedule(scenario, seed=0, strategy=RandomWalk(0.0)).ok
    assert seen == [None]


# -- 3. max_time livelocks say where each thread was -------------------------------------------


def test_a_max_time_livelock_shows_each_unfinished_thread_and_its_stack() -> None:
    result = run_schedule(
        racy_stores.ticking_forever_scenario,
        seed=0,
        strategy=RandomWalk(0.1),
        traced=TRACED,
        max_time=50,
    )
    assert isinstance(result.failure, Livelock)
    text = str(result.failure)
    assert "max_time=50" in text
    assert "- thread 0 'main' waits for join of thread 'ticker'" in text
    assert "- thread 1 'ticker' waits for time.sleep" in text
    # Each thread's stack ends in its own code, not in the scheduler's.
    assert "in ticking_forever_scenario\n        t.join()" in text
    assert "in tick\n        time.sleep(1)" in text
    assert "kubesim/sched/" not in text


# -- 4a. the default granularity splits one-line read-modify-writes ---------------------------

BUDGET = 100


def test_a_one_line_lost_update_is_found_with_the_default_granularity() -> None:
    result = explore(racy_stores.lost_update_scenario, schedules=BUDGET, seed=0, traced=TRACED)
    assert result.found is not None, f"not found in {BUDGET} schedules"
    assert "lost update" in str(result.found.failure)


def test_line_points_cannot_split_a_one_line_lost_update() -> None:
    """What the test above discriminates: at line granularity the same race passes."""
    result = explore(
        racy_stores.lost_update_scenario,
        schedules=BUDGET,
        seed=0,
        traced=TRACED,
        granularity="line",
    )
    assert result.ok, str(result.found)
    assert result.schedules == BUDGET


def test_a_scheduler_made_without_a_granularity_splits_a_one_line_lost_update() -> None:
    failed = [
        seed
        for seed in range(40)
        if not Scheduler(strategy=RandomWalk(0.2), seed=seed, traced=TRACED)
        .run(racy_stores.lost_update_scenario)
        .ok
    ]
    assert failed, "no schedule of 40 lost the update"


# -- 4b. a timer nobody waits for does not hide a deadlock ------------------------------------


def _ab_ba(a: threading.Lock, b: threading.Lock, ready: threading.Barrier) -> None:
    def one() -> None:
        with a:
            ready.wait()
            with b:
                pass

    def two() -> None:
        with b:
            ready.wait()
            with a:
                pass

    threads = [threading.Thread(target=one, name="one"), threading.Thread(target=two, name="two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_a_deadlock_next_to_a_ticking_timer_is_reported_at_once() -> None:
    """Regression guard: a pending timer that wakes no blocked thread (here a bookmark-like
    ticker that re-arms itself) must not send virtual time jumping until max_time."""
    ticks: list[float] = []

    def scenario() -> None:
        scheduler = sched.active()
        assert scheduler is not None
        clock = scheduler.clock

        def tick() -> None:
            ticks.append(clock.now())
            clock.call_later(60, tick)

        clock.call_later(60, tick)
        _ab_ba(threading.Lock(), threading.Lock(), threading.Barrier(2))

    result = Scheduler(strategy=RandomWalk(0.0), seed=0, max_time=24 * 3600).run(scenario)
    assert isinstance(result.failure, Deadlock), result.failure
    assert result.virtual_time == 0.0
    assert ticks == []


# -- 5. nondeterminism is located, not blamed on hashing --------------------------------------

_runs = itertools.count()


def _differs_every_other_run() -> None:
    # State kept across runs: a module-level counter decides whether the scenario sleeps.
    if next(_runs) % 2:
        time.sleep(1)
    worker = threading.Thread(target=lambda: None, name="worker")
    worker.start()
    worker.join()
    raise AssertionError("always fails, so explore replays it")


def test_nondeterminism_shows_the_first_differing_records_and_fitting_causes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    with pytest.raises(NondeterminismDetected) as caught:
        explore(_differs_every_other_run, schedules=1, seed=0, strategy=lambda: RandomWalk(0.0))
    error = caught.value
    text = str(error)
    # The runs agree up to the sleep of the odd run: its block record against the even run's
    # spawn of the worker.
    assert error.run_record is not None
    assert error.replay_record is not None
    assert {error.run_record[0], error.replay_record[0]} == {"block", "spawn"}
    assert f"first differ at record {error.record} " in text
    assert f"run:    {error.run_record!r}" in text
    assert f"replay: {error.replay_record!r}" in text
    assert "state kept from one run to the next" in text
    assert "PYTHONHASHSEED" not in text  # pinned: not a cause


def test_nondeterminism_mentions_an_unpinned_hash_seed_as_cross_process_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    with pytest.raises(NondeterminismDetected) as caught:
        explore(_differs_every_other_run, schedules=1, seed=0, strategy=lambda: RandomWalk(0.0))
    assert "PYTHONHASHSEED is not set" in str(caught.value)
    assert "cannot explain a difference between a run and its replay here" in str(caught.value)


# -- 6. no id()s in reports or traces ----------------------------------------------------------


def _crash_naming_an_object() -> None:
    def worker() -> None:
        raise AssertionError(f"unexpected {object()}")  # "<object object at 0x7f...>"

    t = threading.Thread(target=worker, name="worker")
    t.start()
    t.join()


def _deadlock() -> None:
    _ab_ba(threading.Lock(), threading.Lock(), threading.Barrier(2))


@pytest.mark.parametrize("scenario", [_crash_naming_an_object, _deadlock])
def test_traces_and_reports_carry_no_addresses(scenario: object) -> None:
    traces = []
    for _ in range(2):
        trace = Trace(keep_all=True)
        result = Scheduler(strategy=RandomWalk(0.0), seed=0, trace=trace).run(scenario)  # type: ignore[arg-type]
        assert result.failure is not None
        assert trace.records is not None
        traces.append((result.trace_hash, trace.records))
        leaks = [r for r in trace.records if any(ADDRESS.search(str(f)) for f in r)]
        assert leaks == []
        if isinstance(result.failure, Deadlock):
            assert not ADDRESS.search(str(result.failure)), str(result.failure)
    assert traces[0] == traces[1]


def test_a_deadlock_report_names_each_lock_by_its_holder() -> None:
    result = Scheduler(strategy=RandomWalk(0.0), seed=0).run(_deadlock)
    assert isinstance(result.failure, Deadlock)
    text = str(result.failure)
    assert "- thread 1 'one' waits for SimLock held by thread 'two' (thread 2)" in text
    assert "- thread 2 'two' waits for SimLock held by thread 'one' (thread 1)" in text


def test_a_crash_names_files_as_a_reader_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same on every machine: relative to the working directory (a page's store module),
    # never the absolute path of a temporary directory.
    (tmp_path / "crashing_store.py").write_text(
        "def handle(event):\n    raise KeyError('raw_object')\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import crashing_store

    try:
        crashing_store.handle({})
    except KeyError as error:
        crash = sched._crash(SimpleNamespace(name="store"), error)  # type: ignore[arg-type]
    assert 'File "crashing_store.py", line 2, in handle' in str(crash)
    assert str(tmp_path) not in str(crash)
