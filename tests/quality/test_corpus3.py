"""kubesim finds the families of derived state, lasting faults, shutdown and races, and passes
each fix.

The models (models/README.md) were written from their upstream reports, not from kubesim's
oracles. For every family: ``check_store`` with the default settings (every step kind, the
store's module traced, seed 0) finds the buggy factory within 200 examples and names one of the
properties the bug breaks, shrinks the scenario to at most 10 steps, and the replay token runs
the same example again (the same trace); the fixed factory passes 200 examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kubesim.sim.store import load_factory
from kubesim.testing.check import check_store
from kubesim.testing.replay import parse_token


@dataclass(frozen=True)
class Family:
    model: str
    buggy: str
    fixed: str
    expected: tuple[str, ...]  # the properties the buggy factory breaks (one is enough)

    def spec(self, factory: str) -> str:
        return f"models.{self.model}:{factory}"


FAMILIES = {
    # Derived state: the long-running store holds what a fresh one does not.
    "label_index": Family(
        "label_index", "keeps_empty_index_sets", "deletes_empty_index_sets", ("history",)
    ),
    "endpoint_table": Family(
        "endpoint_table",
        "drops_tombstone_deletes",
        "keys_tombstones",
        ("history", "effects-expected", "converge"),
    ),
    "ip_reuse": Family("ip_reuse", "one_owner_per_ip", "owner_set_per_ip", ("converge", "history")),
    "label_intern": Family(
        "label_intern", "interns_forever", "releases_unused_strings", ("history", "bounded")
    ),
    "dedupe_resync": Family(
        "dedupe_resync", "never_forgets_handled", "prunes_and_skips_resyncs", ("history",)
    ),
    # Faults real clusters have: an older server's 410, an outage, a silent connection, stop().
    "expiry_reason": Family(
        "expiry_reason", "expired_by_reason", "expired_by_code", ("converge", "history")
    ),
    "retry_storm": Family(
        "retry_storm", "retry_immediately", "backoff_with_retry_after", ("progress",)
    ),
    "read_timeout": Family(
        "read_timeout", "timeout_kills_watcher", "rewatch_after_timeout", ("crash",)
    ),
    "stop_during_list": Family(
        "stop_during_list",
        "checks_before_watch_loop",
        "checks_after_every_request",
        ("clean-stop",),
    ),
    # Races inside the store, reached by preemptions at hot points (no --traced needed).
    "unlocked_reader": Family(
        "unlocked_reader", "iterate_live_cache", "copy_under_lock", ("snapshot-reads", "crash")
    ),
    "prune_then_update": Family(
        "prune_then_update", "prune_then_update", "build_then_swap", ("snapshot-reads",)
    ),
    # One reflector per namespace: the fix is the correct control a per-scope read judges.
    "ns_reflectors": Family(
        "ns_reflectors",
        "clears_namespace_on_relist",
        "swaps_namespace_on_relist",
        ("snapshot-reads",),
    ),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_buggy_model_is_found_shrunk_and_replayed(name: str) -> None:
    family = FAMILIES[name]
    spec = family.spec(family.buggy)
    found = _found_by_two_seeds_of_three(spec)
    assert set(family.expected) & set(found.properties), str(found)
    assert len(found.result.steps) <= 10, str(found)
    again = parse_token(found.replay.token()).run()
    assert again.trace_hash == found.result.trace_hash
    assert again.lines == found.result.lines


def _found_by_two_seeds_of_three(spec: str) -> Any:
    """The defaults find the bug within 200 examples on seed 0, or else on both seeds 1 and 2.
    Which examples a seed draws changes whenever the draw does (a new step field, a new kind):
    a family is found when the defaults find it, not when one seed happens to."""
    factory = load_factory(spec)
    report = check_store(factory, spec=spec, examples=200, seed=0, database=":memory:")
    if report.found is not None:
        return report.found
    others = [
        check_store(factory, spec=spec, examples=200, seed=seed, database=":memory:")
        for seed in (1, 2)
    ]
    missed = [seed for seed, other in zip((1, 2), others, strict=True) if other.found is None]
    assert not missed, f"{spec}: no violation in 200 examples on seed 0 nor on seed(s) {missed}"
    return others[0].found


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_fixed_model_passes_two_hundred_examples(name: str) -> None:
    family = FAMILIES[name]
    spec = family.spec(family.fixed)
    report = check_store(load_factory(spec), spec=spec, examples=200, seed=0, database=":memory:")
    assert report.ok, str(report.found)
    assert report.examples == 200


# A scenario on which the fixed endpoint table, a correct store, was judged a leak in some
# processes: its work queue's dirty set grew its table during the tail depending on the keys'
# string hashes, which change from process to process (3 of 41 hash seeds before the walk sized
# sets as built afresh, among them 4, 21 and 27).
_HASH_DEPENDENT = """
from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import *
from kubesim.sim.store import load_factory

steps = [
    ReadConcurrently(), ChangeServerVersion(version="1.14"), SilenceWatches(seconds=120),
    PatchLabels(count=1, value="v2", key="version"), ChurnPods(count=2), CrashAndRestart(),
    CreatePods(count=6), ReusePodIP(index=0), ReusePodIP(index=0),
]
import models.endpoint_table as module
result = run_scenario(
    load_factory("models.endpoint_table:keys_tombstones"), steps, seed=0, traced=[module]
)
print(judge(result.recording).violations or "ok")
"""


@pytest.mark.parametrize("hash_seed", ["4", "21", "27"])
def test_a_correct_stores_tail_is_flat_whatever_the_processs_string_hashes(
    hash_seed: str,
) -> None:
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, "-c", _HASH_DEPENDENT],
        cwd=root,
        env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok", done.stdout


# A relist that prunes, then refills one object at a time, with the writers' lock around both
# passes and a reader that copies the cache without it: half applied over a few points only,
# which one drawn preemption rarely hit (missed in 400 examples on seed 0 before relist
# readers sampled the whole relist). The bar: found within 100 examples on every seed.
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_relist_half_applied_under_an_unlocked_reader_is_found_on_any_seed(seed: int) -> None:
    spec = "tests.unit.property_stores:prune_then_refill"
    report = check_store(
        load_factory(spec), spec=spec, examples=100, seed=seed, database=":memory:"
    )
    assert report.found is not None, f"seed {seed}: not found in 100 examples"
    assert "snapshot-reads" in report.found.properties, str(report.found)


def test_its_locked_twin_passes() -> None:
    spec = "tests.unit.property_stores:prune_then_refill_locked"
    report = check_store(load_factory(spec), spec=spec, examples=100, seed=0, database=":memory:")
    assert report.ok, str(report.found)
