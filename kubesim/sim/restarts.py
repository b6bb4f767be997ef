"""Scenario: a store across repeated watch restarts, with what it retains measured per restart.

This is the shape of the KubeArmor leak: the server ends every watch (a clean close, as at a
server-side timeout, or an abrupt drop, as when a load balancer or an apiserver restart cuts
the connection), the store re-watches, and a store that re-watches without a resourceVersion
gets a synthetic ADDED for every existing object. A bounded store retains the same bytes after
every restart; a leaking one grows.

The store is given by a *factory* (contract in :mod:`kubesim.sim.store`). After every restart
the run records what the store retains (:func:`kubesim.checks.memory.sample_retained`, from the
store object and its module's globals) and what its ``sizes()`` say. The verdict, in order:

- ``CRASHED``: the store's ``run()`` raised (the report names the exception and the fault that
  preceded it);
- ``STOPPED WATCHING``: ``run()`` returned; a store that stops watching serves a stale cache;
- ``GROWS``: a ``sizes()`` entry grew while the live set did not, or the retained bytes grew
  by more than the tolerance per restart;
- ``BOUNDED`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.checks.memory import (
    MemorySample,
    MemoryViolation,
    check_memory_bounded,
    growth_per_round,
    sample_retained,
)
from kubesim.checks.sizes import SizesRound, SizesViolation, check_sizes_bounded
from kubesim.sim.simulation import Simulation, StoreCrashed
from kubesim.sim.store import StoreFactory, check_store_contract, store_roots, store_sizes
from kubesim.workload.pods import make_pod, populate_pods

FAULTS = ("expire", "drop")
# What each fault does to the store's watch, in the server's words, for the verdict.
FAULT_ACTIONS = {
    "expire": "the server ended its watch cleanly (expire_watches)",
    "drop": "the server cut its watch (drop_watches)",
}
FAULT_ADVICE = {
    "expire": "real API servers end every watch after minutes; read to the end and watch again",
    "drop": (
        "real watch connections are cut by load balancers and apiserver restarts; "
        "catch it and watch again"
    ),
}

BOUNDED = "BOUNDED"
GROWS = "GROWS"
CRASHED = "CRASHED"
STOPPED = "STOPPED WATCHING"


@dataclass(frozen=True)
class RestartRound:
    """What the store held after one restart (round 0: after the first watch)."""

    round: int
    retained_bytes: int
    sizes: Mapping[str, int]
    requests: int
    live: int = 0


@dataclass(frozen=True)
class StoreFailure:
    """The store's run() ended: it returned (``stopped``) or raised (``crashed``)."""

    kind: str  # "stopped" or "crashed"
    round: int
    requests: int
    fault: str
    exception: str = ""  # qualified name of what run() raised
    message: str = ""

    def __str__(self) -> str:
        if self.round < 0:
            after = "while the factory built the store"
        elif self.round == 0:
            after = "during its first list/watch"
        else:
            after = f"at round {self.round}, after {FAULT_ACTIONS[self.fault]}"
        if self.kind == "stopped":
            return (
                f"the store's run() returned after {self.requests} requests, {after}: a store "
                "that stops watching serves a stale cache; run() must watch again when a watch "
                "ends"
            )
        advice = f": {FAULT_ADVICE[self.fault]}" if self.round > 0 else ""
        return f"the store's run() raised {self.exception} ({self.message}) {after}{advice}"


@dataclass(frozen=True)
class RestartReport:
    """One store across ``restarts`` watch restarts: the rounds, the verdict and its numbers.

    ``grows`` is true when the memory verdict (``violation``) or a ``sizes()`` entry
    (``sizes_violations``) found growth while the live set stayed the same; ``failure`` is set
    when the store crashed or stopped watching; ``trace_hash`` fingerprints the run (the same
    seed gives the same hash).
    """

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
    sizes_violations: list[SizesViolation] = field(default_factory=list)
    failure: StoreFailure | None = None

    @property
    def grows(self) -> bool:
        """The store grew across the restarts (memory or ``sizes()``)."""
        return self.violation is not None or bool(self.sizes_violations)

    @property
    def verdict(self) -> str:
        """``CRASHED``, ``STOPPED WATCHING``, ``GROWS`` or ``BOUNDED`` (module docstring)."""
        if self.failure is not None:
            return CRASHED if self.failure.kind == "crashed" else STOPPED
        return GROWS if self.grows else BOUNDED

    @property
    def growth_per_round(self) -> float:
        return growth_per_round(self.samples[1:])

    def explain(self) -> list[str]:
        """The verdict's reasons, one line each, with numbers."""
        lines: list[str] = []
        if self.failure is not None:
            lines.append(str(self.failure))
        lines.extend(str(v) for v in self.sizes_violations)
        if self.violation is not None:
            lines.extend(str(self.violation).splitlines())
        return lines

    def figures(self) -> list[tuple[int, int, tuple[tuple[str, int], ...]]]:
        """Per round: bytes retained beyond round 0, and the store's sizes. Exactly repeatable."""
        if not self.rounds:
            return []
        base = self.rounds[0].retained_bytes
        return [
            (r.round, r.retained_bytes - base, tuple(sorted(r.sizes.items()))) for r in self.rounds
        ]


