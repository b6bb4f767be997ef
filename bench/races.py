"""Race-finding benchmark, kubesim's scheduler beside frontrun: ``python bench/races.py [--quick]``.

Both tools search the same corpus (``bench/race_corpus.py``: four racy store shapes, each with
correct twins) in one command. Every number below is measured in this run:

- **schedules to first failure**: how many schedules the tool ran up to and including the first
  failing one; the median over ``--seeds`` seeds. frontrun's DPOR (its default mode) takes no seed
  and is deterministic, so it is repeated ``--dpor-reps`` times for the wall-time median.
- **time to first failure**: wall time of the exploration call, from the call to its return. Both
  tools replay a failure by default (kubesim once, to compare trace hashes; frontrun 10 times);
  both replays are off here, so the figure is the search alone. kubesim's replay is checked
  separately, untimed: the same seed must fail at the same schedule with the same trace hash.
- **false passes**: seeds on which a racy case was not found within ``--budget`` schedules (or
  on which the tool claimed the property holds).
- **false alarms**: failures on a correct twin within ``--twin-budget`` schedules. Must be 0;
  a kubesim false alarm makes the exit status 1.
- **cost per schedule**: the exploration's wall time divided by the schedules it ran, so it
  includes each exploration's fixed start-up cost.
- **overhead**: cost per schedule divided by the time of one run of the same scenario on plain
  threads with no tracing (setup, start and join the threads, check the invariant).

Modes. kubesim: its portfolio (``explore`` with ``strategy=None``: a strategy drawn per
schedule), ``RandomWalk(0.05)`` and ``PCT(2, k)`` with ``k`` the steps of one schedule without
preemptions. frontrun: ``frontrun.explore`` with its default ``strategy="dpor"`` (budget via
``max_executions``) and with ``strategy="random"`` (``max_attempts``, ``seed``), other options
at their defaults. frontrun's explore entry points insist on its CLI or on patched locks; the
frontrun child process calls ``frontrun._cooperative.patch_locks()``, which is what its pytest
flag ``--frontrun-patch-locks`` does. frontrun's schedule count is the number of ``setup()``
calls, which also covers its DPOR mode re-raising a worker's exception instead of returning a
result.

Each tool runs in a child process of its own, one after the other (never at the same time, so
the two cores do not skew each other's timings); frontrun's rows are skipped with a message when
it is not installed. Results go to ``bench/results/races.json``; bench/README.md ("Race finding")
says how to read them.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout: import kubesim and bench
    sys.path.insert(0, str(ROOT))

from bench import race_corpus  # noqa: E402
from bench.race_corpus import CASES, Case  # noqa: E402

DEFAULT_OUTPUT = ROOT / "bench" / "results" / "races.json"
KUBESIM_MODES = ("portfolio", "random(0.05)", "pct(2)")
FRONTRUN_MODES = ("dpor", "random")
MODES: tuple[tuple[str, str], ...] = (
    *(("kubesim", m) for m in KUBESIM_MODES),
    *(("frontrun", m) for m in FRONTRUN_MODES),
)
RACY_HEADERS = (
    "case",
    "tool",
    "mode",
    "found",
    "schedules",
    "range",
    "to 1st failure",
    "false passes",
    "ms/sched",
    "cpu ms/sched",
    "failure / found by",
)
TWIN_HEADERS = ("correct twin", "untraced cpu", *(f"{tool} {mode}" for tool, mode in MODES))
COST_HEADERS = (
    "tool",
    "mode",
    "schedules run",
    "ms/sched",
    "cpu ms/sched",
    "x untraced",
    "cpu x untraced",
    "cpu x range",
)


@dataclass
class Config:
    """What to run: budgets, seeds, repetitions and the cases."""

    budget: int
    twin_budget: int
    seeds: int
    dpor_reps: int
    plain_runs: int
    quick: bool
    cases: list[str]


@dataclass
class Search:
    """One exploration: did it fail, after how many schedules, in how much wall time."""

    seed: int | None
    found: bool
    schedules: int
    wall: float
    cpu: float
    failure: str = ""
    found_by: str = ""
    claimed_pass: bool = False
    replayed: bool | None = None
    note: str = ""


@dataclass
class Cell:
    """Every exploration of one case in one mode of one tool."""

    tool: str
    mode: str
    case: str
    racy: bool
    budget: int
    searches: list[Search] = field(default_factory=list)
    error: str = ""

    @property
    def schedules(self) -> int:
        return sum(s.schedules for s in self.searches)

    @property
    def wall(self) -> float:
        return sum(s.wall for s in self.searches)

    @property
    def cpu(self) -> float:
        return sum(s.cpu for s in self.searches)


def _short(text: str, limit: int = 60) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- untraced baseline ---------------------------------------------------------------------------


def _plain_once(case: Case) -> bool:
    """One run on plain threads, untraced; True when it hit the bug (a crash or the invariant)."""
    state = case.setup()
    errors: list[BaseException] = []

    def guarded(worker: Callable[[Any], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                worker(state)
            except Exception as exc:  # the racy cases may crash; count it, keep stderr quiet
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(w), name=w.__name__) for w in case.workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return bool(errors) or not case.invariant(state)


def measure_plain(case: Case, runs: int, batches: int = 5) -> dict[str, Any]:
    """Wall and CPU time per untraced run (medians over batches), and how many runs hit the
    bug anyway (plain threads almost never do: that is why the tools exist)."""
    per_batch = max(1, runs // batches)
    walls: list[float] = []
    cpus: list[float] = []
    hits = 0
    for _ in range(batches):
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(per_batch):
            hits += _plain_once(case)
        walls.append((time.perf_counter() - started) / per_batch)
        cpus.append((time.process_time() - cpu_started) / per_batch)
    return {
        "seconds_per_run": statistics.median(walls),
        "cpu_seconds_per_run": statistics.median(cpus),
        "runs": per_batch * batches,
        "hits": hits,
    }


# -- kubesim -------------------------------------------------------------------------------------


def kubesim_scenario(case: Case) -> Callable[[], None]:
    """The case as a kubesim scenario: thread 0 starts the workers, joins, asserts."""

    def scenario() -> None:
        state = case.setup()
        threads = [
            threading.Thread(target=lambda w=w: w(state), name=w.__name__) for w in case.workers
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert case.invariant(state), f"{case.name}: {case.invariant.__name__} is false"

    scenario.__qualname__ = scenario.__name__ = f"scenario_{case.name.replace('/', '_')}"
    return scenario


def _kubesim_failure(error: BaseException) -> str:
    original = getattr(error, "original", None)
    if isinstance(original, AssertionError):
        return "invariant (AssertionError)"
    if original is not None:
        return f"{type(original).__name__}: {original}"
    return f"{type(error).__name__}: {error}"


def run_kubesim(config: Config, cases: Sequence[Case]) -> list[Cell]:
    """Search every case in the three kubesim modes."""
    from kubesim.sched import PCT, RandomWalk
    from kubesim.sched.errors import NondeterminismDetected
    from kubesim.sched.explore import Exploration, explore, run_schedule
    from kubesim.sched.strategies import Strategy

    traced = [race_corpus]
    cells: list[Cell] = []
    for case in cases:
        scenario = kubesim_scenario(case)
        # PCT needs k, the steps of one run; one run without preemptions gives it.
        k = run_schedule(scenario, seed=0, strategy=RandomWalk(0.0), traced=traced).steps
        factories: dict[str, Callable[[], Strategy] | None] = {
            "portfolio": None,
            "random(0.05)": lambda: RandomWalk(0.05),
            "pct(2)": lambda k=k: PCT(2, k),  # type: ignore[misc]
        }
        for mode, factory in factories.items():
            cell = Cell(
                "kubesim",
                mode,
                case.name,
                case.racy,
                config.budget if case.racy else config.twin_budget,
            )
            seeds: Iterable[int] = range(1, config.seeds + 1) if case.racy else (1,)
            for seed in seeds:
                started, cpu_started = time.perf_counter(), time.process_time()
                exploration: Exploration = explore(
                    scenario,
                    schedules=cell.budget,
                    seed=seed,
                    strategy=factory,
                    traced=traced,
                    check_determinism=False,
                )
                wall = time.perf_counter() - started
                cpu = time.process_time() - cpu_started
                search = Search(seed, not exploration.ok, exploration.schedules, wall, cpu)
                found = exploration.found
                if found is not None:
                    search.failure = _kubesim_failure(found.failure)
                    search.found_by = found.strategy
                    # Untimed: the same seed fails at the same schedule, and replays identically.
                    try:
                        again = explore(
                            scenario,
                            schedules=exploration.schedules,
                            seed=seed,
                            strategy=factory,
                            traced=traced,
                            check_determinism=True,
                        )
                        search.replayed = (
                            again.found is not None
                            and again.found.schedule == found.schedule
                            and again.found.result.trace_hash == found.result.trace_hash
                        )
                    except NondeterminismDetected as exc:
                        search.replayed = False
                        search.note = _short(str(exc), 200)
                cell.searches.append(search)
            cells.append(cell)
            _progress(_progress_line(cell, f"k={k}"))
    return cells


# -- frontrun ------------------------------------------------------------------------------------


def frontrun_version() -> str | None:
    """frontrun's version, or None when it is not installed."""
    if importlib.util.find_spec("frontrun") is None:
        return None
    from importlib.metadata import version

    return version("frontrun")


