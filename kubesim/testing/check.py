"""``check_store``: point kubesim at a store factory, get a verdict.

Hypothesis is the outer loop. Each example draws a scenario (steps, with swarm testing over
the step kinds) and a thread schedule (preemption points) *together*, runs it with
:func:`~kubesim.scenario.run.run_scenario`, and judges the recording with every oracle the
store's hooks allow (:func:`~kubesim.checks.store.judge`). A violation fails the example;
Hypothesis then shrinks the scenario and the schedule at once, and the smallest failing
example is reported with its violations, its steps as lines, and a replay token that runs it
again exactly (``kubesim replay TOKEN``).

Failing examples are saved in a Hypothesis example database (``.kubesim/examples`` by default;
any :class:`hypothesis.database.ExampleDatabase` works, Redis included), keyed by the factory,
so the next check of the same store tries them first.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import Flaky

import kubesim
from kubesim._core.heap import frozen_heap
from kubesim._core.words import counted
from kubesim.checks.store import NO_READ, ORACLES, Verdict, checked_oracles, judge
from kubesim.scenario.run import (
    ScenarioResult,
    Setup,
    StoreFactory,
    check_world,
    run_scenario,
)
from kubesim.scenario.store_log import StoreLog, captured
from kubesim.sched.errors import OutOfTime
from kubesim.sched.scheduler import set_wall_deadline
from kubesim.sched.strategies import HOT_FRACTION
from kubesim.sim.store import StoreContractError
from kubesim.testing.replay import Replay, python_version
from kubesim.testing.strategies import DEFAULT_KINDS, _checked_kinds, scenarios

DEFAULT_DATABASE = os.path.join(".kubesim", "examples")
# Preemption points count scheduling points from the start of each step's settle (see
# run_scenario). An untraced store reacts to a step in a few to some tens of points (lock
# operations, waits, watch reads); a traced store in one per opcode, thousands. The range is
# what makes a drawn preemption land inside a short window (a relist that clears, then
# refills) often enough to be found.
MAX_PREEMPTION_POINT = 40
MAX_PREEMPTION_POINT_TRACED = 5_000
MAX_PREEMPTIONS = 4
# Hot points among the first of a step's reaction (a reader inside read() of a few pods is tens
# of points); a relist of six pods is several hundred, reached as a fraction of its length.
MAX_HOT_PREEMPTION_POINT = 100
# The end of the failing example's store output shown in the text report (JSON has more).
LOG_LINES_SHOWN = 12


class NondeterminismDetected(RuntimeError):
    """The same example failed once and passed when run again: kubesim's fault, or the store's
    use of something kubesim does not control (wall time, real sockets, id()-ordered sets)."""


@dataclass(frozen=True)
class Found:
    """The smallest failing example: what broke, the scenario, and how to run it again."""

    verdict: Verdict
    result: ScenarioResult
    replay: Replay
    # What the store printed and logged in this example's run (kubesim.scenario.store_log).
    log: StoreLog = field(default_factory=StoreLog)

    @property
    def properties(self) -> list[str]:
        return [v.property for v in self.verdict.violations]

    def __str__(self) -> str:
        lines = [str(v) for v in self.verdict.violations]
        lines.append(f"scenario ({counted(len(self.result.lines), 'step')}):")
        lines.extend(f"  {n}. {line}" for n, line in enumerate(self.result.lines, 1))
        if not self.result.lines:
            lines.append("  (no steps: setup, quiesce and tail rounds only)")
        if self.replay.schedule:
            lines.append(f"thread schedule: preemptions at {list(self.replay.schedule)}")
        if self.log.total:
            shown = self.log.tail(LOG_LINES_SHOWN)
            lines.append(
                f"the store's output ({_count(self.log.total, 'line')}"
                + (f", the last {len(shown)}" if len(shown) < self.log.total else "")
                + "):"
            )
            lines.extend(f"  | {line}".rstrip() for line in shown)
        lines.append(f"trace {self.result.trace_hash[:16]}")
        lines.append(f"replay: {self.replay.command()}")
        return "\n".join(lines)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


@dataclass
class CheckReport:
    """What a check did: examples run, oracles run or skipped, coverage, and the failure."""

    factory: str
    examples: int = 0
    found: Found | None = None
    # Oracles that judged something in at least one example.
    ran: set[str] = field(default_factory=set)
    skipped: dict[str, str] = field(default_factory=dict)
    # Oracles the store's hooks enable that no example gave anything to judge, and why (no read
    # step drawn, no effect performed): not a pass, and said so.
    not_exercised: dict[str, str] = field(default_factory=dict)
    # Steps drawn per kind by the search, up to and including the first failing example (the
    # shrinker's tries after it are not counted).
    kinds: Counter[str] = field(default_factory=Counter)
    # The step kinds the campaign could draw (``kinds=``), in table order; None: every kind.
    enabled: tuple[str, ...] | None = None
    out_of_time: bool = False
    # The example at which the first violation turned up (the rest were spent shrinking it).
    found_at: int | None = None

    @property
    def ok(self) -> bool:
        return self.found is None


def database_key(
    spec: str,
    *,
    kinds: Sequence[str],
    setup: Setup,
    seed: int,
    oracles: Sequence[str] | None,
    max_steps: int,
    schedules: int,
    traced: Sequence[str],
) -> bytes:
    """What keys a campaign's saved examples in the example database: everything that changes
    how Hypothesis's bytes become a scenario (the kinds, ``max_steps``, how many schedules and
    how many points they choose among, which the traced modules decide) or what the scenario
    runs against (the factory, the setup, the seed) or what judges it (the oracles). A saved
    failure is replayed only by a campaign that would draw and judge it the same way: bytes
    saved under other kinds decode to another scenario (one that may pass, or fail otherwise)."""
    parts = [
        spec,
        ",".join(kinds),
        str(setup.pods),
        str(setup.namespaces),
        str(seed),
        # The rest in one JSON object: a field added later changes every key, which only
        # means older saved examples are not replayed.
        json.dumps(
            {
                "oracles": None if oracles is None else list(oracles),
                "max_steps": max_steps,
                "schedules": schedules,
                "traced": list(traced),
                "tail_rounds": setup.tail_rounds,
                "memory": setup.memory,
                "fresh": setup.fresh,
                "world": setup.world_json(),
            },
            sort_keys=True,
        ),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest().encode()


class _UsageError(BaseException):
    """Carries a usage error out of Hypothesis at once: a factory that raises, or a store that
    breaks the contract, fails every example alike and is not a finding to shrink."""

    def __init__(self, problem: Exception) -> None:
        super().__init__(str(problem))
        self.problem = problem


class _OutOfTime(KeyboardInterrupt):
    """Ends the campaign when ``max_time`` is spent. Hypothesis stops at a KeyboardInterrupt
    without saving, replaying or shrinking the example. Rejecting the example instead would end
    a choice prefix earlier than an earlier example that drew on from it, which Hypothesis
    reports as flaky generation (and ``kubesim check`` as NONDETERMINISTIC)."""


class _Violated(Exception):
    def __init__(self, result: ScenarioResult, verdict: Verdict, log: StoreLog) -> None:
        super().__init__("; ".join(str(v).splitlines()[0] for v in verdict.violations))
        self.result = result
        self.verdict = verdict
        self.log = log


def _schedule(last_point: int) -> st.SearchStrategy[list[int]]:
    """Preemptions: up to three at hot points (kubesim.sched.Preemptions: a point among the
    first of a step's reaction, or a fraction of the longest hot region, a relist), then up
    to :data:`MAX_PREEMPTIONS` in all at offsets among every point; sorted."""
    point = st.one_of(
        st.integers(0, MAX_HOT_PREEMPTION_POINT),
        st.integers(HOT_FRACTION, HOT_FRACTION + 999),
    )
    hot = st.lists(point, max_size=3, unique=True)
    every = st.lists(st.integers(0, last_point), max_size=MAX_PREEMPTIONS, unique=True)
    return st.tuples(hot, every).map(
        lambda drawn: sorted(
            {-k - 1 for k in drawn[0]} | set(drawn[1][: MAX_PREEMPTIONS - len(drawn[0])])
        )
    )


def store_modules(factory: Callable[..., Any]) -> tuple[Any, ...]:
    """The factory's own module, whose code gets scheduling points by default (a package's
    whole folder); none for a factory defined in kubesim, a client library or ``__main__``."""
    import sys

    name = getattr(factory, "__module__", None) or ""
    module = sys.modules.get(name)
    if (
        module is None
        or name == "__main__"
        or not getattr(module, "__file__", None)
        or name.split(".")[0] in _NOT_THE_STORE
    ):
        return ()
    return (module,)


# Packages whose code is never the store under test, even when a factory is defined there.
_NOT_THE_STORE = frozenset({"kubesim", "kubernetes", "kubernetes_asyncio", "kopf", "hypothesis"})


def factory_spec(factory: Callable[..., Any]) -> str:
    module = getattr(factory, "__module__", None) or "?"
    name = getattr(factory, "__qualname__", None) or repr(factory)
    return f"{module}:{name}"


def _database(database: ExampleDatabase | str | None) -> ExampleDatabase | None:
    if database is None:
        return DirectoryBasedExampleDatabase(DEFAULT_DATABASE)
    if isinstance(database, str):
        from kubesim.testing.database import example_database

        return example_database(database)
    return database


def check_store(
    factory: StoreFactory,
    *,
    spec: str | None = None,
    examples: int = 100,
    seed: int = 0,
    kinds: Sequence[str] = DEFAULT_KINDS,
    max_steps: int = 12,
    setup: Setup | None = None,
    database: ExampleDatabase | str | None = None,
    traced: Sequence[Any] = (),
    on_example: Callable[[CheckReport], None] | None = None,
    max_time: float | None = None,
    oracles: Sequence[str] | None = None,
    trace_store: bool = True,
    schedules: int = 1,
) -> CheckReport:
    """Run a campaign of ``examples`` scenarios against ``factory``; shrink the first failure.

    ``spec`` is how a replay names the factory (``module:attribute`` or ``path.py:attribute``);
    by default the factory's module and qualified name. ``kinds``: the step kinds drawn (default
    :data:`kubesim.testing.strategies.DEFAULT_KINDS`; every kind is in ``ALL_KINDS``).
    ``database``: an example database, a directory, or ``":memory:"`` for none. ``on_example``
    is called after every example (for progress bars). ``max_time``: seconds of wall time after
    which no new example is drawn (shrinking a failure already found still completes).
    ``oracles`` narrows which oracles judge the examples (``failure`` always does; see
    :data:`kubesim.checks.store.ORACLES`). ``trace_store``: the factory's own module (its
    folder, for a package) gets scheduling points as ``traced`` modules do, so the schedule can
    preempt inside the store's reads and relists. ``schedules``: thread schedules tried per
    scenario (``kubesim check --races``).
    """
    if not isinstance(examples, int) or examples < 1:
        raise ValueError(f"examples must be an int >= 1, got examples={examples!r}")
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got seed={seed!r}")
    chosen = _checked_kinds(kinds)
    only = None if oracles is None else checked_oracles(oracles)
    setup = setup if setup is not None else Setup()
    check_world(setup)
    spec = spec or factory_spec(factory)
    if max_time is not None and not max_time > 0:
        raise ValueError(f"max_time must be > 0 seconds or None, got max_time={max_time!r}")
    if not isinstance(schedules, int) or schedules < 1:
        raise ValueError(f"schedules must be an int >= 1, got schedules={schedules!r}")
    report = CheckReport(factory=spec, enabled=tuple(chosen))
    if trace_store:
        traced = (*store_modules(factory), *(t for t in traced if t not in store_modules(factory)))
    last_point = MAX_PREEMPTION_POINT_TRACED if traced else MAX_PREEMPTION_POINT
    # Wall time only bounds how long the campaign draws, and how long a run may wait for a
    # thread of the store (set_wall_deadline below): it never changes what a run does.
    deadline = None if max_time is None else time.monotonic() + max_time
    # Built once per campaign: a composite strategy reads its function's source when built.
    schedule_strategy = _schedule(last_point)
    scenario_strategy = scenarios(kinds=chosen, max_steps=max_steps)

    def example(data: st.DataObject) -> None:
        if deadline is not None and report.found_at is None and time.monotonic() > deadline:
            report.out_of_time = True
            raise _OutOfTime
        # The schedules first: the scenario's swarm must be the last draw (kubesim.testing.
        # strategies explains why). A schedule is a few preemptions at hot points (a reader
        # inside read(), a store thread handling its list: kubesim.sched.Preemptions) and a
        # few at offsets among all the points of a step's reaction.
        drawn = [data.draw(schedule_strategy, label="schedule") for _ in range(schedules)]
        steps = data.draw(scenario_strategy, label="scenario")
        report.examples += 1
        if report.found_at is None:
            # What the search drew; the shrinker's tries of the failure are not coverage.
            report.kinds.update(step.kind for step in steps)
        try:
            for schedule in drawn:
                _one(steps, schedule)
        finally:
            if on_example is not None:
                on_example(report)

    def _one(steps: list[Any], schedule: list[int]) -> None:
        try:
            with captured() as log:
                result = run_scenario(
                    factory,
                    steps,
                    seed=seed,
                    setup=setup,
                    schedule=schedule,
                    traced=traced,
                    spec=spec,
                )
        except StoreContractError as problem:
            raise _UsageError(problem) from problem
        verdict = judge(result.recording, only=only)
        idle = dict(verdict.unexercised)
        report.ran.update(name for name in verdict.ran if name not in idle)
        for name, why in idle.items():
            report.not_exercised.setdefault(name, why)
        report.skipped.update(
            (name, why) for name, why in verdict.skipped if why != "the run ended early"
        )
        if not verdict.ok:
            if report.found_at is None:
                report.found_at = report.examples
                set_wall_deadline(None)  # shrinking a failure found completes
            raise _Violated(result, verdict, log)

    example._hypothesis_internal_add_digest = database_key(  # type: ignore[attr-defined]
        spec,
        kinds=chosen,
        setup=setup,
        seed=seed,
        oracles=only,
        max_steps=max_steps,
        schedules=schedules,
        traced=tuple(getattr(t, "__name__", str(t)) for t in traced),
    )
    # @seed turns the example database off (it sets database=None on the test's settings), so
    # it goes inside and the settings, with the database, outside.
    test = settings(
        max_examples=examples,
        deadline=None,
        database=_database(database),
        derandomize=False,
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
    )(hypothesis_seed(seed)(given(st.data())(example)))
    # A run that waits past the deadline for a store's thread (a busy-wait, a slow example)
    # is given up too: --max-time always ends the campaign.
    previous_deadline = set_wall_deadline(deadline)
    try:
        with frozen_heap():
            test()
    except _UsageError as usage:
        raise usage.problem from None
    except _OutOfTime:
        pass  # report.out_of_time says so
    except OutOfTime:
        report.out_of_time = True  # given up inside a run: that example has no verdict
    except _Violated as failed:
        traced_names = tuple(getattr(t, "__name__", str(t)) for t in traced)
        replay = Replay(
            factory=spec,
            steps=tuple(failed.result.steps),
            schedule=failed.result.schedule,
            seed=seed,
            setup=setup,
            traced=traced_names,
            kubesim_version=kubesim.__version__,
            python=python_version(),
            oracles=None if only is None else tuple(only),
        )
        report.found = Found(failed.verdict, failed.result, replay, failed.log)
    except Flaky as exc:
        raise NondeterminismDetected(
            f"an example of {spec} failed and then passed when Hypothesis ran it again: the run "
            "is not a function of its seed. kubesim controls time, threads started by the "
            "store and the server; look for wall-clock reads, real sockets, or iteration over "
            f"id()-ordered containers in the store. ({type(exc).__name__}: {exc})"
        ) from exc
    finally:
        set_wall_deadline(previous_deadline)
    for oracle in ORACLES:
        if oracle.name in report.ran:
            report.skipped.pop(oracle.name, None)
            report.not_exercised.pop(oracle.name, None)
    for name, why in list(report.not_exercised.items()):
        report.skipped.pop(name, None)
        if why == NO_READ and not report.kinds.get("read"):
            report.not_exercised[name] = f"{why}: no read step drawn"
    return report
