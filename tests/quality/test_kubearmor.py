"""kubesim finds KubeArmor's duplicate-ADDED endpoint leak (PR #1553) and passes the fix.

Regression tests named after the bug they pin, as client-go does. The scenario is the one the
bug report describes: watches end (F1), the daemon re-watches with no resourceVersion and
receives a synthetic ADDED for every pod (F2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kubesim import run_watch_restarts
from models import kubearmor

PODS, CONTAINERS, RESTARTS = 20, 2, 4


@pytest.fixture(scope="module")
def before() -> object:
    return run_watch_restarts(
        kubearmor.before_pr1553,
        name="before",
        seed=3,
        pods=PODS,
        containers=CONTAINERS,
        restarts=RESTARTS,
    )


@pytest.fixture(scope="module")
def after() -> object:
    return run_watch_restarts(
        kubearmor.after_pr1553,
        name="after",
        seed=3,
        pods=PODS,
        containers=CONTAINERS,
        restarts=RESTARTS,
    )


def test_pr1553_before_the_fix_every_restart_appends_a_full_set_of_endpoints(before) -> None:
    endpoints = [r.sizes["endpoints"] for r in before.rounds]
    assert endpoints == [PODS * CONTAINERS * (n + 1) for n in range(RESTARTS + 1)]
    assert all(r.sizes["pods"] == PODS for r in before.rounds)


def test_pr1553_before_the_fix_memory_grows_every_restart(before) -> None:
    assert before.grows
    violation = before.violation
    assert violation is not None
    # Each restart keeps PODS*CONTAINERS more endpoint records, each well over 1 KiB.
    assert violation.growth_per_round > PODS * CONTAINERS * 1024
    text = str(violation)
    assert "bytes per round" in text
    # The structure that grows, by path from the store and type, with its item counts.
    assert violation.growing[0].path == "store.endpoints"
    assert f"store.endpoints (list): {PODS * CONTAINERS * 2} -> " in text
    # And the store's own sizes() say the same, whatever the byte tolerance.
    [sizes] = before.sizes_violations
    assert sizes.entry == "endpoints"


def test_pr1553_after_the_fix_endpoints_and_memory_stay_bounded(after) -> None:
    assert [r.sizes["endpoints"] for r in after.rounds] == [PODS * CONTAINERS] * (RESTARTS + 1)
    assert after.verdict == "BOUNDED", after.explain()
    # Exactly flat after the warm-up round: what the server keeps per restart is not counted.
    assert len({r.retained_bytes for r in after.rounds[1:]}) == 1


def test_an_abrupt_drop_leaks_the_same_way_as_a_clean_expiry() -> None:
    report = run_watch_restarts(
        kubearmor.before_pr1553, seed=3, pods=10, containers=1, restarts=3, fault="drop"
    )
    assert [r.sizes["endpoints"] for r in report.rounds] == [10, 20, 30, 40]
    assert report.grows


def test_the_same_seed_gives_the_same_trace_and_memory_figures_in_one_process(before) -> None:
    again = run_watch_restarts(
        kubearmor.before_pr1553,
        name="before",
        seed=3,
        pods=PODS,
        containers=CONTAINERS,
        restarts=RESTARTS,
    )
    assert again.trace_hash == before.trace_hash
    assert again.figures() == before.figures()


def test_a_different_seed_gives_a_different_trace(before) -> None:
    other = run_watch_restarts(
        kubearmor.before_pr1553,
        name="before",
        seed=4,
        pods=PODS,
        containers=CONTAINERS,
        restarts=RESTARTS,
    )
    assert other.trace_hash != before.trace_hash


_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from kubesim import run_watch_restarts
from models import kubearmor
r = run_watch_restarts(kubearmor.before_pr1553, seed=3, pods=8, containers=2, restarts=3)
print(json.dumps({{"trace": r.trace_hash, "figures": r.figures()}}))
"""


def test_the_same_seed_gives_the_same_trace_and_memory_figures_across_processes() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _CHILD.format(root=root)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert runs[0]["figures"][-1][1] > 0