def _frontrun_search(case: Case, mode: str, seed: int | None, budget: int) -> Search:
    import frontrun  # type: ignore[import-untyped]

    calls = 0

    def setup() -> Any:
        nonlocal calls
        calls += 1
        return case.setup()

    options: dict[str, Any] = {"reproduce_on_failure": 0}
    if mode == "dpor":
        options.update(strategy="dpor", max_executions=budget)
    else:
        options.update(strategy="random", max_attempts=budget, seed=seed)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        result = frontrun.explore(
            setup=setup, workers=list(case.workers), invariant=case.invariant, **options
        )
    except Exception as exc:  # DPOR re-raises a worker's exception rather than returning it
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        return Search(
            seed,
            True,
            calls,
            wall,
            cpu,
            f"{type(exc).__name__}: {exc}",
            note="raised out of frontrun.explore",
        )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    search = Search(seed, result.property_holds is False, calls, wall, cpu)
    explanation = result.explanation or ""
    if search.found:
        if explanation.startswith("Worker crash"):
            search.failure = explanation.split(": ", 1)[-1]
        elif "deadlock" in explanation.lower():
            search.failure = "deadlock: " + _short(explanation)
        else:
            search.failure = "invariant (" + _short(explanation, 50) + ")"
    elif result.property_holds is True and result.num_explored < budget:
        # The search ended on its own, inside the budget: DPOR's claim that every (bounded)
        # interleaving class was run and passed.
        search.claimed_pass = True
        search.note = f"search ended after {result.num_explored} executions, reported a pass"
    elif result.property_holds is True:
        search.note = f"budget of {budget} executions used up"
    else:
        search.note = _short(result.inconclusive_reason or "inconclusive", 200)
    if calls != result.num_explored:
        search.note += f" (setup calls {calls}, num_explored {result.num_explored})"
    return search


