"""Run many schedules of a scenario; report the first failure with its exact replay.

``explore`` draws a strategy per schedule from the portfolio (or uses the one given), feeds
back the largest step count seen as PCT's ``k`` (Shuttle's dynamic bound), and, when a schedule
fails, replays it once and compares trace hashes: a mismatch is reported as uncontrolled
nondeterminism in the harness or the code under test, never as a store bug, with the first
trace record where the run and its replay part ways.

A failure's :attr:`Found.replay` is a shell command (``kubesim schedule MODULE:SCENARIO --seed
... --strategy ...``, see :mod:`kubesim.cli.schedule`) that runs exactly that schedule again in
a fresh process; :attr:`Found.replay_call` is the same as a Python call to :func:`run_schedule`.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kubesim._core import SeededChoices, Trace
from kubesim._core.trace import Field
from kubesim.sched.errors import NondeterminismDetected, ThreadCrashed
from kubesim.sched.scheduler import DEFAULT_MAX_STEPS, RunResult, Scheduler
from kubesim.sched.strategies import (
    PCT,
    Preemptions,
    RandomWalk,
    Strategy,
    describe_strategy,
    portfolio,
)

StrategyFactory = Callable[[], Strategy]

# Opcode points split ``x += 1`` and ``d[k] = d.get(k, 0) + 1``: line points would never preempt
# inside them, and a one-line read-modify-write race would pass every schedule.
DEFAULT_GRANULARITY = "opcode"


@dataclass(frozen=True)
class Found:
    """A failing schedule: what broke, and how to run exactly that schedule again.

    ``replay`` is a shell command for a fresh process (prefixed with ``PYTHONHASHSEED=...`` when
    this process had it pinned), or, when the scenario or strategy cannot be named from a shell,
    a sentence saying so with the Python call. ``replay_call`` is the equivalent Python call.
    ``note`` says what could still keep a replay from reproducing the failure (the Python version;
    an unpinned hash seed).
    """

    schedule: int
    seed: str
    strategy: str
    result: RunResult
    replay: str
    replay_call: str = ""
    note: str = ""

    @property
    def failure(self) -> BaseException:
        assert self.result.failure is not None
        return self.result.failure

    def __str__(self) -> str:
        first = str(self.failure).splitlines()[0]
        text = (
            f"schedule {self.schedule} ({self.strategy}) failed after {self.result.steps} steps, "
            f"{self.result.preemptions} preemptions: {type(self.failure).__name__}: {first}\n"
            f"replay: {self.replay}"
        )
        if self.replay_call and self.replay_call not in self.replay:
            text += f"\n   or in Python: {self.replay_call}"
        if self.note:
            text += f"\nnote: {self.note}"
        return text


@dataclass(frozen=True)
class Exploration:
    """What ``explore`` did: how many schedules ran, and the first failure if any."""

    schedules: int
    found: Found | None
    max_steps_seen: int
    strategies: dict[str, int]

    @property
    def ok(self) -> bool:
        return self.found is None


def schedule_seed(seed: int | str, index: int) -> str:
    return f"{seed}/{index}"


def run_schedule(
    scenario: Callable[[], Any],
    *,
    seed: int | str,
    strategy: Strategy,
    traced: Iterable[str | ModuleType] = (),
    granularity: str = DEFAULT_GRANULARITY,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_time: float | None = None,
) -> RunResult:
    """Run one schedule; the same arguments give the same trace hash.

    ``seed`` 7 and ``"7"`` are the same seed. ``strategy`` is used for this run only (it keeps
    per-run state): pass a fresh one per call.
    """
    return _run(
        scenario,
        seed=seed,
        strategy=strategy,
        traced=traced,
        granularity=granularity,
        max_steps=max_steps,
        max_time=max_time,
    )


def _run(
    scenario: Callable[[], Any],
    *,
    seed: int | str,
    strategy: Strategy,
    traced: Iterable[str | ModuleType],
    granularity: str,
    max_steps: int,
    max_time: float | None,
    trace: Trace | None = None,
) -> RunResult:
    scheduler = Scheduler(
        strategy=strategy,
        choices=SeededChoices(seed, name="schedule"),
        trace=trace,
        traced=traced,
        granularity=granularity,
        max_steps=max_steps,
        max_time=max_time,
    )
    return scheduler.run(scenario)


def explore(
    scenario: Callable[[], Any],
    *,
    schedules: int = 100,
    seed: int | str = 0,
    strategy: StrategyFactory | None = None,
    traced: Iterable[str | ModuleType] = (),
    granularity: str = DEFAULT_GRANULARITY,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_time: float | None = None,
    check_determinism: bool = True,
) -> Exploration:
    """Run up to ``schedules`` schedules of ``scenario``; stop at the first failure.

    With ``check_determinism`` the failing schedule is run again; a different trace hash raises
    :class:`NondeterminismDetected`, whose message shows the first record where the two runs
    differ and the causes that fit. Otherwise the failure comes back as ``found``, with its
    replay command.
    """
    if schedules < 1:
        raise ValueError(f"schedules must be >= 1, got schedules={schedules!r}")
    traced = tuple(traced)
    # The largest step count seen: PCT's k. Only the first schedule uses the 1000 guess; a floor
    # of 1000 would put most change points past the end of a short scenario's run.
    estimate = 0
    counts: dict[str, int] = {}
    for index in range(schedules):
        sub_seed = schedule_seed(seed, index)
        chosen = (
            strategy()
            if strategy is not None
            else portfolio(SeededChoices(sub_seed, name="portfolio"), steps=estimate or 1000)
        )
        counts[chosen.name] = counts.get(chosen.name, 0) + 1
        options: dict[str, Any] = {
            "seed": sub_seed,
            "traced": traced,
            "granularity": granularity,
            "max_steps": max_steps,
            "max_time": max_time,
        }
        result = _run(scenario, strategy=_fresh(chosen), **options)
        estimate = max(estimate, result.steps)
        if result.failure is None:
            continue
        if check_determinism:
            again = _run(scenario, strategy=_fresh(chosen), **options)
            if again.trace_hash != result.trace_hash:
                raise _nondeterminism(scenario, index, chosen, result, again, options)
        replay, replay_call, note = _replay(scenario, chosen, options)
        found = Found(index, sub_seed, chosen.name, result, replay, replay_call, note)
        return Exploration(index + 1, found, estimate, counts)
    return Exploration(schedules, None, estimate, counts)


def _fresh(strategy: Strategy) -> Strategy:
    if isinstance(strategy, RandomWalk):
        return RandomWalk(strategy.p, name=strategy.name)
    if isinstance(strategy, PCT):
        return PCT(strategy.depth, strategy.steps, name=strategy.name)
    if isinstance(strategy, Preemptions):
        return Preemptions(list(strategy.points), name=strategy.name)
    return strategy


# -- replays ---------------------------------------------------------------------------------


def _qualified_name(obj: object) -> tuple[str, str] | None:
    """``(module, qualname)`` when importing ``module`` and walking ``qualname`` gives ``obj``."""
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        return None
    if module_name == "__main__" or "<" in qualname:  # a script, a closure or a lambda
        return None
    target: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return (module_name, qualname) if target is obj else None


def _traced_text(item: str | ModuleType) -> tuple[str, str]:
    """An entry of ``traced`` as (shell argument, Python expression): a module by its
    importable name, anything else as an absolute path."""
    if isinstance(item, ModuleType):
        name = item.__name__
        if name != "__main__" and sys.modules.get(name) is item:
            return name, name
        path = os.path.abspath(getattr(item, "__file__", None) or name)
        if os.path.basename(path) == "__init__.py":
            path = os.path.dirname(path)
        return path, repr(path)
    path = os.path.abspath(item)
    return path, repr(path)


def _hash_seed() -> str | None:
    """This process's ``PYTHONHASHSEED`` if it was pinned, else None (random per process)."""
    value = os.environ.get("PYTHONHASHSEED")
    return None if value in (None, "", "random") else value


