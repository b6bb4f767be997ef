"""The baseline for ``bench/property.py``: a plain Hypothesis stateful test of a store.

This is what a user writes *without* kubesim's property layer: a
:class:`hypothesis.stateful.RuleBasedStateMachine` that drives the store against
``kubesim.APIServer`` through ``kubesim.kubernetes_client(server)``, with the store's
``run()`` (and its ``workers()``) in plain ``threading.Thread`` s. No Simulation, no
controlled scheduler, no virtual time: the server's default wait policy (``LiveWait``)
follows the wall clock, so a store's backoff sleeps are real, and the test must *sleep* after
every rule for the store's thread to catch up (``settle`` seconds) before it looks.

Rules are the same kinds of faults and changes as kubesim's step kinds (expire, drop,
compact, bookmark, HTTP errors, create, delete, label patches, status updates that clear the
podIP). The invariant checks what such a test would naturally check, after the sleep:

- ``crash``: the store's thread is alive and raised nothing;
- ``bounded``: every ``sizes()`` entry holds at most one item per live pod (a structure that
  outgrows the live set leaks);
- ``converge``: ``view()`` ends equal to the server's pods, keys and resourceVersions
  (polled until ``converge_within`` seconds have passed, as a user would);
- ``effects-once``: no key ``effects()`` hands over is seen twice;
- ``progress``: the store makes fewer than ``hot_requests_per_second`` requests per second
  while the test sleeps (a hot loop shows as thousands).

What it does not check, because it has no way to: reads that are torn or share mutated
objects (it would need reader threads at the right moment, and the versions the server held);
versions that go back in time (it sees only the end state); boundedness across restarts of a
store whose leak stays below one entry per pod. Nothing it does is repeatable: the schedule
is the OS's, so a failure may not reproduce while Hypothesis shrinks it (``Flaky``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

import kubesim
from kubesim.checks.recording import normalise_view
from kubesim.workload.pods import make_pod

StoreFactory = Callable[[Any], Any]


class _Stopped(BaseException):
    """Raised into the store's thread at teardown, from a request: it has no stop() hook."""


class PlainViolation(AssertionError):
    """The plain test's invariant failed; ``property`` names which."""

    def __init__(self, property_: str, message: str) -> None:
        super().__init__(f"{property_}: {message}")
        self.property = property_


@dataclass
class PlainCampaign:
    """What one plain stateful campaign did (filled in as it runs)."""

    examples: int = 0
    found_at: int | None = None  # the example whose invariant failed first
    found_after: float | None = None  # wall seconds from the start to that failure
    properties: list[str] = field(default_factory=list)  # of the first failure
    final: str | None = None  # the property of the failure Hypothesis reported at the end
    flaky: bool = False  # Hypothesis gave up: the failure did not happen again when re-run
    seconds: float = 0.0
    out_of_time: bool = False  # the wall-time budget ran out before a failure was found
    shrink_cut: bool = False  # shrinking ran out of its wall-time budget
    leaked_threads: int = 0  # store threads still alive after their example (daemon)


def _pod(number: int) -> Any:
    return make_pod(
        f"web-{number:03d}",
        f"team-{number % 2}",
        labels={"app": "web"},
        node=f"node-{number % 3}",
        pod_ip=f"10.1.{number // 256 % 256}.{number % 256}",
    )