def run_frontrun(config: Config, cases: Sequence[Case]) -> list[Cell]:
    """Search every case with frontrun's DPOR (default) and random modes."""
    from frontrun._cooperative import patch_locks, unpatch_locks  # type: ignore[import-untyped]

    cells: list[Cell] = []
    patch_locks()
    try:
        for case in cases:
            for mode in FRONTRUN_MODES:
                cell = Cell(
                    "frontrun",
                    mode,
                    case.name,
                    case.racy,
                    config.budget if case.racy else config.twin_budget,
                )
                if mode == "dpor":
                    seeds: list[int | None] = [None] * (config.dpor_reps if case.racy else 1)
                else:
                    seeds = list(range(1, config.seeds + 1)) if case.racy else [1]
                for seed in seeds:
                    try:
                        cell.searches.append(_frontrun_search(case, mode, seed, cell.budget))
                    except Exception as exc:  # keep the other cells when one breaks
                        cell.error = f"{type(exc).__name__}: {exc}"
                        break
                cells.append(cell)
                _progress(_progress_line(cell))
    finally:
        unpatch_locks()
    return cells


def _progress_line(cell: Cell, extra: str = "") -> str:
    found = sum(s.found for s in cell.searches)
    return (
        f"  {cell.tool} {cell.mode:<12} {cell.case:<26} found {found}/{len(cell.searches)} "
        f"schedules {[s.schedules for s in cell.searches]} {cell.wall:.2f} s {extra}"
        + (f" ERROR {cell.error}" if cell.error else "")
    )


