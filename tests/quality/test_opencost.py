"""kubesim finds OpenCost's shared-label-map race and passes the deep-copy and immutable caches.

The scenario (OpenCost issues #2637 and #2910, PRs #2725 and #3206): a reflector thread keeps
the cache fed from the fake API server while the cost model merges namespace labels into each
pod's labels and the metrics collector iterates them, and a workload thread mutates labels on
the server (F11). Every interleaving comes from the controlled scheduler; the store module is
traced at opcode level.
"""

from __future__ import annotations

import copy
import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

import kubesim
from kubesim.checks.races import (
    IsolationMonitor,
    ServerVersions,
    check_reads_match_server,
)
from kubesim.sched import RandomWalk
from kubesim.sched import scheduler as sched
from kubesim.sched.explore import explore, run_schedule
from kubesim.sim.threads import controlled_server
from kubesim.workload import make_pod
from models import opencost

NAMESPACE_LABELS = {
    "team-0": {"team": "payments", "cost-center": "cc-100"},
    "team-1": {"team": "search", "cost-center": "cc-200"},
}


def _populate(server: kubesim.APIServer, pods: int) -> None:
    for ns, labels in NAMESPACE_LABELS.items():
        server.create("namespaces", {"metadata": {"name": ns, "labels": labels}})
    for i in range(pods):
        ns = f"team-{i % 2}"
        server.create("pods", make_pod(f"api-{i}", ns, labels={"app": "api", "pod": str(i)}))


def opencost_scenario(design: str, *, pods: int = 4, rounds: int = 2) -> Callable[[], None]:
    def scenario() -> None:
        run = sched.active()
        assert run is not None
        server = controlled_server(seed=5)
        _populate(server, pods)
        cache = opencost.ClusterCache(kubesim.kubernetes_client(server), design=design)
        threading.Thread(target=cache.run, name="reflector", daemon=True).start()
        cache.synced.wait()

        monitor = IsolationMonitor(held_by_store=cache.held_objects)
        reads: list[tuple[str, Any]] = []
        get_all = cache.get_all_pods

        def recorded() -> list[Any]:
            objects = get_all()
            with run.atomic():
                reader = threading.current_thread().name
                monitor.handed_out(objects, reader=reader, step=run.steps)
                if design != "immutable":
                    reads.extend((reader, copy.deepcopy(o)) for o in objects)
            return objects

        cache.get_all_pods = recorded  # type: ignore[method-assign]

        def cost_model() -> None:
            for _ in range(rounds):
                opencost.compute_pod_labels(cache, NAMESPACE_LABELS)

        def metrics() -> None:
            for _ in range(rounds):
                opencost.collect_pod_labels(cache)

        def workload() -> None:
            server.patch(
                "pods", "api-0", {"metadata": {"labels": {"version": "2"}}}, namespace="team-0"
            )

        threads = [
            threading.Thread(target=f, name=f.__name__) for f in (cost_model, metrics, workload)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with run.atomic():
            violations = monitor.verify()
            violations += check_reads_match_server(reads, ServerVersions(server))
        assert not violations, "\n".join(str(v) for v in violations[:5])

    return scenario


TRACED = [opencost]


def test_the_shared_cache_race_is_found_and_replays() -> None:
    result = explore(opencost_scenario("shared"), schedules=200, seed=1, traced=TRACED)
    assert result.found is not None
    failure = str(result.found.failure)
    assert (
        "dictionary changed size during iteration" in failure
        or "isolation" in failure
        or "torn-read" in failure
    )
    again = run_schedule(
        opencost_scenario("shared"),
        seed=result.found.seed,
        strategy=_same(result.found.strategy),
        traced=TRACED,
    )
    assert again.trace_hash == result.found.result.trace_hash


def _same(name: str) -> Any:
    from kubesim.sched import PCT, RandomWalk

    if name.startswith("random"):
        return RandomWalk(float(name.split("p=")[1].rstrip(")")))
    depth = int(name.split("depth=")[1].rstrip(")"))
    return PCT(depth, 1000)


def test_the_shared_cache_crashes_the_metrics_reader_under_some_interleaving() -> None:
    crashed = 0
    for seed in range(120):
        result = run_schedule(
            opencost_scenario("shared"), seed=seed, strategy=RandomWalk(0.2), traced=TRACED
        )
        if "dictionary changed size during iteration" in str(result.failure):
            crashed += 1
    assert crashed > 0


def test_the_shared_cache_is_corrupted_even_without_a_crash() -> None:
    # No preemption at all: the cost model runs to the end first, then the metrics reader.
    result = run_schedule(
        opencost_scenario("shared"), seed=0, strategy=RandomWalk(0.0), traced=TRACED
    )
    text = str(result.failure)
    assert "isolation" in text or "torn-read" in text
    assert "cost_model" in text or "metrics" in text


@pytest.mark.parametrize("design", ["deepcopy", "immutable"])
def test_the_copying_and_immutable_caches_pass_a_thousand_schedules(design: str) -> None:
    result = explore(opencost_scenario(design), schedules=1000, seed=2, traced=TRACED)
    assert result.ok, str(result.found)


def _allocated_by(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        kept = fn()
        peak = tracemalloc.get_traced_memory()[1]
        del kept
    finally:
        tracemalloc.stop()
    return peak - before


def test_what_a_deep_copy_costs_per_read_in_bytes() -> None:
    """The seed's trade-off in our units: 300 pods, bytes allocated by one get_all_pods()."""
    costs: dict[str, int] = {}
    for design in opencost.DESIGNS:
        server = kubesim.APIServer(seed=1)
        _populate(server, 300)
        cache = opencost.ClusterCache(kubesim.kubernetes_client(server), design=design)
        cache._relist()
        costs[design] = _allocated_by(cache.get_all_pods)
    print(f"\nbytes allocated per get_all_pods() over 300 pods: {costs}")
    assert costs["deepcopy"] > 300 * 4096  # a full copy of every pod, every read
    assert costs["shared"] < 16 * 1024  # one list of references
    assert costs["immutable"] < 16 * 1024
    assert costs["deepcopy"] > 100 * costs["shared"]
