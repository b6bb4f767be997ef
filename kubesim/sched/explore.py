"""Run many schedules of a scenario; report the first failure with its exact replay.

``explore`` draws a strategy per schedule from the portfolio (or uses the one given), feeds
back the largest step count seen as PCT's ``k`` (Shuttle's dynamic bound), and, when a schedule
fails, replays it once and compares trace hashes: a mismatch is reported as uncontrolled
nondeterminism in the harness or the code under test, never as a store bug.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kubesim._core import SeededChoices
from kubesim.sched.errors import NondeterminismDetected, ThreadCrashed
from kubesim.sched.scheduler import DEFAULT_MAX_STEPS, RunResult, Scheduler
from kubesim.sched.strategies import PCT, Preemptions, RandomWalk, Strategy, portfolio

StrategyFactory = Callable[[], Strategy]


@dataclass(frozen=True)
class Found:
    """A failing schedule: what broke, and how to run exactly that schedule again."""

    schedule: int
    seed: str
    strategy: str
    result: RunResult
    replay: str

    @property
    def failure(self) -> BaseException:
        assert self.result.failure is not None
        return self.result.failure

    def __str__(self) -> str:
        first = str(self.failure).splitlines()[0]
        return (
            f"schedule {self.schedule} ({self.strategy}) failed after {self.result.steps} steps, "
            f"{self.result.preemptions} preemptions: {type(self.failure).__name__}: {first}\n"
            f"replay: {self.replay}"
        )


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
    granularity: str = "opcode",
    max_steps: int = DEFAULT_MAX_STEPS,
    max_time: float | None = None,
) -> RunResult:
    """Run one schedule; the same arguments give the same trace hash."""
    scheduler = Scheduler(
        strategy=strategy,
        choices=SeededChoices(seed, name="schedule"),
        traced=traced,
        granularity=granularity,
        max_steps=max_steps,
        max_time=max_time,
    )
    return scheduler.run(scenario)


def _describe(strategy: Strategy) -> str:
    if isinstance(strategy, RandomWalk):
        return f"RandomWalk({strategy.p!r})"
    if isinstance(strategy, PCT):
        return f"PCT({strategy.depth}, steps={strategy.steps})"
    if isinstance(strategy, Preemptions):
        return f"Preemptions({sorted(strategy.points)!r})"
    return repr(strategy)


def explore(
    scenario: Callable[[], Any],
    *,
    schedules: int = 100,
    seed: int | str = 0,
    strategy: StrategyFactory | None = None,
    traced: Iterable[str | ModuleType] = (),
    granularity: str = "opcode",
    max_steps: int = DEFAULT_MAX_STEPS,
    max_time: float | None = None,
    check_determinism: bool = True,
) -> Exploration:
    """Run up to ``schedules`` schedules of ``scenario``; stop at the first failure."""
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
        result = run_schedule(
            scenario,
            seed=sub_seed,
            strategy=chosen,
            traced=traced,
            granularity=granularity,
            max_steps=max_steps,
            max_time=max_time,
        )
        estimate = max(estimate, result.steps)
        if result.failure is None:
            continue
        replay = (
            f"kubesim.sched.run_schedule({_scenario_name(scenario)}, seed={sub_seed!r}, "
            f"strategy=kubesim.sched.{_describe(chosen)}, traced=..., "
            f"granularity={granularity!r})  # PYTHONHASHSEED="
            f"{os.environ.get('PYTHONHASHSEED', 'random')}, Python {sys.version.split()[0]}"
        )
        if check_determinism:
            again = run_schedule(
                scenario,
                seed=sub_seed,
                strategy=_fresh(chosen),
                traced=traced,
                granularity=granularity,
                max_steps=max_steps,
                max_time=max_time,
            )
            if again.trace_hash != result.trace_hash:
                raise NondeterminismDetected(
                    f"schedule {index} ({chosen.name}) gave trace {result.trace_hash[:16]} then "
                    f"{again.trace_hash[:16]} on replay ({result.steps} vs {again.steps} steps). "
                    "Something the scheduler does not control decides the order: iteration over a "
                    "set or dict keyed by str with a random PYTHONHASHSEED, id()-ordered "
                    "structures, real time or sleeps, a thread started outside the scenario, or "
                    "I/O. Pin PYTHONHASHSEED and look for those.\nfirst failure: "
                    + str(result.failure).splitlines()[0]
                )
        return Exploration(
            index + 1, Found(index, sub_seed, chosen.name, result, replay), estimate, counts
        )
    return Exploration(schedules, None, estimate, counts)


def _fresh(strategy: Strategy) -> Strategy:
    if isinstance(strategy, RandomWalk):
        return RandomWalk(strategy.p)
    if isinstance(strategy, PCT):
        return PCT(strategy.depth, strategy.steps)
    if isinstance(strategy, Preemptions):
        return Preemptions(list(strategy.points))
    return strategy


def _scenario_name(scenario: Callable[[], Any]) -> str:
    module = getattr(scenario, "__module__", "?")
    name = getattr(scenario, "__qualname__", repr(scenario))
    return f"{module}.{name}"


def crashed_with(result: RunResult, exception: type[BaseException]) -> bool:
    """True when a controlled thread died of ``exception`` (e.g. RuntimeError)."""
    failure = result.failure
    return isinstance(failure, ThreadCrashed) and isinstance(
        getattr(failure, "original", None), exception
    )
