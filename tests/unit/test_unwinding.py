"""A store thread being unwound (a crash, a stop, the end of the run) is not a crash of the store
when a finally block raises on the way out: a process that dies runs none of it.

kuryr-kubernetes' ``Watcher._watch`` calls ``sys.exit(1)`` from its ``finally`` whenever the watch
loop ends without a retry pending; kubesim's unwinding (an ``_Abort`` raised where the thread
waits) went through that ``finally`` and reported the ``SystemExit`` as the store crashing, at the
end of every run, when the history oracle's fresh store was ended, and at every crash step.
"""

from __future__ import annotations

import sys

import property_stores as stores

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import CrashAndRestart, CreatePods, DeletePods


class ExitsOnTheWayOut(stores.Reflector):
    """Correct, and ends its process from a finally block, as kuryr's Watcher does."""

    def run(self) -> None:
        try:
            super().run()
        finally:
            sys.exit(1)


class RaisesOnTheWayOut(stores.Reflector):
    def run(self) -> None:
        try:
            super().run()
        finally:
            raise RuntimeError("cleanup failed")


def test_a_finally_that_exits_while_the_store_is_unwound_is_no_crash() -> None:
    steps = [CreatePods(1), CrashAndRestart(), DeletePods(1)]
    for factory in (ExitsOnTheWayOut, RaisesOnTheWayOut):
        result = run_scenario(factory, steps, seed=2)
        verdict = judge(result.recording)
        assert {v.property: str(v) for v in verdict.violations} == {}, factory.__name__
        assert result.recording.fresh is not None  # the fresh store was started and ended too


def test_a_store_that_exits_on_its_own_is_still_reported() -> None:
    class ExitsAtOnce(stores.Reflector):
        def run(self) -> None:
            sys.exit(1)

    result = run_scenario(ExitsAtOnce, [CreatePods(1)], seed=2)
    verdict = judge(result.recording)
    assert "SystemExit" in " ".join(str(v) for v in verdict.violations)
