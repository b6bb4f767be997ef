"""Cost of one scheduling point, settrace beside sys.monitoring: ``python bench/points.py``.

Run it with each Python (3.10/3.11 have only settrace). Every number is measured in this run,
the backends interleaved repetition by repetition so that a busy machine skews them alike:

- **points**: scheduling points in one run of the workload (two threads, each running
  ``--loops`` iterations of a loop whose body is a one-line read-modify-write), no preemption;
- **µs/point**: (run time with points - run time of the same scheduler with nothing traced)
  / points, the median over ``--repetitions``: what the interpreter's event and
  ``Scheduler.point`` cost together;
- **fixed ms/run**: a run of a scenario with no traced code executed, with the backend on,
  minus the same run with nothing traced: what starting and stopping the backend costs
  (``sys.monitoring`` takes a tool id, and re-arms disabled events at the end).

A backend that cannot give opcode points on this Python says so in the ``granularity`` column
(settrace on 3.12 gives lines). Not a timed test: nothing asserts these numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kubesim.sched import Preemptions, Scheduler, tracing

THIS_FILE = os.path.abspath(__file__)


# -- the traced workload (this file is the traced one) -------------------------------------
def _spin(box: dict[str, int], loops: int) -> None:
    for _ in range(loops):
        box["n"] += 1


def _workload(loops: int) -> Callable[[], None]:
    def scenario() -> None:
        box = {"n": 0}
        threads = [threading.Thread(target=_spin, args=(box, loops)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return scenario


def _nothing() -> None:
    pass


# -- the harness -----------------------------------------------------------------------------
def _run(
    scenario: Callable[[], None], *, backend: str | None, granularity: str
) -> tuple[float, int]:
    scheduler = Scheduler(
        strategy=Preemptions([]),
        traced=[THIS_FILE] if backend else [],
        granularity=granularity,
        max_steps=10**9,
    )
    if backend:
        scheduler.points = tracing.points_for(
            scheduler.traced,
            opcodes=granularity == "opcode",
            point=scheduler.point,
            backend=backend,
        )
    start = time.perf_counter()
    result = scheduler.run(scenario)
    elapsed = time.perf_counter() - start
    assert result.ok, result.failure
    return elapsed, result.steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=20_000)
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--fixed-runs", type=int, default=50)
    args = parser.parse_args(argv)
    if min(args.loops, args.repetitions, args.fixed_runs) < 1:
        parser.error("--loops, --repetitions and --fixed-runs must be >= 1")

    backends = ["settrace", "monitoring"] if tracing.monitoring_available() else ["settrace"]
    configs = [(b, g) for b in backends for g in ("opcode", "line")]
    work = _workload(args.loops)
    per_point: dict[tuple[str, str], list[float]] = {c: [] for c in configs}
    fixed: dict[str, list[float]] = {b: [] for b in backends}
    steps: dict[tuple[str, str], int] = {}
    granularity: dict[tuple[str, str], str] = {}
    for _ in range(args.repetitions):
        base, base_steps = _run(work, backend=None, granularity="opcode")
        for config in configs:
            backend, wanted = config
            elapsed, n = _run(work, backend=backend, granularity=wanted)
            per_point[config].append((elapsed - base) / max(1, n - base_steps) * 1e6)
            steps[config] = n
            probe = tracing.points_for(
                (THIS_FILE,), opcodes=wanted == "opcode", point=_nothing, backend=backend
            )
            granularity[config] = "opcode" if probe.opcodes else "line"
    for _ in range(args.fixed_runs):
        empty, _ = _run(_nothing, backend=None, granularity="opcode")
        for backend in backends:
            elapsed, _ = _run(_nothing, backend=backend, granularity="opcode")
            fixed[backend].append((elapsed - empty) * 1e3)

    print(
        f"Python {sys.version.split()[0]}, {args.loops} loops x 2 threads, "
        f"median of {args.repetitions} "
        f"(fixed cost: median of {args.fixed_runs} empty runs)"
    )
    header = f"{'backend':<11} {'asked':<7} {'granularity':<11} {'points':>8} {'µs/point':>9}"
    print(header + f" {'fixed ms/run':>13}")
    print("-" * (len(header) + 14))
    for config in configs:
        backend, wanted = config
        print(
            f"{backend:<11} {wanted:<7} {granularity[config]:<11} {steps[config]:>8} "
            f"{statistics.median(per_point[config]):>9.3f} "
            f"{statistics.median(fixed[backend]):>13.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
