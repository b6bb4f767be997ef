"""How much do *correct* stores drift per watch restart? ``python bench/memory_tolerance.py``.

The memory oracle's default byte tolerance (``kubesim/checks/memory.py``) must sit above what
correct stores do and far below what a leak does. This runs correct stores over watch restarts
(clean expiries and abrupt drops, idle and under pod churn) and prints, per store, what it
retains after the warm-up round and how much that moves: the fitted growth per restart (what
the verdict compares with the tolerance), the largest step between two rounds, and the range.
Then it runs the leaks of ``bench/memory_stores.py`` for contrast, and times one measurement
of a 1,000-pod store.

The table in ``docs/explanation/memory-oracle.md`` is this script's output.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import memory_stores  # noqa: E402
from kubesim import run_watch_restarts  # noqa: E402
from kubesim.checks.memory import default_tolerance, growth_per_round  # noqa: E402
from kubesim.checks.retained import measure_retained  # noqa: E402
from kubesim.sim.simulation import Simulation  # noqa: E402
from kubesim.workload.pods import populate_pods  # noqa: E402
from models import kubearmor  # noqa: E402

Case = tuple[str, Callable[[Any], Any], dict[str, Any]]

CORRECT: list[Case] = [
    ("kubearmor after_pr1553, 100 pods", kubearmor.after_pr1553, {"pods": 100}),
    (
        "kubearmor after_pr1553, 100 pods, drop",
        kubearmor.after_pr1553,
        {"pods": 100, "fault": "drop"},
    ),
    ("informer (dict store), 100 pods", memory_stores.informer, {"pods": 100}),
    ("informer, 100 pods, drop", memory_stores.informer, {"pods": 100, "fault": "drop"}),
    ("raw watch (dict store), 100 pods", memory_stores.raw_watch, {"pods": 100}),
    (
        "one watch per namespace, 20 ns, idle",
        memory_stores.per_namespace,
        {"pods": 20, "namespaces": 20},
    ),
    ("informer, 3 pods, churn 3", memory_stores.informer, {"pods": 3, "churn": 3}),
    ("raw watch, 5 pods, churn 5", memory_stores.raw_watch, {"pods": 5, "churn": 5}),
    ("informer, 100 pods, churn 20", memory_stores.informer, {"pods": 100, "churn": 20}),
]
LEAKS: list[Case] = [
    ("kubearmor before_pr1553, 100 pods", kubearmor.before_pr1553, {"pods": 100}),
    ("keeps raw chunks, 1 pod", memory_stores.keeps_chunks, {"pods": 1, "containers": 1}),
    ("index leak, 50 pods", memory_stores.index_leak, {"pods": 50, "containers": 1}),
]


def row(name: str, factory: Callable[[Any], Any], options: dict[str, Any], restarts: int) -> str:
    report = run_watch_restarts(factory, seed=0, restarts=restarts, **options)
    measured = [r.retained_bytes for r in report.rounds[1:]]
    steps = [abs(b - a) for a, b in itertools.pairwise(measured)]
    later = report.samples[1:][len(measured) // 2 :]
    return (
        f"| {name} | {report.verdict} | {measured[0]:,} | {report.growth_per_round:+,.1f} | "
        f"{growth_per_round(later):+,.1f} | {max(steps):,} | {max(measured) - min(measured):,} | "
        f"{default_tolerance(measured[0]):,.0f} |"
    )


def time_sample(pods: int, repeats: int) -> tuple[int, float, float]:
    sim = Simulation(seed=0)
    populate_pods(sim.server, sim.choices.fork("workload"), pods=pods, containers=2, namespaces=2)
    store = kubearmor.after_pr1553(sim.kubernetes_client())
    sim.start(store.run)
    try:
        walks, collects = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            gc.collect()
            collects.append(time.perf_counter() - start)
            start = time.perf_counter()
            measured = measure_retained({"store": store})
            walks.append(time.perf_counter() - start)
    finally:
        sim.stop()
    return measured.objects, statistics.median(walks), statistics.median(collects)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--restarts", type=int, default=20)
    args = parser.parse_args()
    header = (
        "| store | verdict | retained after round 1 (B) | fitted growth per restart (B) | "
        "same, later half (B) | largest step (B) | range (B) | default tolerance (B) |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|"
    )
    print(f"Correct stores, {args.restarts} restarts (expire unless noted), seed 0\n")
    print(header)
    for name, factory, options in CORRECT:
        print(row(name, factory, options, args.restarts), flush=True)
    print(f"\nLeaks, {args.restarts} restarts, seed 0\n")
    print(header)
    for name, factory, options in LEAKS:
        print(row(name, factory, options, args.restarts), flush=True)
    objects, walk, collect = time_sample(1000, 7)
    print(
        f"\nOne measurement of kubearmor after_pr1553 with 1,000 pods x 2 containers: "
        f"{objects:,} objects walked in {walk * 1000:.0f} ms (median of 7), plus "
        f"{collect * 1000:.0f} ms for the gc.collect() before it"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
