"""The property layer's benchmark: ``python bench/property.py [--quick]``.

Measures, in one run, what ``kubesim check`` costs and how fast it finds the corpus' bugs:

1. **Campaign rate**: examples per second of the default campaign
   (:func:`kubesim.testing.check.check_store`, every step kind, ``database=":memory:"``) on a
   small correct store (``tests/unit/property_stores.py:reflector``, 6 pods) and on the same
   store with ``Setup(pods=1000)``; each with the retained-memory walk on (the default) and
   off (``Setup(memory=False)``), and, at 6 pods, with the history oracle's fresh store off
   (``Setup(fresh=False)``): what the differential oracle costs.
2. **Where one example's time goes**: ``run_scenario`` over drawn scenarios, its stages timed
   (populate, store start, steps and settles, quiesce and tail rounds, observation, of which
   the retained-memory walk, stop) and the verdict (``judge``).
3. **The cost of each oracle** (:data:`kubesim.checks.store.ORACLES`): each oracle's check over
   the recordings of drawn scenarios, per recording and as a share of the run.
4. **Time to first failure** on each buggy model of ``models/`` (the :data:`CORPUS` registry;
   missing models are skipped): examples and seconds until ``check_store`` first fails, what
   shrinking costs, and whether the replay token gives the same trace; side by side with a
   plain Hypothesis stateful test of the same store (``bench/plain_stateful.py``: real threads,
   real sleeps, no kubesim scheduler).

All timings are CPU time of the whole process (``time.process_time``; kubesim's store
threads run one at a time) unless a column says wall. Time to first failure is wall time:
the plain test sleeps. No timing is asserted anywhere; see bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout: import kubesim, bench, models
    sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402

from kubesim.checks.store import ORACLES, judge  # noqa: E402

try:  # as check_store runs its examples (older trees, measured side by side, have none)
    from kubesim._core.heap import frozen_heap
except ImportError:  # pragma: no cover - an older tree
    frozen_heap = contextlib.nullcontext  # type: ignore[assignment]
from kubesim.scenario.run import ScenarioRun, Setup, run_scenario  # noqa: E402
from kubesim.scenario.steps import Step  # noqa: E402
from kubesim.testing.check import check_store  # noqa: E402
from kubesim.testing.replay import parse_token  # noqa: E402
from kubesim.testing.strategies import DEFAULT_KINDS, scenarios  # noqa: E402

DEFAULT_OUTPUT = ROOT / "bench" / "results" / "property.json"
SMALL = "tests.unit.property_stores:reflector"
# Stores of other kinds, at the default setup: the workload writes each of their kinds.
MULTI_KIND = (
    ("service registry (services + pods)", "tests.unit.kind_stores:service_registry", False),
    ("job watcher, controllers on", "tests.unit.kind_stores:jobs", True),
)


@dataclass(frozen=True)
class Target:
    """One buggy model of the corpus: where its factory is and what it breaks."""

    name: str
    spec: str  # module:factory
    expected: str  # the property the buggy factory breaks


# The corpus (models/README.md). A model that is not in this checkout is skipped, visibly.
CORPUS: tuple[Target, ...] = (
    Target("kubearmor", "models.kubearmor:before_pr1553", "bounded"),
    Target("opencost", "models.opencost:shared", "isolation"),
    Target("cilium", "models.cilium:drops_tombstones", "converge"),
    Target("kopf_resume", "models.kopf_resume:relist_on_reconnect", "effects-once"),
    Target("stale_relist", "models.stale_relist:relist_any_version", "monotone"),
    Target(
        "shared_informer_mutation", "models.shared_informer_mutation:mutate_cached", "isolation"
    ),
    Target("stalled_listener", "models.stalled_listener:unbounded_pending", "bounded"),
    Target("ksm_relist", "models.ksm_relist:clear_then_add", "snapshot-reads"),
    Target("ip_index", "models.ip_index:stale_entry_on_ip_clear", "converge"),
    Target("bookmark_crash", "models.bookmark_crash:every_event_is_a_pod", "crash"),
    Target("gone_loop", "models.gone_loop:rewatch_same_rv", "progress"),
    Target("label_index", "models.label_index:keeps_empty_index_sets", "history"),
    Target("endpoint_table", "models.endpoint_table:drops_tombstone_deletes", "history"),
    Target("ip_reuse", "models.ip_reuse:one_owner_per_ip", "history"),
    Target("label_intern", "models.label_intern:interns_forever", "history"),
    Target("dedupe_resync", "models.dedupe_resync:never_forgets_handled", "history"),
    Target("expiry_reason", "models.expiry_reason:expired_by_reason", "converge"),
    Target("retry_storm", "models.retry_storm:retry_immediately", "progress"),
    Target("read_timeout", "models.read_timeout:timeout_kills_watcher", "crash"),
    Target("stop_during_list", "models.stop_during_list:checks_before_watch_loop", "clean-stop"),
    Target("unlocked_reader", "models.unlocked_reader:iterate_live_cache", "snapshot-reads"),
    Target("prune_then_update", "models.prune_then_update:prune_then_update", "snapshot-reads"),
    Target("ns_reflectors", "models.ns_reflectors:clears_namespace_on_relist", "snapshot-reads"),
    Target("lagging_replica", "models.lagging_replica:relist_any_version", "monotone"),
)
QUICK_CORPUS = ("kubearmor", "bookmark_crash")
# Wall-time budget for shrinking one plain stateful failure (every attempt sleeps).
PLAIN_SHRINK_SECONDS = 60.0
# Stores whose recordings the oracles are timed over: every oracle runs on one of them.
ORACLE_STORES: tuple[tuple[str, str, int], ...] = (
    ("reflector, 6 pods", SMALL, 6),
    ("reflector, 1,000 pods", SMALL, 1000),
    ("locked cache + read(), 6 pods", "tests.unit.property_stores:locked_cache", 6),
    ("stoppable + stop(), 6 pods", "tests.unit.property_stores:stops_cleanly", 6),
    ("kopf fixed + effects(), 6 pods", "models.kopf_resume:watch_from_last_rv", 6),
)


def load(spec: str) -> Callable[[Any], Any] | None:
    """The factory ``module:attribute``, or None when this checkout does not have it."""
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as missing:
        if missing.name and module_name.startswith(missing.name):
            return None
        raise
    factory = getattr(module, attribute, None)
    return factory if callable(factory) else None


# -- tables ---------------------------------------------------------------------------------
def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in headers]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [title, ""]
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


# -- drawing scenarios ------------------------------------------------------------------------
def draw_scenarios(
    count: int, *, seed: int, kinds: Sequence[str] = DEFAULT_KINDS
) -> list[list[Step]]:
    """``count`` scenarios as ``kubesim check`` draws them (swarm over ``kinds``), for ``seed``.

    Without the empty ones: Hypothesis starts with the simplest example, which would make the
    first (at 1,000 pods, the only) scenario a run with no steps.
    """
    drawn: list[list[Step]] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=4 * count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios(kinds=kinds))
    def collect(steps: list[Step]) -> None:
        if steps and len(drawn) < count:
            drawn.append(steps)

    collect()
    return drawn[:count]


# -- 1. campaign rate -----------------------------------------------------------------------
def campaign_rate(*, examples_small: int, examples_large: int, repetitions: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    # Untimed warm-up: the first campaign in a process pays for imports and first calls.
    warm = load(SMALL)
    assert warm is not None, SMALL
    check_store(warm, spec=SMALL, examples=3, seed=0, database=":memory:")
    # The default campaign (memory walk and history oracle on), then each of them off; then
    # stores of other kinds at the default setup.
    variants = ((True, True), (False, True), (True, False))
    runs = [
        ("reflector", SMALL, Setup(pods=pods, memory=memory, fresh=fresh), examples)
        for pods, examples in ((6, examples_small), (1000, examples_large))
        for memory, fresh in (variants if pods == 6 else variants[:2])
    ]
    runs += [
        (name, spec, Setup(controllers=controllers), examples_small)
        for name, spec, controllers in MULTI_KIND
    ]
    for name, spec, setup, examples in runs:
        factory = load(spec)
        assert factory is not None, spec
        cpu: list[float] = []
        wall: list[float] = []
        done = 0
        for _ in range(repetitions):
            wall_0, cpu_0 = time.perf_counter(), time.process_time()
            report = check_store(
                factory,
                spec=spec,
                examples=examples,
                seed=0,
                setup=setup,
                database=":memory:",
            )
            cpu.append(time.process_time() - cpu_0)
            wall.append(time.perf_counter() - wall_0)
            done = report.examples
            if report.found is not None:
                raise SystemExit(f"harness problem: {spec} failed:\n{report.found}")
        rows.append(
            {
                "store": name,
                "pods": setup.pods,
                "memory": setup.memory,
                "history": setup.fresh,
                "controllers": setup.controllers,
                "examples": done,
                "cpu_seconds": cpu,
                "wall_seconds": wall,
                "examples_per_cpu_second": done / statistics.median(cpu),
                "examples_per_wall_second": done / statistics.median(wall),
            }
        )
    default = next(
        r
        for r in rows
        if r["store"] == "reflector" and r["pods"] == 6 and r["memory"] and r["history"]
    )
    printed = [
        (
            f"reflector, {r['pods']:,} pods, memory walk {'on' if r['memory'] else 'off'}, "
            f"history oracle {'on' if r['history'] else 'off'}"
            if r["store"] == "reflector"
            else f"{r['store']}, {r['pods']} of each kind",
            r["examples"],
            r["examples_per_cpu_second"],
            r["examples_per_wall_second"],
            1000 / r["examples_per_cpu_second"],
            f"{r['examples_per_cpu_second'] / default['examples_per_cpu_second']:.3f}x",
        )
        for r in rows
    ]
    print(
        table(
            "1. Campaign rate: check_store, every step kind, database=':memory:', seed 0",
            ("campaign", "examples", "ex/s cpu", "ex/s wall", "ms/ex cpu", "vs default"),
            printed,
        )
        + "\n",
        flush=True,
    )
    return {"rows": rows}


# -- 2. where one example's time goes ---------------------------------------------------------
class StageClock:
    """Exclusive CPU time per stage: a stage's time excludes the stages nested in it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[list[float]] = []  # [started, nested]

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._stack.append([time.process_time(), 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                started, nested = self._stack.pop()
                spent = time.process_time() - started
                self.seconds[name] = self.seconds.get(name, 0.0) + spent - nested
                if self._stack:
                    self._stack[-1][1] += spent

        return timed


# ScenarioRun methods timed as stages (name in the table, method).
STAGES: tuple[tuple[str, str], ...] = (
    ("populate the server", "populate"),
    ("start the store (factory, first list/watch)", "_start_store"),
    ("steps and their settles", "apply"),
    ("quiesce and tail rounds", "quiesce"),
    ("stop() hook", "stop_store"),
    ("observe: view, sizes, server state", "observe"),
)
MEASURE = "observe, of which: retained-memory walk"


@contextlib.contextmanager
def timed_stages(clock: StageClock) -> Iterator[None]:
    import kubesim.checks.retained as retained

    saved: list[tuple[Any, str, Any]] = []
    targets = [(ScenarioRun, method, name) for name, method in STAGES]
    targets.append((retained, "measure_retained", MEASURE))
    for owner, attribute, name in targets:
        original = getattr(owner, attribute, None)
        if original is None:
            raise SystemExit(
                f"bench/property.py is out of date: {owner.__name__}.{attribute} is gone"
            )
        saved.append((owner, attribute, original))
        setattr(owner, attribute, clock.wrap(name, original))
    try:
        yield
    finally:
        for owner, attribute, original in saved:
            setattr(owner, attribute, original)


def breakdown(*, scenarios_small: int, scenarios_large: int, seed: int) -> dict[str, Any]:
    factory = load(SMALL)
    assert factory is not None, SMALL
    columns: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    # Untimed warm-up: the first run in a process imports the client libraries (the official
    # client's API module alone is over a second), which no later example pays.
    for steps in draw_scenarios(2, seed=seed):
        run_scenario(factory, steps, seed=seed, setup=Setup(), spec=SMALL)
    for pods, count in ((6, scenarios_small), (1000, scenarios_large)):
        label = f"{pods:,} pods"
        clock = StageClock()
        total = 0.0
        judging = 0.0
        drawn = draw_scenarios(count, seed=seed)
        for steps in drawn:
            with frozen_heap(), timed_stages(clock):
                started = time.process_time()
                result = run_scenario(factory, steps, seed=seed, setup=Setup(pods=pods), spec=SMALL)
                total += time.process_time() - started
            started = time.process_time()
            judge(result.recording)
            judging += time.process_time() - started
        stages = dict(clock.seconds)
        stages["other (Simulation, teardown)"] = total - sum(stages.values())
        stages["judge (every oracle)"] = judging
        columns[label] = {k: v / len(drawn) for k, v in stages.items()}
        counts[label] = len(drawn)
    names = [name for name, _ in STAGES] + [
        MEASURE,
        "other (Simulation, teardown)",
        "judge (every oracle)",
    ]
    rows = []
    for name in names:
        row: list[Any] = [name]
        for stages in columns.values():
            spent = stages.get(name, 0.0)
            row += [spent * 1000, f"{100 * spent / sum(stages.values()):.0f}%"]
        rows.append(row)
    total_row: list[Any] = ["total"]
    for stages in columns.values():
        total_row += [sum(stages.values()) * 1000, "100%"]
    rows.append(total_row)
    headers = ["stage (CPU ms per example)"]
    for label in columns:
        headers += [f"{label} ({counts[label]} ex.)", "share"]
    print(
        table(
            "2. One example's time: run_scenario over drawn scenarios, reflector, stages exclusive",
            headers,
            rows,
        )
        + "\n",
        flush=True,
    )
    return {"per_example_seconds": columns, "scenarios": counts}


# -- 3. the cost of each oracle ---------------------------------------------------------------
def oracle_costs(
    *, recordings: int, recordings_large: int, seed: int, repeat: int
) -> dict[str, Any]:
    results: dict[str, dict[str, Any]] = {}
    drawn = draw_scenarios(max(recordings, recordings_large), seed=seed)
    for label, spec, pods in ORACLE_STORES:
        factory = load(spec)
        if factory is None:
            print(f"   (skipped {label}: {spec} is not in this checkout)")
            continue
        count = recordings_large if pods >= 1000 else recordings
        # Untimed warm-up run (first calls, imports), and a first call of every oracle.
        warm = run_scenario(factory, drawn[0], seed=seed, setup=Setup(pods=6), spec=spec)
        judge(warm.recording)
        run_cpu: list[float] = []
        per_oracle: dict[str, list[float]] = {o.name: [] for o in ORACLES}
        for steps in drawn[:count]:
            started = time.process_time()
            result = run_scenario(factory, steps, seed=seed, setup=Setup(pods=pods), spec=spec)
            run_cpu.append(time.process_time() - started)
            recording = result.recording
            for oracle in ORACLES:
                if any(h not in recording.hooks for h in oracle.needs):
                    continue
                if recording.failure is not None and oracle.name != "failure":
                    continue
                started = time.process_time()
                for _ in range(repeat):
                    oracle.check(recording)
                per_oracle[oracle.name].append((time.process_time() - started) / repeat)
        results[label] = {
            "recordings": count,
            "run_cpu_seconds": run_cpu,
            "oracle_cpu_seconds": per_oracle,
        }
    rows = []
    for label, data in results.items():
        run = statistics.mean(data["run_cpu_seconds"])
        row: list[Any] = [f"{label} ({data['recordings']})", run * 1000]
        every = 0.0
        for oracle in ORACLES:
            times = data["oracle_cpu_seconds"][oracle.name]
            row.append(statistics.mean(times) * 1e6 if times else None)
            every += statistics.mean(times) if times else 0.0
        row.append(f"{100 * every / run:.2f}%")
        rows.append(row)
    headers = ["store (recordings)", "run ms", *(f"{o.name} us" for o in ORACLES), "oracles/run"]
    print(
        table(
            "3. Oracle cost: CPU per recording, each oracle over the same recordings "
            "(- : skipped, the store lacks the hook)",
            headers,
            rows,
        )
        + "\n",
        flush=True,
    )
    return results


# -- 4. time to first failure -----------------------------------------------------------------
def kubesim_first_failure(
    target: Target, factory: Callable[[Any], Any], *, seed: int, examples: int
) -> dict[str, Any]:
    stamps: list[float] = []
    started = time.perf_counter()
    report = check_store(
        factory,
        spec=target.spec,
        examples=examples,
        seed=seed,
        database=":memory:",
        on_example=lambda _report: stamps.append(time.perf_counter() - started),
    )
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {"seed": seed, "examples": report.examples, "seconds": seconds}
    found = report.found
    if found is None or report.found_at is None:
        out["found"] = False
        return out
    first = stamps[report.found_at - 1]
    again = parse_token(found.replay.token()).run()
    out.update(
        found=True,
        found_at=report.found_at,
        first_seconds=first,
        shrink_examples=report.examples - report.found_at,
        shrink_seconds=seconds - first,
        steps=len(found.result.steps),
        properties=found.properties,
        replayed=again.trace_hash == found.result.trace_hash
        and [v.property for v in judge(again.recording).violations] == found.properties,
    )
    return out


def plain_first_failure(
    factory: Callable[[Any], Any], *, seed: int, examples: int, max_seconds: float, shrink: bool
) -> dict[str, Any]:
    from bench.plain_stateful import replay_plain, run_plain

    campaign, database = run_plain(
        factory,
        examples=examples,
        seed=seed,
        max_seconds=max_seconds,
        shrink=shrink,
        max_shrink_seconds=PLAIN_SHRINK_SECONDS,
    )
    out: dict[str, Any] = {
        "seed": seed,
        "examples": campaign.examples,
        "seconds": campaign.seconds,
        "found": campaign.found_at is not None,
        "found_at": campaign.found_at,
        "first_seconds": campaign.found_after,
        "shrink_seconds": (
            campaign.seconds - campaign.found_after if campaign.found_after is not None else None
        ),
        "shrunk": shrink,
        "properties": campaign.properties,
        "final": campaign.final,
        "flaky": campaign.flaky,
        "out_of_time": campaign.out_of_time,
        "shrink_cut": campaign.shrink_cut,
        "leaked_threads": campaign.leaked_threads,
    }
    if campaign.final is not None or campaign.flaky:
        out["replayed"] = replay_plain(factory, database, seed=seed)
    return out


def first_failures(
    *,
    names: Sequence[str] | None,
    seeds: int,
    examples: int,
    plain_seeds: int,
    plain_examples: int,
    plain_max_seconds: float,
    plain_shrink: bool,
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    rows = []
    for target in CORPUS:
        if names is not None and target.name not in names:
            continue
        factory = load(target.spec)
        if factory is None:
            print(f"   (skipped {target.name}: {target.spec} is not in this checkout)")
            continue
        runs = [
            kubesim_first_failure(target, factory, seed=s, examples=examples) for s in range(seeds)
        ]
        plain = [
            plain_first_failure(
                factory,
                seed=s,
                examples=plain_examples,
                max_seconds=plain_max_seconds,
                shrink=plain_shrink,
            )
            for s in range(plain_seeds)
        ]
        results[target.name] = {
            "spec": target.spec,
            "expected": target.expected,
            "kubesim": runs,
            "plain": plain,
        }
        rows.append(_first_failure_row(target, runs, plain, examples, plain_examples, plain_shrink))
        row = rows[-1]
        print(
            f"   {target.name}: kubesim found {row[1]}, median example {_cell(row[2])}; "
            f"plain found {row[8]}, median example {_cell(row[9])}",
            flush=True,
        )
    headers = (
        "model (expected)",
        "ks found",
        "ks ex. to 1st",
        "ks s to 1st",
        "ks shrink s",
        "ks steps",
        "ks property",
        "ks replays",
        "plain found",
        "plain ex. to 1st",
        "plain s to 1st",
        "plain shrink s",
        "plain property",
        "plain flaky",
        "plain replays",
    )
    print(
        table(
            f"4. Time to first failure, medians over seeds (kubesim: {seeds} seeds, budget "
            f"{examples}; plain stateful: {plain_seeds} seeds, budget {plain_examples} examples "
            f"or {plain_max_seconds:g} s{'' if plain_shrink else ', no shrinking'}); wall seconds",
            headers,
            rows,
        )
        + "\n",
        flush=True,
    )
    return results


def _first_failure_row(
    target: Target,
    runs: list[dict[str, Any]],
    plain: list[dict[str, Any]],
    examples: int,
    plain_examples: int,
    plain_shrink: bool,
) -> list[Any]:
    found = [r for r in runs if r["found"]]
    plain_found = [r for r in plain if r["found"]]

    def props(items: list[dict[str, Any]]) -> str:
        names = sorted({p for r in items for p in r["properties"]})
        return ",".join(names) if names else "-"

    def median_of(items: list[dict[str, Any]], key: str, budget: Any) -> Any:
        # A seed that found nothing counts as "more than the budget" for the median.
        values = sorted(r[key] if r["found"] else float("inf") for r in items)
        if not values:
            return None
        middle = values[(len(values) - 1) // 2]
        return f">{budget}" if middle == float("inf") else middle

    longest = max((r["seconds"] for r in plain), default=0.0)
    return [
        f"{target.name} ({target.expected})",
        f"{len(found)}/{len(runs)}",
        median_of(runs, "found_at", examples),
        median_of(runs, "first_seconds", f"{max((r['seconds'] for r in runs), default=0):.0f}"),
        _median([r["shrink_seconds"] for r in found]),
        _median([r["steps"] for r in found]),
        props(found),
        f"{sum(bool(r.get('replayed')) for r in found)}/{len(found)}",
        f"{len(plain_found)}/{len(plain)}",
        median_of(plain, "found_at", plain_examples),
        median_of(plain, "first_seconds", f"{longest:.0f}"),
        _median([r["shrink_seconds"] for r in plain_found]) if plain_shrink else "off",
        props(plain_found),
        f"{sum(r['flaky'] for r in plain)}/{len(plain)}",
        f"{sum(bool(r.get('replayed')) for r in plain)}/{len(plain_found)}" if plain_found else "-",
    ]


# -- main ---------------------------------------------------------------------------------------
SECTIONS = ("campaign", "breakdown", "oracles", "first-failure")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python bench/property.py",
        description="Measure kubesim check: campaign rate, cost breakdown, oracle cost, and time "
        "to first failure against a plain Hypothesis stateful test.",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run (about 20 s)")
    parser.add_argument(
        "--only", choices=SECTIONS, action="append", help="one section (repeatable)"
    )
    parser.add_argument("--models", help="comma-separated corpus names for section 4 (default all)")
    parser.add_argument("--seeds", type=int, help="kubesim seeds per model (default 5)")
    parser.add_argument(
        "--plain-seeds", type=int, help="plain stateful seeds per model (default 3)"
    )
    parser.add_argument(
        "--repetitions", type=int, help="campaigns per row in section 1 (default 3)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"results JSON (default {DEFAULT_OUTPUT})",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.seeds = args.seeds if args.seeds is not None else (1 if quick else 5)
    args.plain_seeds = args.plain_seeds if args.plain_seeds is not None else (1 if quick else 3)
    args.repetitions = args.repetitions if args.repetitions is not None else (1 if quick else 3)
    for name in ("seeds", "plain_seeds", "repetitions"):
        if getattr(args, name) < 1 and not (name == "plain_seeds" and getattr(args, name) == 0):
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    known = [t.name for t in CORPUS]
    if args.models is not None:
        args.models = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in args.models if m not in known]
        if unknown:
            parser.error(f"--models: unknown {unknown}; expected names from {known}")
    elif quick:
        args.models = list(QUICK_CORPUS)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quick = args.quick
    wanted = set(args.only or SECTIONS)
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
        "python": platform.python_version(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    print(
        f"kubesim property bench{' (quick)' if quick else ''}: python {meta['python']}, "
        f"{os.cpu_count()} cpus, load {meta['machine']['load_average']}\n",
        flush=True,
    )
    results: dict[str, Any] = {"meta": meta}
    if "campaign" in wanted:
        results["campaign"] = campaign_rate(
            examples_small=10 if quick else 100,
            examples_large=1 if quick else 5,
            repetitions=args.repetitions,
        )
    if "breakdown" in wanted:
        results["breakdown"] = breakdown(
            scenarios_small=3 if quick else 30, scenarios_large=1 if quick else 3, seed=0
        )
    if "oracles" in wanted:
        results["oracles"] = oracle_costs(
            recordings=3 if quick else 30,
            recordings_large=1 if quick else 3,
            seed=1,
            repeat=3 if quick else 20,
        )
    if "first-failure" in wanted:
        results["first_failure"] = first_failures(
            names=args.models,
            seeds=args.seeds,
            examples=50 if quick else 200,
            plain_seeds=args.plain_seeds,
            plain_examples=10 if quick else 50,
            plain_max_seconds=4.0 if quick else 30.0,
            plain_shrink=not quick,
        )
    meta["duration_seconds"] = round(time.perf_counter() - started, 2)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"{meta['duration_seconds']:.1f} s in all; results in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
