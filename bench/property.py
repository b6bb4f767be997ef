"""The property layer's bench: `python bench/property.py` (one command, tables, no assertion).

1. Examples per second of the default campaign (``check_store``, every step kind) on a small
   correct store (6 pods) and on the same store over 1,000 pods.
2. The cost of each oracle, per recording, over recordings of drawn scenarios, beside the cost
   of the run that made them.
3. Time to the first failure, and to the shrunk one, for every buggy model of the corpus.
4. The same, for a few of them, with a plain Hypothesis stateful test written without
   kubesim's scheduler and property layer: the store's run() in a plain thread against a live
   APIServer, real sleeps to let it catch up, and the same properties as invariants.

Wall times are noisy on shared machines: compare the rows of one run with each other.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import warnings
from statistics import median

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "unit")]

import property_stores  # noqa: E402
from hypothesis.errors import NonInteractiveExampleWarning  # noqa: E402

from kubesim.checks.store import ORACLES  # noqa: E402
from kubesim.scenario.run import Setup, run_scenario  # noqa: E402
from kubesim.sim.store import load_factory  # noqa: E402
from kubesim.testing.check import CheckReport, check_store  # noqa: E402
from kubesim.testing.strategies import scenarios  # noqa: E402

CORPUS = [
    "models.kubearmor:before_pr1553",
    "models.opencost:shared",
    "models.cilium:drops_tombstones",
    "models.kopf_resume:relist_on_reconnect",
    "models.stale_relist:relist_any_version",
    "models.shared_informer_mutation:mutate_cached",
    "models.stalled_listener:unbounded_pending",
    "models.ksm_relist:clear_then_add",
    "models.ip_index:stale_entry_on_ip_clear",
    "models.bookmark_crash:every_event_is_a_pod",
    "models.gone_loop:rewatch_same_rv",
    "models.too_large_rv:retry_at_once",
]


def campaign_rate(examples: int, pods: int) -> tuple[float, float]:
    started = time.perf_counter()
    report = check_store(
        property_stores.reflector,
        examples=examples,
        seed=0,
        setup=Setup(pods=pods),
        database=":memory:",
    )
    elapsed = time.perf_counter() - started
    assert report.ok, str(report.found)
    return report.examples / elapsed, elapsed


def oracle_costs(runs: int) -> tuple[float, dict[str, float]]:
    warnings.simplefilter("ignore", NonInteractiveExampleWarning)
    strategy = scenarios()
    random.seed(0)
    recordings = []
    run_seconds = 0.0
    for n in range(runs):
        steps = strategy.example()
        started = time.perf_counter()
        result = run_scenario(property_stores.locked_cache, steps, seed=n)
        run_seconds += time.perf_counter() - started
        recordings.append(result.recording)
    costs: dict[str, float] = {}
    for oracle in ORACLES:
        started = time.perf_counter()
        for recording in recordings:
            oracle.check(recording)
        costs[oracle.name] = (time.perf_counter() - started) / len(recordings)
    return run_seconds / runs, costs


def time_to_failure(spec: str, seeds: int) -> tuple[list[int], list[float], list[float]]:
    found_at: list[int] = []
    first: list[float] = []
    total: list[float] = []
    for seed in range(seeds):
        started = time.perf_counter()
        stamp: dict[str, float] = {}

        def on_example(report: CheckReport, stamp: dict[str, float] = stamp) -> None:
            if report.found_at is not None and "first" not in stamp:
                stamp["first"] = time.perf_counter()

        report = check_store(
            load_factory(spec),
            spec=spec,
            examples=200,
            seed=seed,
            database=":memory:",
            on_example=on_example,
        )
        if report.found_at is None:
            continue
        found_at.append(report.found_at)
        first.append(stamp.get("first", time.perf_counter()) - started)
        total.append(time.perf_counter() - started)
    return found_at, first, total


PLAIN = [
    ("models.kubearmor:before_pr1553", "bounded"),
    ("models.cilium:drops_tombstones", "converge"),
    ("models.kopf_resume:relist_on_reconnect", "effects-once"),
]
CATCH_UP = 0.05  # real seconds a plain test sleeps for the store's thread to catch up


def plain_time_to_failure(spec: str, examples: int) -> tuple[str, int, float]:
    """A RuleBasedStateMachine as a user would write it without kubesim's property layer."""
    import threading

    from hypothesis import HealthCheck, settings
    from hypothesis import strategies as st
    from hypothesis.errors import Flaky
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        invariant,
        rule,
        run_state_machine_as_test,
    )

    import kubesim
    from kubesim.workload import make_pod

    factory = load_factory(spec)
    counter = {"examples": 0, "names": 0}

    class Plain(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            counter["examples"] += 1
            self.server = kubesim.APIServer(seed=0)  # live: real threads, real time
            for n in range(2):
                self.server.create("namespaces", {"metadata": {"name": f"team-{n}"}})
            for _ in range(6):
                self._create()
            self.store = factory(kubesim.kubernetes_client(self.server))
            self.effects: list[object] = []
            threading.Thread(target=self.store.run, daemon=True).start()
            time.sleep(CATCH_UP)

        def _create(self) -> None:
            n = counter["names"] = counter["names"] + 1
            namespace = f"team-{n % 2}"
            self.server.create("pods", make_pod(f"web-{n:03d}", namespace), namespace=namespace)

        def _live(self) -> list[tuple[str, str]]:
            return [
                (p["metadata"]["namespace"], p["metadata"]["name"])
                for p in self.server.list("pods")
            ]

        @rule()
        def expire(self) -> None:
            self.server.expire_watches()
            time.sleep(CATCH_UP)

        @rule()
        def create(self) -> None:
            self._create()
            time.sleep(CATCH_UP)

        @rule(index=st.integers(0, 10))
        def delete_while_disconnected(self, index: int) -> None:
            live = self._live()
            self.server.drop_watches()
            namespace, name = live[index % len(live)]
            self.server.delete("pods", name, namespace=namespace)
            self.server.compact()
            time.sleep(CATCH_UP)

        @invariant()
        def bounded(self) -> None:
            sizes = getattr(self.store, "sizes", None)
            live = len(self._live())
            for name, value in (sizes() if callable(sizes) else {}).items():
                assert value <= 2 * live + 2, f"sizes()[{name!r}] = {value} for {live} pods"

        @invariant()
        def converged(self) -> None:
            view = getattr(self.store, "view", None)
            if callable(view):
                live = {f"{ns}/{name}" for ns, name in self._live()}
                assert set(view()) <= live, f"phantoms: {sorted(set(view()) - live)}"

        @invariant()
        def effects_once(self) -> None:
            effects = getattr(self.store, "effects", None)
            if callable(effects):
                self.effects.extend(effects())
                assert len(self.effects) == len(set(self.effects)), "a duplicate effect"

    started = time.perf_counter()
    outcome = "not found"
    try:
        run_state_machine_as_test(
            Plain,
            settings=settings(
                max_examples=examples,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    except Flaky:
        outcome = "flaky"
    except AssertionError:
        outcome = "found"
    return outcome, counter["examples"], time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    parser.add_argument("--seeds", type=int, default=3, help="campaign seeds per model")
    args = parser.parse_args()
    small, big, runs, seeds = (10, 2, 5, 1) if args.quick else (200, 10, 60, args.seeds)

    print("1. Default campaign, correct reflector (examples per second)")
    print(f"{'store':<28} {'examples':>9} {'seconds':>8} {'examples/s':>11}")
    for pods, examples in ((6, small), (1000, big)):
        rate, elapsed = campaign_rate(examples, pods)
        print(f"{f'reflector, {pods} pods':<28} {examples:>9} {elapsed:>8.1f} {rate:>11.2f}")

    print("\n2. Cost of each oracle per recording (locked cache with read(), drawn scenarios)")
    per_run, costs = oracle_costs(runs)
    print(f"{'oracle':<16} {'ms':>8} {'of the run':>11}")
    print(f"{'(the run)':<16} {per_run * 1000:>8.2f} {'100.0%':>11}")
    for name, seconds in costs.items():
        print(f"{name:<16} {seconds * 1000:>8.3f} {seconds / per_run:>10.1%}")

    print(f"\n3. Time to first failure, default settings, {seeds} seed(s), median")
    print(f"{'model':<48} {'found':>6} {'at ex.':>7} {'first s':>8} {'shrunk s':>9}")
    for spec in CORPUS[:1] if args.quick else CORPUS:
        found_at, first, total = time_to_failure(spec, seeds)
        if not found_at:
            print(f"{spec:<48} {'0/' + str(seeds):>6} {'-':>7} {'-':>8} {'-':>9}")
            continue
        print(
            f"{spec:<48} {f'{len(found_at)}/{seeds}':>6} {median(found_at):>7.0f} "
            f"{median(first):>8.1f} {median(total):>9.1f}"
        )

    print("\n4. A plain Hypothesis stateful test (no kubesim scheduler), 200 examples at most")
    print(f"{'model':<48} {'outcome':>9} {'examples':>9} {'seconds':>8}")
    for spec, _ in PLAIN[: 1 if args.quick else None]:
        outcome, examples, seconds = plain_time_to_failure(spec, 5 if args.quick else 200)
        print(f"{spec:<48} {outcome:>9} {examples:>9} {seconds:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