def _live_set(sim: Simulation) -> int:
    """Objects on the server (every resource): what a correct store's size follows."""
    server = sim.server
    with server.lock:
        return sum(server.storage.count(resource) for resource in server.resources)


def _churn(
    sim: Simulation, keys: list[tuple[str, str]], churn: int, round_: int, containers: int
) -> None:
    """Replace the ``churn`` oldest pods by new ones of the same shape, in the same namespaces.

    Same labels, node and IP, and a name of the same length (the next serial number): the live
    set changes objects but not size, so a correct store's memory must not change either.
    """
    pods = len(keys)
    for index in range(churn):
        namespace, name = keys.pop(0)
        old = sim.server.get("pods", name, namespace=namespace)
        sim.server.delete("pods", name, namespace=namespace)
        serial = pods + (round_ - 1) * churn + index
        fresh = f"{name.rsplit('-', 1)[0]}-{serial:05d}"
        pod = make_pod(
            fresh,
            namespace,
            labels=dict(old["metadata"].get("labels") or {}),
            containers=containers,
            node=old["spec"].get("nodeName", "node-0"),
            pod_ip=old["status"].get("podIP", "10.0.0.1"),
        )
        sim.server.create("pods", pod, namespace=namespace)
        keys.append((namespace, fresh))


def _roots(store: Any, factory: StoreFactory) -> dict[str, object]:
    return store_roots(store, factory)


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
    churn: int = 0,
    tolerance_per_round: float | None = None,
    on_round: Callable[[RestartRound], None] | None = None,
) -> RestartReport:
    """Run ``factory``'s store over ``restarts`` watch restarts; measure it after each.

    ``churn``: before every restart, delete the ``churn`` oldest pods and create as many new
    ones (the live set stays the same size; its objects change).

    Raises :class:`~kubesim.sim.store.StoreContractError` if the factory does not return a
    store (contract in :mod:`kubesim.sim.store`); a store that crashes or stops watching is a
    verdict in the report, not an exception.
    """
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}, got fault={fault!r}")
    if restarts < 2:
        raise ValueError(f"restarts must be >= 2 to measure growth, got restarts={restarts}")
    if pods < 1:
        raise ValueError(f"pods must be >= 1, got pods={pods}")
    if not 0 <= churn <= pods:
        raise ValueError(f"churn must be between 0 and pods={pods}, got churn={churn}")
    if tolerance_per_round is not None and tolerance_per_round < 0:
        raise ValueError(f"tolerance_per_round must be >= 0, got {tolerance_per_round}")
    sim = Simulation(seed=seed)
    keys = populate_pods(
        sim.server,
        sim.choices.fork("workload"),
        pods=pods,
        containers=containers,
        namespaces=namespaces,
    )
    label = getattr(factory, "__qualname__", repr(factory))
    api_client = sim.kubernetes_client()
    try:
        store = factory(api_client)
    except Exception as exc:  # the store's own code failed: a verdict, like a crash in run()
        sim.stop()
        built = StoreFailure(
            "crashed",
            -1,
            sim.server.request_count,
            fault,
            f"{type(exc).__module__}.{type(exc).__qualname__}",
            str(exc),
        )
        return RestartReport(
            name,
            seed,
            pods,
            containers,
            restarts,
            fault,
            [],
            [],
            None,
            sim.trace.hexdigest(),
            [],
            built,
        )
    check_store_contract(store, factory=label)
    roots = _roots(store, factory)
    rounds: list[RestartRound] = []
    samples: list[MemorySample] = []
    failure: StoreFailure | None = None
    try:
        for round_ in range(restarts + 1):
            try:
                if round_ == 0:
                    sim.start(store.run, name=name)
                else:
                    if churn:
                        _churn(sim, keys, churn, round_, containers)
                        sim.settle()  # the store sees the churn on its open watch
                    if fault == "expire":
                        sim.server.expire_watches()
                    else:
                        sim.server.drop_watches()
                    sim.settle()
            except StoreCrashed as crash:
                cause = crash.__cause__ or crash
                kind = type(cause)
                failure = StoreFailure(
                    "crashed",
                    round_,
                    sim.server.request_count,
                    fault,
                    f"{kind.__module__}.{kind.__qualname__}",
                    str(cause),
                )
                break
            if sim.store_finished:
                failure = StoreFailure("stopped", round_, sim.server.request_count, fault)
                break
            sample = sample_retained(round_, roots)
            samples.append(sample)
            done = RestartRound(
                round_,
                sample.retained_bytes,
                store_sizes(store, factory=label),
                sim.server.request_count,
                _live_set(sim),
            )
            rounds.append(done)
            if on_round is not None:
                on_round(done)
    finally:
        sim.stop()
    violation = None
    sizes_violations: list[SizesViolation] = []
    if failure is None:
        violation = check_memory_bounded(samples, tolerance_per_round=tolerance_per_round)
        sizes_violations = check_sizes_bounded(
            [SizesRound(r.round, r.sizes, r.live) for r in rounds]
        )
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
        sizes_violations,
        failure,
    )
