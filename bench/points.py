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
(settrace on 3.12 gives lines).

A second table measures a **hand-off**: the scheduler giving the baton from one controlled
thread to another (a blocked thread parks on its lock, the chosen one is released), alone:

- **platform**: two plain threads passing two ``threading.Lock`` back and forth, no scheduler:
  the least a round trip between two OS threads costs here;
- **scheduler**: two controlled threads passing items through two ``queue.Queue`` (each
  ``get`` blocks and hands the baton over), nothing traced;
- each with the threads free to run on any CPU, and pinned to one
  (:mod:`kubesim.sched.affinity`, what every controlled run does): µs of wall and of CPU time
  per hand-off, medians over ``--repetitions``.

Not a timed test: nothing asserts these numbers.
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kubesim.sched import Preemptions, Scheduler, tracing
from kubesim.sched.affinity import CpuPin

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


# -- hand-offs ---------------------------------------------------------------------------------
def _platform_round_trips(trips: int, *, pinned: bool) -> tuple[float, float]:
    """Wall and CPU seconds for ``trips`` round trips between two plain threads."""
    pin = CpuPin()
    if pinned:
        pin.pin()
    try:
        ping, pong = threading.Lock(), threading.Lock()
        ping.acquire()
        pong.acquire()

        def other() -> None:
            for _ in range(trips):
                ping.acquire()
                pong.release()

        thread = threading.Thread(target=other)
        thread.start()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(trips):
            ping.release()
            pong.acquire()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        thread.join()
    finally:
        pin.release()
    return wall, cpu


def _scheduled_round_trips(trips: int, *, pinned: bool) -> tuple[float, float, int]:
    """Wall and CPU seconds for ``trips`` round trips between two controlled threads, and the
    hand-offs the scheduler counted."""

    def scenario() -> None:
        there: queue.Queue[int] = queue.Queue()
        back: queue.Queue[int] = queue.Queue()

        def echo() -> None:
            for _ in range(trips):
                back.put(there.get())

        thread = threading.Thread(target=echo)
        thread.start()
        for trip in range(trips):
            there.put(trip)
            back.get()
        thread.join()

    scheduler = Scheduler(strategy=Preemptions([]), max_steps=10**9, one_cpu=pinned)
    wall, cpu = time.perf_counter(), time.process_time()
    result = scheduler.run(scenario)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.ok, result.failure
    return wall, cpu, scheduler.switches


def _hand_offs(trips: int, repetitions: int) -> None:
    rows: dict[tuple[str, bool], tuple[list[float], list[float]]] = {
        (what, pinned): ([], []) for what in ("platform", "scheduler") for pinned in (False, True)
    }
    for _ in range(repetitions):
        for pinned in (False, True):  # interleaved: a busy neighbour skews both alike
            wall, cpu = _platform_round_trips(trips, pinned=pinned)
            rows["platform", pinned][0].append(wall / (2 * trips) * 1e6)
            rows["platform", pinned][1].append(cpu / (2 * trips) * 1e6)
            wall, cpu, switches = _scheduled_round_trips(trips, pinned=pinned)
            rows["scheduler", pinned][0].append(wall / max(1, switches) * 1e6)
            rows["scheduler", pinned][1].append(cpu / max(1, switches) * 1e6)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"\nHand-offs: {trips} round trips, median of {repetitions}, {cpus} CPUs usable")
    header = f"{'between':<10} {'CPUs':<9} {'µs wall/hand-off':>17} {'µs CPU/hand-off':>16}"
    print(header)
    print("-" * len(header))
    for (what, pinned), (walls, cpus_used) in rows.items():
        print(
            f"{what:<10} {'one' if pinned else 'any':<9} {statistics.median(walls):>17.2f} "
            f"{statistics.median(cpus_used):>16.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=20_000)
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--fixed-runs", type=int, default=50)
    parser.add_argument("--trips", type=int, default=5_000, help="hand-off round trips")
    args = parser.parse_args(argv)
    if min(args.loops, args.repetitions, args.fixed_runs, args.trips) < 1:
        parser.error("--loops, --repetitions, --fixed-runs and --trips must be >= 1")

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
    _hand_offs(args.trips, args.repetitions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
