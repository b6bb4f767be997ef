"""Turn-taking between controlled threads: ``Scheduler.yield_to``, atomic blocks that are a
thread's own, and ``Preemptions`` samplers that read at evenly spaced points of a relist."""

from __future__ import annotations

import sys
from pathlib import Path

from kubesim.sched import Preemptions, Scheduler
from kubesim.sched.strategies import SAMPLED_READS

sys.path.insert(0, str(Path(__file__).parent))
import turns


def test_yield_to_runs_the_other_thread_now_and_the_caller_after() -> None:
    scheduler = Scheduler(strategy=Preemptions([]), traced=[turns])
    order: list[str] = []
    result = scheduler.run(lambda: turns.yield_scenario(scheduler, order))
    assert result.ok, result.failure
    assert order == ["first: before", "second", "first: after"]


def test_a_thread_parked_inside_an_atomic_block_leaves_the_others_their_points() -> None:
    # The bookkeeper waits for the lock inside its atomic block; the holder's loop meanwhile
    # has scheduling points (a process-wide switch once silenced a whole relist this way).
    scheduler = Scheduler(strategy=Preemptions([]), traced=[turns])
    steps: list[int] = []
    result = scheduler.run(lambda: turns.atomic_scenario(scheduler, steps))
    assert result.ok, result.failure
    assert len(steps) == 1
    assert steps[0] >= 40, steps


def test_a_sampler_gets_evenly_spaced_turns_in_a_listing_threads_region() -> None:
    strategy = Preemptions([])
    strategy.start(choices=None)  # type: ignore[arg-type]
    lister, sampler, other = 0, 1, 2
    # A first relist of 160 points sets the spacing: 160 // SAMPLED_READS points apart.
    strategy.heat(lister, listing=True)
    for _ in range(160):
        assert strategy.at_point(0, lister, [lister, other]) == lister
    strategy.cool(lister)
    strategy.sample(sampler)
    strategy.heat(lister, listing=True)
    turns_at = [
        n
        for n in range(1, 161)
        if strategy.at_point(0, lister, [lister, sampler, other]) == sampler
    ]
    spacing = 160 // SAMPLED_READS
    assert turns_at == list(range(spacing, 161, spacing))
    # Not while the sampler waits (not runnable), nor in a region that is not a list's.
    assert strategy.at_point(0, lister, [lister, other]) == lister
    strategy.cool(lister)
    strategy.heat(lister)
    assert all(strategy.at_point(0, lister, [lister, sampler]) == lister for _ in range(40))
    assert strategy.listing(lister) is False


def test_a_hot_preemption_switches_at_its_hot_point_and_at_a_fraction_of_a_relist() -> None:
    # -(k + 1): the k-th hot point of a step's reaction; -(1000 + f + 1): the point at f/1000 of
    # the longest hot region seen (the middle of a relist as long as the last one).
    strategy = Preemptions([-3])
    strategy.start(choices=None)  # type: ignore[arg-type]
    strategy.heat(0)
    chosen = [strategy.at_point(n, 0, [0, 1]) for n in range(6)]
    assert chosen == [0, 0, 1, 0, 0, 0]
    # Points outside a hot region are not counted.
    strategy.cool(0)
    assert all(strategy.at_point(n, 0, [0, 1]) == 0 for n in range(6))
    halfway = Preemptions([-(1000 + 500) - 1])
    halfway.start(choices=None)  # type: ignore[arg-type]
    halfway.heat(0)
    for n in range(100):  # a first hot region of 100 points
        halfway.at_point(n, 0, [0])
    halfway.cool(0)
    halfway.rebase(0)
    halfway.heat(0)
    chosen = [halfway.at_point(n, 0, [0, 1]) for n in range(100)]
    assert chosen.index(1) == 50
    assert chosen.count(1) == 1