def _replay(
    scenario: Callable[[], Any], strategy: Strategy, options: dict[str, Any]
) -> tuple[str, str, str]:
    """The shell replay, the Python call and a note, for one failing schedule."""
    named = _qualified_name(scenario)
    strategy_text = describe_strategy(strategy)
    traced = [_traced_text(item) for item in options["traced"]]
    imports = ["kubesim.sched"]
    if named is not None:
        imports.append(named[0])
        scenario_expr = f"{named[0]}.{named[1]}"
    else:
        scenario_expr = "SCENARIO"
    # Modules named by their import name must be imported for the call to see them.
    imports += [
        item.__name__
        for item, (shell_arg, _) in zip(options["traced"], traced, strict=True)
        if isinstance(item, ModuleType) and shell_arg == item.__name__
    ]
    strategy_expr = f"kubesim.sched.{strategy_text}" if strategy_text else "STRATEGY"
    call = (
        f"kubesim.sched.run_schedule({scenario_expr}, seed={options['seed']!r}, "
        f"strategy={strategy_expr}, traced=[{', '.join(expr for _, expr in traced)}], "
        f"granularity={options['granularity']!r}, max_steps={options['max_steps']!r}, "
        f"max_time={options['max_time']!r})"
    )
    call = f"import {', '.join(dict.fromkeys(imports))}; {call}"
    placeholders = []
    if named is None:
        where = getattr(scenario, "__module__", "?")
        what = getattr(scenario, "__qualname__", repr(scenario))
        placeholders.append(
            f"SCENARIO is the scenario function {what} of module {where}, which cannot be "
            "imported by a qualified name (a closure, a lambda, a function defined inside a "
            "test, or a script's __main__); define it at module level to get a shell command"
        )
    if strategy_text is None:
        placeholders.append(
            f"STRATEGY is a fresh {type(strategy).__name__} like the one this schedule used "
            f"({strategy.name}); only RandomWalk, PCT and Preemptions can be written as text"
        )
    hash_seed = _hash_seed()
    # Scheduling points are bytecode offsets and lines: another Python numbers them differently.
    note = f"the schedule replays on Python {sys.version.split()[0]}, where it was found"
    if hash_seed is None:
        note += (
            "; the str hash seed of this process is unknown (PYTHONHASHSEED is not set, so it was "
            "random): if the failure depends on str hashing (iteration order of a set or dict "
            "keyed by str), it may not replay; pin it, e.g. PYTHONHASHSEED=0, when exploring"
        )
    if placeholders:
        replay = "not replayable from a shell: " + "; ".join(placeholders) + f". In Python: {call}"
        return replay, call, note
    args = [
        "kubesim",
        "schedule",
        f"{named[0]}:{named[1]}" if named else "",
        "--seed",
        str(options["seed"]),
        "--strategy",
        strategy_text or "",
    ]
    for shell_arg, _ in traced:
        args += ["--traced", shell_arg]
    args += ["--granularity", options["granularity"], "--max-steps", str(options["max_steps"])]
    if options["max_time"] is not None:
        args += ["--max-time", repr(options["max_time"])]
    command = shlex.join(args)
    if hash_seed is not None:
        command = f"PYTHONHASHSEED={shlex.quote(hash_seed)} {command}"
    return command, call, note