# -- child processes -----------------------------------------------------------------------------


def run_worker(tool: str, config: Config, output: Path) -> int:
    """Child process body: run one tool over the cases, write its cells as JSON."""
    cases = [race_corpus.by_name(name) for name in config.cases]
    cells = run_kubesim(config, cases) if tool == "kubesim" else run_frontrun(config, cases)
    output.write_text(json.dumps([asdict(c) for c in cells]), encoding="utf-8")
    return 0


def _cell_from_json(data: dict[str, Any]) -> Cell:
    searches = [Search(**s) for s in data.pop("searches")]
    return Cell(**data, searches=searches)


def spawn_tool(tool: str, config: Config, timeout: float) -> tuple[list[Cell], str]:
    """Run one tool in a child process; its cells, or an error message."""
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / f"{tool}.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            tool,
            "--worker-output",
            str(output),
            "--budget",
            str(config.budget),
            "--twin-budget",
            str(config.twin_budget),
            "--seeds",
            str(config.seeds),
            "--dpor-reps",
            str(config.dpor_reps),
        ]
        for name in config.cases:
            command += ["--case", name]
        env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
        try:
            completed = subprocess.run(
                command, env=env, timeout=timeout, check=False, stdout=subprocess.PIPE, text=True
            )
        except subprocess.TimeoutExpired:
            return [], f"{tool} did not finish within {timeout:.0f} s"
        if completed.returncode != 0 or not output.exists():
            return [], f"{tool} child exited with status {completed.returncode}"
        data = json.loads(output.read_text(encoding="utf-8"))
    return [_cell_from_json(c) for c in data], ""


# -- summaries and tables ------------------------------------------------------------------------


def _median(values: Sequence[float]) -> float:
    """Median, taking the upper middle for even counts; ``inf`` stands for "not found"."""
    return statistics.median_high(values) if values else math.nan


