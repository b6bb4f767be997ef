"""Scenario: a store across repeated watch restarts, with its memory sampled per restart.

This is the shape of the KubeArmor leak (``shared/seeds/000_*``): the server ends every watch
(F1, a clean close as at a server-side timeout, or an abrupt drop), the store re-watches, and a
store that re-watches without a resourceVersion gets a synthetic ADDED for every existing object
(F2). A bounded store retains the same bytes after every restart; a leaking one grows.

The store is given by a *factory*: ``factory(api_client) -> store`` where ``store.run()`` is its
main loop and ``store.sizes()`` (optional) reports the sizes of its structures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.checks.memory import (
    MemorySample,
    MemorySampler,
    MemoryViolation,
    check_memory_bounded,
    growth_per_round,
)
from kubesim.sim.simulation import Simulation
from kubesim.workload.pods import populate_pods

StoreFactory = Callable[[Any], Any]
FAULTS = ("expire", "drop")


@dataclass(frozen=True)
class RestartRound:
    """What the store held after one restart (round 0: after the first watch)."""

    round: int
    retained_bytes: int
    sizes: Mapping[str, int]
    requests: int


@dataclass(frozen=True)
class RestartReport:
    name: str
    seed: int | str
    pods: int
    containers: int
    restarts: int
    fault: str
    rounds: list[RestartRound]
    samples: list[MemorySample] = field(repr=False)
    violation: MemoryViolation | None
    trace_hash: str

    @property
    def grows(self) -> bool:
        return self.violation is not None

    @property
    def growth_per_round(self) -> float:
        return growth_per_round(self.samples[1:])

    def figures(self) -> list[tuple[int, int, tuple[tuple[str, int], ...]]]:
        """Per round: bytes retained beyond round 0, and the store's sizes. Exactly repeatable."""
        base = self.rounds[0].retained_bytes
        return [
            (r.round, r.retained_bytes - base, tuple(sorted(r.sizes.items()))) for r in self.rounds
        ]


def _warm_client_imports() -> None:
    """Import the official client's lazily loaded API and model modules before tracing starts.

    Otherwise the first store measured in a process pays megabytes of one-time imports at
    round 0 and the stores' baselines are not comparable.
    """
    try:
        import kubernetes.client as k8s
    except ImportError:
        return
    for name in ("CoreV1Api", "AppsV1Api", "V1Pod", "V1PodList", "V1Namespace"):
        getattr(k8s, name, None)


def _sizes(store: Any) -> dict[str, int]:
    sizes = getattr(store, "sizes", None)
    return dict(sizes()) if callable(sizes) else {}


def run_watch_restarts(
    factory: StoreFactory,
    *,
    name: str = "store",
    seed: int | str = 0,
    pods: int = 100,
    containers: int = 2,
    namespaces: int = 2,
    restarts: int = 20,
    fault: str = "expire",
    tolerance_per_round: float | None = None,
    on_round: Callable[[RestartRound], None] | None = None,
    warmup: bool = True,
) -> RestartReport:
    """Run ``factory``'s store over ``restarts`` watch restarts; sample memory after each."""
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}, got fault={fault!r}")
    if restarts < 2:
        raise ValueError(f"restarts must be >= 2 to measure growth, got restarts={restarts}")
    if pods < 1:
        raise ValueError(f"pods must be >= 1, got pods={pods}")
    _warm_client_imports()
    if warmup:
        # One small untraced run of the same scenario first: lazily created caches and the
        # interpreter's free lists (dicts, lists) then start every measured run in the same
        # state, which is what makes the figures repeat exactly within one process.
        _scenario(factory, name, seed, min(pods, 3), containers, namespaces, 2, fault, None, None)
    return _scenario(
        factory,
        name,
        seed,
        pods,
        containers,
        namespaces,
        restarts,
        fault,
        tolerance_per_round,
        on_round,
    )


def _scenario(
    factory: StoreFactory,
    name: str,
    seed: int | str,
    pods: int,
    containers: int,
    namespaces: int,
    restarts: int,
    fault: str,
    tolerance_per_round: float | None,
    on_round: Callable[[RestartRound], None] | None,
) -> RestartReport:
    sim = Simulation(seed=seed)
    populate_pods(
        sim.server,
        sim.choices.fork("workload"),
        pods=pods,
        containers=containers,
        namespaces=namespaces,
    )
    rounds: list[RestartRound] = []
    with MemorySampler() as sampler:
        store = factory(sim.kubernetes_client())
        try:
            sim.start(store.run, name=name)
            for round_ in range(restarts + 1):
                if round_:
                    if fault == "expire":
                        sim.server.expire_watches()
                    else:
                        sim.server.drop_watches()
                    sim.settle()
                sample = sampler.sample(round_)
                done = RestartRound(
                    round_, sample.retained_bytes, _sizes(store), sim.server.request_count
                )
                rounds.append(done)
                if on_round is not None:
                    on_round(done)
        finally:
            sim.stop()
        samples = list(sampler.samples)
    violation = check_memory_bounded(samples, tolerance_per_round=tolerance_per_round)
    return RestartReport(
        name,
        seed,
        pods,
        containers,
        restarts,
        fault,
        rounds,
        samples,
        violation,
        sim.trace.hexdigest(),
    )