def plain_machine(
    factory: StoreFactory,
    *,
    campaign: PlainCampaign,
    started: float,
    pods: int = 6,
    settle: float = 0.05,
    converge_within: float = 1.0,
    hot_requests_per_second: float = 200.0,
    deadline: float | None = None,
    shrink_budget: float | None = None,
) -> type[RuleBasedStateMachine]:
    """``deadline``: seconds from ``started`` after which no new example starts a store until
    a failure is found; ``shrink_budget``: the same for shrinking, from the first failure."""
    """A state machine class for ``factory`` that reports into ``campaign``."""

    class PlainStoreMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.server = kubesim.APIServer()
            self.numbers = iter(range(10_000))
            self.store: Any = None
            self.error: BaseException | None = None
            self.stopping = False
            self.effects: Counter[Any] = Counter()
            self.threads: list[threading.Thread] = []
            self.server.request_listeners.append(self._refuse_after_teardown)
            # Out of wall time with nothing found: the rest of the examples run no store (and
            # so cost nothing, and pass).
            now = time.perf_counter() - started
            self.idle = False
            if campaign.found_after is None:
                self.idle = deadline is not None and now > deadline
                campaign.out_of_time |= self.idle
            elif shrink_budget is not None and now > campaign.found_after + shrink_budget:
                # Shrinking ran out of its wall-time budget: what is left passes at once, so
                # Hypothesis stops (and may call the failure flaky when it replays it idle).
                self.idle = True
                campaign.shrink_cut = True
            if not self.idle:
                campaign.examples += 1

        def _refuse_after_teardown(self, method: str, path: str) -> None:
            if self.stopping:
                raise _Stopped()

        @initialize()
        def start(self) -> None:
            for n in range(2):
                self.server.create("namespaces", {"metadata": {"name": f"team-{n}"}})
            for _ in range(pods):
                self._create()
            if self.idle:
                return
            self.store = factory(kubesim.kubernetes_client(self.server))
            workers = getattr(self.store, "workers", None)
            targets = [self.store.run, *(workers() if callable(workers) else ())]
            for target in targets:
                thread = threading.Thread(target=self._guard(target), daemon=True)
                thread.start()
                self.threads.append(thread)
            time.sleep(settle)

        def _guard(self, target: Callable[[], Any]) -> Callable[[], None]:
            def main() -> None:
                try:
                    target()
                except _Stopped:
                    pass
                except BaseException as error:  # the store crashed: the invariant reports it
                    self.error = error

            return main

        def _create(self) -> None:
            pod = _pod(next(self.numbers))
            self.server.create("pods", pod, namespace=pod["metadata"]["namespace"])

        def _live(self) -> list[tuple[str, str]]:
            pods = self.server.resource("pods")
            return [key for key, _ in self.server.storage.items(pods)]

        # -- faults ----------------------------------------------------------------------
        @rule(with_error=st.booleans())
        def expire(self, with_error: bool) -> None:
            self.server.expire_watches(with_error=with_error)

        @rule()
        def drop(self) -> None:
            self.server.drop_watches()

        @rule()
        def compact(self) -> None:
            self.server.compact()

        @rule()
        def bookmark(self) -> None:
            self.server.send_bookmarks()

        @rule(count=st.integers(1, 3), code=st.sampled_from([500, 429, 403, 503, 504]))
        def http_error(self, count: int, code: int) -> None:
            self.server.fail_requests(count, code=code)

        # -- changes ---------------------------------------------------------------------
        @rule(count=st.integers(1, 8))
        def create(self, count: int) -> None:
            for _ in range(count):
                self._create()

        @rule(index=st.integers(0, 63))
        def delete(self, index: int) -> None:
            live = self._live()
            if live:
                namespace, name = live[index % len(live)]
                self.server.delete("pods", name, namespace=namespace)

        @rule(count=st.integers(1, 40), value=st.sampled_from(["v2", "v3"]))
        def labels(self, count: int, value: str) -> None:
            for namespace, name in self._live()[:count]:
                patch = {"metadata": {"labels": {"app": value}}}
                self.server.patch("pods", name, patch, namespace=namespace)

        @rule(index=st.integers(0, 63), phase=st.sampled_from(["Failed", "Succeeded"]))
        def status(self, index: int, phase: str) -> None:
            live = self._live()
            if live:
                namespace, name = live[index % len(live)]
                patch = {"status": {"phase": phase, "podIP": None, "podIPs": None}}
                self.server.patch("pods", name, patch, namespace=namespace, subresource="status")

        # -- what it checks --------------------------------------------------------------
        @invariant()
        def store_is_correct(self) -> None:
            if self.store is None:
                return
            before = self.server.request_count
            time.sleep(settle)  # let the store's thread catch up: there is no other way
            rate = (self.server.request_count - before) / settle
            try:
                self._check(rate)
            except PlainViolation as violation:
                if campaign.found_at is None:
                    campaign.found_at = campaign.examples
                    campaign.found_after = time.perf_counter() - started
                    campaign.properties = [violation.property]
                raise

        def _check(self, rate: float) -> None:
            if self.error is not None:
                raise PlainViolation("crash", f"{type(self.error).__name__}: {self.error}")
            if not self.threads[0].is_alive():
                raise PlainViolation("crash", "the store's run() returned")
            if rate > hot_requests_per_second:
                raise PlainViolation("progress", f"{rate:.0f} requests/s while idle")
            store = self.store
            live = len(self._live())
            if callable(getattr(store, "sizes", None)):
                for name, size in dict(store.sizes()).items():
                    if size > live:
                        raise PlainViolation("bounded", f"sizes()[{name!r}] = {size} > {live} pods")
            if callable(getattr(store, "effects", None)):
                self.effects.update(store.effects())
                twice = [key for key, n in self.effects.items() if n > 1]
                if twice:
                    raise PlainViolation("effects-once", f"{twice[0]!r} performed twice")
            if callable(getattr(store, "view", None)):
                deadline = time.monotonic() + converge_within
                while True:
                    server = self._server_view()
                    view = normalise_view(store.view())
                    if view == server:
                        break
                    if time.monotonic() > deadline:
                        raise PlainViolation(
                            "converge",
                            f"view has {len(view)} entries, the server {len(server)}; "
                            f"{len(set(view) ^ set(server))} keys differ",
                        )
                    time.sleep(settle)

        def _server_view(self) -> dict[str, Any]:
            pods = self.server.resource("pods")
            return normalise_view(
                {f"{k[0]}/{k[1]}": stored.obj for k, stored in self.server.storage.items(pods)}
            )

        def teardown(self) -> None:
            stop = getattr(self.store, "stop", None)
            self.stopping = True
            if callable(stop):
                stop()
            self.server.drop_watches()  # its next request raises _Stopped
            for thread in self.threads:
                thread.join(timeout=0.2)
            campaign.leaked_threads += sum(t.is_alive() for t in self.threads)

    return PlainStoreMachine


