"""kubesim finds each bug of the second half of the corpus in models/ and passes each fix.

For every family: ``check_store`` with the default step kinds and settings finds the buggy
factory within 200 examples, names the expected property, shrinks the scenario to at most 10
steps, and the replay token runs the same example again (the same trace); the fixed factory
passes 200 examples, twice the default campaign.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubesim.sim.store import load_factory
from kubesim.testing.check import check_store
from kubesim.testing.replay import parse_token

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Family:
    model: str
    buggy: str
    fixed: str
    expected: str  # the property the buggy factory breaks

    def spec(self, factory: str) -> str:
        return f"models.{self.model}:{factory}"


FAMILIES = {
    "shared_informer_mutation": Family(
        "shared_informer_mutation", "mutate_cached", "deep_copy", "isolation"
    ),
    "shared_informer_mutation-shallow": Family(
        "shared_informer_mutation", "shallow_copy", "deep_copy", "isolation"
    ),
    "stalled_listener": Family(
        "stalled_listener", "unbounded_pending", "coalescing_queue", "bounded"
    ),
    "ksm_relist": Family("ksm_relist", "clear_then_add", "build_then_swap", "snapshot-reads"),
    "ip_index": Family(
        "ip_index", "stale_entry_on_ip_clear", "unindex_on_every_update", "converge"
    ),
    "bookmark_crash": Family("bookmark_crash", "every_event_is_a_pod", "skips_bookmarks", "crash"),
    "gone_loop": Family("gone_loop", "rewatch_same_rv", "relist_on_gone", "progress"),
}


# The family whose token is replayed the way a user would: `kubesim replay TOKEN` in a shell.
REPLAYED_BY_CLI = "ip_index"


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_buggy_model_is_found_shrunk_and_replayed(name: str) -> None:
    family = FAMILIES[name]
    spec = family.spec(family.buggy)
    report = check_store(load_factory(spec), spec=spec, examples=200, seed=0, database=":memory:")
    assert report.found is not None, f"{spec}: no violation in {report.examples} examples"
    found = report.found
    assert family.expected in found.properties, str(found)
    assert len(found.result.steps) <= 10, str(found)
    token = found.replay.token()
    if name == REPLAYED_BY_CLI:
        replayed = subprocess.run(
            [sys.executable, "-m", "kubesim.cli.main", "replay", token],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr
        assert f"trace {found.result.trace_hash[:16]}" in replayed.stdout, replayed.stdout
        assert family.expected in replayed.stdout
        return
    again = parse_token(token).run()
    assert again.trace_hash == found.result.trace_hash
    assert again.lines == found.result.lines


FIXED = [name for name in FAMILIES if not name.endswith("-shallow")]


@pytest.mark.parametrize("name", FIXED)
def test_the_fixed_model_passes_two_hundred_examples(name: str) -> None:
    family = FAMILIES[name]
    spec = family.spec(family.fixed)
    report = check_store(load_factory(spec), spec=spec, examples=200, seed=0, database=":memory:")
    assert report.ok, str(report.found)
    assert report.examples == 200
