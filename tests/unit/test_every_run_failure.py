"""Every way a run can end with the store at fault ends in a verdict, never in kubesim's traceback.

:func:`kubesim.scenario.run.run_failures` lists what a run records as the store's failure
instead of raising it. Each case below is a small store that fails one of those ways, driven
through :func:`~kubesim.scenario.run.run_scenario` with a fixed scenario: the run returns, the
oracles name the failure, and the words a user reads point at the store's code, not at
kubesim's. A new kind of run failure without a case here fails
``test_every_kind_of_run_failure_has_a_case``.
"""

from __future__ import annotations

import _thread
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kubesim.checks.store import judge
from kubesim.scenario.run import (
    Setup,
    StoreNeverRestarted,
    StoreStoppedWatching,
    run_failures,
    run_scenario,
)
from kubesim.scenario.steps import AdvanceTime, CrashAndRestart, CreatePods, LastingErrors, Step
from kubesim.sched.errors import Deadlock, Livelock
from kubesim.sim import simulation
from kubesim.sim.simulation import StoreBlockedOutsideSimulation, StoreCrashed

kubernetes = pytest.importorskip("kubernetes")
client = kubernetes.client


class Lister:
    """Lists pods once, then does what a subclass's ``after_list`` says."""

    def __init__(self, api_client: Any) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[str, Any] = {}

    def list(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        self.cache = {p["metadata"]["name"]: p for p in listed["items"]}

    def run(self) -> None:
        self.list()
        self.after_list()

    def after_list(self) -> None:
        while True:
            time.sleep(5)
            self.list()

    def view(self) -> dict[str, Any]:
        return dict(self.cache)


class RaisesOnAChange(Lister):
    def after_list(self) -> None:
        time.sleep(5)
        self.list()
        if len(self.cache) != 6:
            raise ValueError(f"expected 6 pods, found {len(self.cache)}")
        super().after_list()


class RetriesWithoutWaiting(Lister):
    def run(self) -> None:
        while True:
            try:
                self.list()
            except client.ApiException:
                continue  # no backoff: a hot loop while the errors last
            time.sleep(5)


class WaitsOnARealLock(Lister):
    gate = _thread.allocate_lock()  # made outside any run: a lock kubesim does not control

    def after_list(self) -> None:
        self.gate.acquire()
        self.gate.acquire()  # blocks in C for good


class SpinsOnAFlag(Lister):
    def after_list(self) -> None:
        self.ready = False
        while not self.ready:  # nothing else runs meanwhile: a spin with no scheduling point
            pass


class TakesTwoLocksInTurn(Lister):
    def after_list(self) -> None:
        first, second = threading.Lock(), threading.Lock()

        def other() -> None:
            with second:
                time.sleep(1)
                with first:
                    pass

        threading.Thread(target=other, daemon=True).start()
        with first:
            time.sleep(1)
            with second:
                pass


class SleepsForNoTime(Lister):
    def after_list(self) -> None:
        while True:
            time.sleep(0)  # each a step, and virtual time never moves: a livelock


class ReturnsAfterListing(Lister):
    def after_list(self) -> None:
        return


_starts: list[int] = []


def fails_at_every_restart(api_client: Any) -> Lister:
    _starts.append(1)
    if len(_starts) > 1:
        raise RuntimeError("cannot connect to the database")
    return Lister(api_client)


@dataclass(frozen=True)
class Case:
    factory: Callable[[Any], Any]
    steps: Sequence[Step]
    failure: type[BaseException]  # what the run records
    verdict: str  # the property the oracles name
    says: str  # words of the store's own code (or its numbers) the verdict shows


CASES = {
    "crash": Case(
        RaisesOnAChange,
        [CreatePods(1), AdvanceTime(10)],
        StoreCrashed,
        "crash",
        "ValueError: expected 6 pods, found 7",
    ),
    "hot loop": Case(
        RetriesWithoutWaiting, [LastingErrors(30, 500)], StoreCrashed, "progress", "requests"
    ),
    "real lock": Case(
        WaitsOnARealLock,
        [],
        StoreBlockedOutsideSimulation,
        "blocked",
        "self.gate.acquire()  # blocks in C for good",
    ),
    "spin": Case(SpinsOnAFlag, [], StoreBlockedOutsideSimulation, "blocked", "self.ready"),
    "deadlock": Case(TakesTwoLocksInTurn, [AdvanceTime(5)], Deadlock, "deadlock", "with first:"),
    "livelock": Case(SleepsForNoTime, [], Livelock, "livelock", "max_steps"),
    "stopped watching": Case(
        ReturnsAfterListing, [], StoreStoppedWatching, "stopped-watching", "run()"
    ),
    "never restarted": Case(
        fails_at_every_restart,
        [CrashAndRestart()],
        StoreNeverRestarted,
        "restart",
        "RuntimeError: cannot connect to the database",
    ),
}


class QuickWatchdog(simulation.Simulation):
    """The watchdog's verdicts in a second or two of wall time, not the defaults' 3 and 30."""

    def __init__(self, **options: Any) -> None:
        super().__init__(stuck_after=1.0, spin_after=2.0, **options)


@pytest.fixture(autouse=True)
def quick_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulation, "Simulation", QuickWatchdog)
    _starts.clear()


def test_every_kind_of_run_failure_has_a_case() -> None:
    for kind in run_failures():
        assert any(issubclass(case.failure, kind) for case in CASES.values()), kind


@pytest.mark.parametrize("name", list(CASES))
def test_the_run_returns_and_the_oracles_name_the_failure(name: str) -> None:
    case = CASES[name]
    result = run_scenario(case.factory, case.steps, seed=0, setup=Setup(fresh=False))
    failure = result.recording.failure
    assert isinstance(failure, case.failure), repr(failure)
    verdict = judge(result.recording)
    assert [v.property for v in verdict.violations][:1] == [case.verdict], verdict.violations
    shown = "\n".join(str(v) for v in verdict.violations)
    assert case.says in shown, shown
    # What a user reads: the store's failure in its own words, no frame of kubesim's.
    frames = [line.strip() for line in shown.splitlines() if line.strip().startswith("File ")]
    ours = [f for f in frames if f.startswith('File "kubesim/') or "/kubesim/" in f]
    assert not ours, shown