def summarize(cell: Cell, plain: dict[str, Any]) -> dict[str, Any]:
    """The figures of one cell, as they go into the tables and the JSON."""
    searches = cell.searches
    schedules = [float(s.schedules) if s.found else math.inf for s in searches]
    walls = [s.wall if s.found else math.inf for s in searches]
    per_schedule = cell.wall / cell.schedules if cell.schedules else math.nan
    cpu_per_schedule = cell.cpu / cell.schedules if cell.schedules else math.nan
    found_by: dict[str, int] = {}
    for s in searches:
        if s.found_by:
            found_by[s.found_by] = found_by.get(s.found_by, 0) + 1
    failures = sorted({_short(s.failure, 48) for s in searches if s.found})
    finite = [s.schedules for s in searches if s.found]
    return {
        "tool": cell.tool,
        "mode": cell.mode,
        "case": cell.case,
        "racy": cell.racy,
        "budget": cell.budget,
        "runs": len(searches),
        "found": sum(s.found for s in searches),
        "false_passes": sum(not s.found for s in searches) if cell.racy else None,
        "claimed_passes": sum(s.claimed_pass for s in searches),
        "false_alarms": None if cell.racy else sum(s.found for s in searches),
        "median_schedules": _median(schedules),
        "min_schedules": min(finite) if finite else None,
        "max_schedules": max(finite) if finite else None,
        "median_seconds_to_failure": _median(walls),
        "schedules_run": cell.schedules,
        "seconds": cell.wall,
        "cpu_seconds": cell.cpu,
        "ms_per_schedule": per_schedule * 1000,
        "cpu_ms_per_schedule": cpu_per_schedule * 1000,
        "overhead": per_schedule / plain["seconds_per_run"],
        "cpu_overhead": cpu_per_schedule / plain["cpu_seconds_per_run"],
        "found_by": found_by,
        "failures": failures,
        "replayed": [s.replayed for s in searches if s.replayed is not None],
        "notes": sorted({s.note for s in searches if s.note}),
        "error": cell.error,
    }


def _fmt_count(value: float, budget: int) -> str:
    if math.isnan(value):
        return "—"
    return f">{budget:,}" if math.isinf(value) else f"{value:,.0f}"


def _fmt_seconds(value: float) -> str:
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "not found"
    return f"{value * 1000:,.0f} ms" if value < 1 else f"{value:,.1f} s"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain fixed-width table: header, rule, rows."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def racy_rows(summaries: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Rows of table 1: one per racy case x tool x mode."""
    rows = []
    for s in summaries:
        if not s["racy"]:
            continue
        if s["error"]:
            rows.append(
                [
                    s["case"],
                    s["tool"],
                    s["mode"],
                    "error",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    _short(s["error"], 60),
                ]
            )
            continue
        lo, hi = s["min_schedules"], s["max_schedules"]
        span = "" if lo is None else (f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}")
        detail = "; ".join(s["failures"])
        if s["found_by"]:
            by = ", ".join(f"{name}×{n}" for name, n in sorted(s["found_by"].items()))
            detail += f" | by {by}"
        if s["notes"]:
            detail = (detail + " | " if detail else "") + "; ".join(s["notes"])
        rows.append(
            [
                s["case"],
                s["tool"],
                s["mode"],
                f"{s['found']}/{s['runs']}",
                _fmt_count(s["median_schedules"], s["budget"]),
                span,
                _fmt_seconds(s["median_seconds_to_failure"]),
                f"{s['false_passes']}/{s['runs']}",
                f"{s['ms_per_schedule']:.2f}",
                f"{s['cpu_ms_per_schedule']:.2f}",
                detail,
            ]
        )
    return rows


def twin_rows(
    summaries: Sequence[dict[str, Any]], plain: dict[str, dict[str, Any]], names: Sequence[str]
) -> list[list[str]]:
    """Rows of table 2: one per correct twin, one column per tool x mode."""
    by_key = {(s["case"], s["tool"], s["mode"]): s for s in summaries}
    rows = []
    for name in names:
        row = [name, f"{plain[name]['cpu_seconds_per_run'] * 1e6:,.0f} µs"]
        for tool, mode in MODES:
            s = by_key.get((name, tool, mode))
            if s is None:
                row.append("skipped")
            elif s["error"]:
                row.append("error")
            else:
                flag = " FALSE ALARM" if s["false_alarms"] else ""
                row.append(
                    f"{s['false_alarms']}/{s['schedules_run']:,} "
                    f"@{s['cpu_ms_per_schedule']:.1f}ms{flag}"
                )
        rows.append(row)
    return rows