def run_plain(
    factory: StoreFactory,
    *,
    examples: int,
    seed: int,
    steps: int = 12,
    pods: int = 6,
    settle: float = 0.05,
    max_seconds: float | None = None,
    shrink: bool = True,
    max_shrink_seconds: float | None = None,
) -> tuple[PlainCampaign, InMemoryExampleDatabase]:
    """One plain campaign; returns what it did and its example database (for a replay).

    ``max_seconds``: wall time after which no new example starts a store, until a failure is
    found; ``max_shrink_seconds``: the same for shrinking, from the first failure on.
    ``shrink=False`` reports the first failure as found (each shrink attempt sleeps).
    """
    campaign = PlainCampaign()
    database = InMemoryExampleDatabase()
    started = time.perf_counter()
    machine = plain_machine(
        factory,
        campaign=campaign,
        started=started,
        pods=pods,
        settle=settle,
        deadline=max_seconds,
        shrink_budget=max_shrink_seconds,
    )
    machine = hypothesis_seed(seed)(machine)
    try:
        chosen = _settings(examples, steps, database)
        if not shrink:
            chosen = settings(chosen, phases=[Phase.explicit, Phase.reuse, Phase.generate])
        run_state_machine_as_test(machine, settings=chosen)
    except PlainViolation as violation:
        campaign.final = violation.property
    except Flaky:
        # A failure that did not happen again; not the store's doing when it was the shrink
        # budget that made the rest pass.
        campaign.flaky = not campaign.shrink_cut
    campaign.seconds = time.perf_counter() - started
    return campaign, database


def replay_plain(
    factory: StoreFactory,
    database: InMemoryExampleDatabase,
    *,
    seed: int,
    steps: int = 12,
    pods: int = 6,
    settle: float = 0.05,
) -> bool:
    """Re-run the saved failing example (Hypothesis' reuse phase only): does it fail again?"""
    campaign = PlainCampaign()
    machine = plain_machine(
        factory, campaign=campaign, started=time.perf_counter(), pods=pods, settle=settle
    )
    machine = hypothesis_seed(seed)(machine)
    replay_settings = settings(_settings(1, steps, database), phases=[Phase.reuse], max_examples=1)
    try:
        run_state_machine_as_test(machine, settings=replay_settings)
    except (PlainViolation, Flaky):
        return True
    return False


def _settings(examples: int, steps: int, database: InMemoryExampleDatabase) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=database,
        derandomize=False,
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
    )