# -- nondeterminism --------------------------------------------------------------------------


def _nondeterminism(
    scenario: Callable[[], Any],
    index: int,
    strategy: Strategy,
    first: RunResult,
    again: RunResult,
    options: dict[str, Any],
) -> NondeterminismDetected:
    """Re-run the schedule twice keeping every trace record; say where and why they differ."""
    runs: list[list[tuple[Field, ...]]] = []
    for _ in range(2):
        trace = Trace(keep_all=True)
        _run(scenario, strategy=_fresh(strategy), trace=trace, **options)
        assert trace.records is not None
        runs.append(trace.records)
    head = (
        f"schedule {index} ({strategy.name}) gave trace {first.trace_hash[:16]} then "
        f"{again.trace_hash[:16]} on replay ({first.steps} vs {again.steps} steps): something "
        "the scheduler does not control decides what the code does."
    )
    tail = "\nfirst failure: " + (str(first.failure).splitlines() or [""])[0]
    diverge = _first_difference(runs[0], runs[1])
    if diverge is None:
        return NondeterminismDetected(
            head + "\nRe-running it twice more with every trace record kept, the two runs agreed: "
            "the difference is intermittent. Look for:\n" + _causes(None, None) + tail
        )
    mine = runs[0][diverge] if diverge < len(runs[0]) else None
    theirs = runs[1][diverge] if diverge < len(runs[1]) else None
    step = _step_before(runs[0], diverge)
    context = runs[0][diverge - 1] if diverge else None
    lines = [
        head,
        f"Re-running it twice with every trace record kept, the runs first differ at record "
        f"{diverge} (after scheduling step {step}):",
        f"  run:    {_show(mine)}",
        f"  replay: {_show(theirs)}",
    ]
    if context is not None:
        lines.append(f"  (both runs before it: ... {context!r})")
    lines.append("Causes that fit this difference:")
    return NondeterminismDetected(
        "\n".join(lines) + "\n" + _causes(mine, theirs) + tail,
        record=diverge,
        run_record=mine,
        replay_record=theirs,
    )