def cost_rows(summaries: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Rows of table 3: cost per schedule and overhead per tool x mode, median over cases."""
    rows = []
    for tool, mode in MODES:
        mine = [
            s
            for s in summaries
            if s["tool"] == tool and s["mode"] == mode and not s["error"] and s["schedules_run"]
        ]
        if not mine:
            continue
        cpu_overheads = [s["cpu_overhead"] for s in mine]
        rows.append(
            [
                tool,
                mode,
                f"{sum(s['schedules_run'] for s in mine):,}",
                f"{statistics.median(s['ms_per_schedule'] for s in mine):.2f}",
                f"{statistics.median(s['cpu_ms_per_schedule'] for s in mine):.2f}",
                f"{statistics.median(s['overhead'] for s in mine):,.0f}x",
                f"{statistics.median(cpu_overheads):,.0f}x",
                f"{min(cpu_overheads):,.0f}x–{max(cpu_overheads):,.0f}x",
            ]
        )
    return rows


# -- main ----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, Config]:
    parser = argparse.ArgumentParser(
        prog="python bench/races.py",
        description="Race finding: kubesim's scheduler and frontrun side by side on one corpus.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: budget 200, 3 seeds, 50 schedules per twin (~20 s)",
    )
    parser.add_argument(
        "--budget", type=int, help="schedules per search of a racy case (default 2,000)"
    )
    parser.add_argument(
        "--twin-budget", type=int, help="schedules per mode on each correct twin (default 1,000)"
    )
    parser.add_argument("--seeds", type=int, help="seeds per racy case (default 5)")
    parser.add_argument(
        "--dpor-reps",
        type=int,
        help="runs of frontrun's deterministic DPOR per racy case (default 3)",
    )
    parser.add_argument(
        "--plain-runs", type=int, help="untraced runs per case for the baseline (default 1,000)"
    )
    parser.add_argument(
        "--case",
        action="append",
        dest="cases",
        metavar="NAME",
        choices=[c.name for c in CASES],
        help="run only this case (repeatable)",
    )
    parser.add_argument(
        "--tool",
        action="append",
        dest="tools",
        choices=("kubesim", "frontrun"),
        help="run only this tool (repeatable)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"where to write the JSON results (default {DEFAULT_OUTPUT})",
    )
    parser.add_argument("--worker", choices=("kubesim", "frontrun"), help=argparse.SUPPRESS)
    parser.add_argument("--worker-output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quick = args.quick
    config = Config(
        budget=args.budget or (200 if quick else 2_000),
        twin_budget=args.twin_budget or (50 if quick else 1_000),
        seeds=args.seeds or (3 if quick else 5),
        dpor_reps=args.dpor_reps or (1 if quick else 3),
        plain_runs=args.plain_runs or (100 if quick else 1_000),
        quick=quick,
        cases=args.cases or [c.name for c in CASES],
    )
    for name in ("budget", "twin_budget", "seeds", "dpor_reps", "plain_runs"):
        if getattr(config, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(config, name)}")
    return args, config


def main(argv: list[str] | None = None) -> int:
    args, config = parse_args(argv)
    if args.worker:
        return run_worker(args.worker, config, args.worker_output)
    started = time.perf_counter()
    import kubesim

    cases = [race_corpus.by_name(name) for name in config.cases]
    fr_version = frontrun_version()
    tools = args.tools or ["kubesim", "frontrun"]
    print(
        f"race bench: {len(cases)} cases, budget {config.budget:,} schedules x {config.seeds} "
        f"seeds per racy case, {config.twin_budget:,} per correct twin; python "
        f"{platform.python_version()}, kubesim {kubesim.__version__}, frontrun "
        f"{fr_version or 'not installed'}, {os.cpu_count()} cpus, load {_load():.1f}",
        flush=True,
    )
    load_at_start = _load()
    _progress("untraced baseline (plain threads)")
    plain = {case.name: measure_plain(case, config.plain_runs) for case in cases}
    cells: list[Cell] = []
    errors: list[str] = []
    skipped: list[str] = []
    timeout = 300.0 if config.quick else 1_800.0
    for tool in tools:
        if tool == "frontrun" and fr_version is None:
            skipped.append("frontrun is not installed (pip install frontrun): its rows are skipped")
            continue
        _progress(f"{tool} (child process)")
        got, error = spawn_tool(tool, config, timeout)
        cells += got
        if error:
            errors.append(error)
    summaries = [summarize(c, plain[c.case]) for c in cells]

    print(
        f"\n1. Racy cases: schedules to first failure, median over seeds (budget "
        f"{config.budget:,}; frontrun dpor is deterministic, repeated {config.dpor_reps}x)"
    )
    print(format_table(RACY_HEADERS, racy_rows(summaries)))
    twins = [c.name for c in cases if not c.racy]
    print(
        f"\n2. Correct twins: false alarms / schedules run (budget {config.twin_budget:,}; "
        "dpor stops early when its search space is exhausted) @ CPU cost per schedule"
    )
    print(format_table(TWIN_HEADERS, twin_rows(summaries, plain, twins)))
    print(
        "\n3. Cost per schedule (wall and CPU) and overhead against one untraced run on plain "
        "threads, median over all cases"
    )
    print(format_table(COST_HEADERS, cost_rows(summaries)))
    print(
        "\nuntraced plain threads: "
        + ", ".join(
            f"{n} {p['cpu_seconds_per_run'] * 1e6:,.0f} µs cpu, "
            f"{p['hits']}/{p['runs']} runs hit the bug"
            for n, p in plain.items()
            if race_corpus.by_name(n).racy
        )
    )
    load_at_end = _load()
    if max(load_at_start, load_at_end) > 0.5 * (os.cpu_count() or 1):
        skipped.append(
            f"load average {load_at_start:.1f} at the start, {load_at_end:.1f} at the end: other "
            "processes shared the cores, which inflates wall times (every baton hand-off waits "
            "for an OS wake-up); the CPU columns are the steadier figures"
        )
    for message in skipped + errors:
        print(f"note: {message}")
    alarms = [s for s in summaries if not s["racy"] and s["false_alarms"]]
    for s in alarms:
        print(f"FALSE ALARM: {s['tool']} {s['mode']} on {s['case']}: {s['failures']}")
    not_replayed = [s for s in summaries if s["tool"] == "kubesim" and not all(s["replayed"])]
    for s in not_replayed:
        print(f"NOT REPLAYED: kubesim {s['mode']} on {s['case']}: {s['notes']}")

    duration = time.perf_counter() - started
    result = {
        "meta": {
            "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
            "duration_seconds": round(duration, 2),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": {"start": load_at_start, "end": load_at_end},
            "versions": {
                "python": platform.python_version(),
                "kubesim": kubesim.__version__,
                "frontrun": fr_version,
            },
            "pythonhashseed": os.environ.get("PYTHONHASHSEED", "0"),
            "config": asdict(config),
            "skipped": skipped,
            "errors": errors,
        },
        "plain": plain,
        "cases": [
            {"name": c.name, "family": c.family, "racy": c.racy, "description": c.description}
            for c in cases
        ],
        "summaries": [{k: _json_number(v) for k, v in s.items()} for s in summaries],
        "cells": [asdict(c) for c in cells],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\n{duration:.1f} s in all; results in {args.output}")
    kubesim_alarms = [s for s in alarms if s["tool"] == "kubesim"]
    return 1 if kubesim_alarms or errors or not_replayed else 0


def _load() -> float:
    """The one-minute load average (0 where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def _json_number(value: Any) -> Any:
    """JSON has no inf or nan: "not found" medians become None."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    return value


if __name__ == "__main__":
    sys.exit(main())
