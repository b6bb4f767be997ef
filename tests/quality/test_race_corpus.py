"""Every racy store in the race corpus (bench/race_corpus.py) is found by a Hypothesis-drawn
preemption list, shrinks to a short schedule, and that schedule replays exactly."""

from __future__ import annotations

import re

import pytest
from hypothesis import find, settings
from hypothesis import strategies as st

from bench import race_corpus
from bench.races import kubesim_scenario
from kubesim.sched import Preemptions
from kubesim.sched.explore import run_schedule

TRACED = [race_corpus]
RACY = [case for case in race_corpus.CASES if case.racy]


def _fails(scenario, points: list[int]) -> bool:
    return not run_schedule(scenario, seed=0, strategy=Preemptions(points), traced=TRACED).ok


@pytest.mark.parametrize("case", RACY, ids=lambda c: c.name)
def test_each_racy_case_shrinks_to_a_short_schedule_that_replays(case) -> None:
    scenario = kubesim_scenario(case)
    steps = run_schedule(scenario, seed=0, strategy=Preemptions([]), traced=TRACED).steps
    shrunk = find(
        st.lists(st.integers(0, steps), max_size=6, unique=True),
        lambda points: _fails(scenario, points),
        settings=settings(
            max_examples=2000,
            database=None,
            derandomize=True,
            deadline=None,
        ),
    )
    assert 1 <= len(shrunk) <= 3, shrunk
    first = run_schedule(scenario, seed=0, strategy=Preemptions(shrunk), traced=TRACED)
    again = run_schedule(scenario, seed=0, strategy=Preemptions(shrunk), traced=TRACED)
    assert not first.ok
    assert first.trace_hash == again.trace_hash
    assert re.search(r"\w", str(first.failure))