def _first_difference(a: list[tuple[Field, ...]], b: list[tuple[Field, ...]]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _step_before(records: list[tuple[Field, ...]], index: int) -> int:
    """The last scheduling step a record before ``index`` names (switch and block carry one)."""
    for record in reversed(records[:index]):
        if record[0] in ("switch", "block") and isinstance(record[1], int):
            return record[1]
    return 0


def _show(record: tuple[Field, ...] | None) -> str:
    return "(the run had ended)" if record is None else repr(record)


def _causes(mine: tuple[Field, ...] | None, theirs: tuple[Field, ...] | None) -> str:
    kinds = {r[0] for r in (mine, theirs) if r is not None}
    causes: list[str] = []
    if "spawn" in kinds or (mine is None) != (theirs is None):
        causes.append(
            "a different thread started, or it was named differently: names built from a "
            "process-wide counter, id() or get_ident() (kubesim renumbers threading's default "
            "Thread-N names per run, not names of your own)"
        )
    if "autojump" in kinds:
        causes.append(
            "timers set for different times: durations computed from wall time (a time "
            "function bound before the run, datetime.now()), or real sleeps"
        )
    if "failure" in kinds:
        causes.append(
            "a failure message that differs between runs (it names a count, an object or a time "
            "that is not the same each run)"
        )
    causes += [
        "state kept from one run to the next: a module-level counter, cache, lru_cache or "
        "singleton the scenario reads and changes (each run must start from the same state)",
        "id()-ordered structures: sets or dicts of objects hashed by identity, WeakSet or "
        "WeakKeyDictionary iteration, sorting by id()",
        "wall time, randomness outside the choice source (random, os.urandom, uuid4), a thread "
        "started outside the scenario, or I/O",
    ]
    text = "\n".join(f"- {cause}" for cause in causes)
    if _hash_seed() is None:
        text += (
            "\n- (PYTHONHASHSEED is not set: str hashing is random per process. It is fixed "
            "within this process, so it cannot explain a difference between a run and its replay "
            "here, but it can between processes: pin it, e.g. PYTHONHASHSEED=0)"
        )
    return text


def crashed_with(result: RunResult, exception: type[BaseException]) -> bool:
    """True when a controlled thread died of ``exception`` (e.g. RuntimeError)."""
    failure = result.failure
    return isinstance(failure, ThreadCrashed) and isinstance(
        getattr(failure, "original", None), exception
    )
