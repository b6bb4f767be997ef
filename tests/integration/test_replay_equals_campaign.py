"""A replay equals its campaign: every example a campaign ran gives, replayed alone in a fresh
process with ``kubesim replay``, the trace the campaign saw.

A campaign runs a hundred examples in one process; a replay runs one, in a process of its own.
Anything an example leaves behind (a module's cache, a client, a thread, a counter) that reaches
the next would make the campaign's trace of an example differ from its replay's: the verdict
may still agree, but "same seed, same trace" would not hold, and a report's trace hash would
promise what a replay does not give. Each store here is run as a campaign of several examples
of every kind (restarts, readers, faults), then a few of its examples are replayed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kubesim
import kubesim.testing.check as check
from kubesim.sim.store import load_factory
from kubesim.testing.replay import Replay, python_version

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRACE = re.compile(r"trace ([0-9a-f]{16})")

# Absolute: the replays run outside the repository (below), and so may the campaign.
STORES = [
    # The official client, synchronous, with a reader: threads of its own.
    os.path.join(ROOT, "tests/unit/property_stores.py:locked_cache"),
    # kubernetes_asyncio on kubesim's event loop.
    os.path.join(ROOT, "tests/integration/stores/official_watch.py:async_factory"),
    # A leak: the campaign fails, shrinks, and the shrunk example is replayed too.
    os.path.join(ROOT, "tests/unit/property_stores.py:appending_watcher"),
]


def _campaign(spec: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, str]], Any]:
    """Every run of a campaign of ``spec``: (its replay token, its trace hash), in order."""
    runs: list[tuple[str, str]] = []
    original = check.run_scenario

    def recorded(factory: Any, steps: Any, **options: Any) -> Any:
        result = original(factory, steps, **options)
        replay = Replay(
            factory=spec,
            steps=tuple(result.steps),
            schedule=result.schedule,
            seed=options["seed"],
            setup=options["setup"],
            traced=tuple(t.__name__ for t in options["traced"]),
            kubesim_version=kubesim.__version__,
            python=python_version(),
        )
        runs.append((replay.token(), result.trace_hash[:16]))
        return result

    monkeypatch.setattr(check, "run_scenario", recorded)
    report = check.check_store(
        load_factory(spec), spec=spec, examples=8, seed=3, database=":memory:"
    )
    return runs, report


def _replayed(token: str, where: Path) -> str:
    # Run where the repository is not the first thing on the path, and with PYTHONPATH's
    # first entries kept: the kubesim that runs is the one this test imported (the mutation
    # check's copy, under it).
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), ROOT]))
    done = subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", "replay", token],
        cwd=where,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    found = TRACE.search(done.stdout)
    assert found is not None, done.stdout
    return found.group(1)


@pytest.mark.parametrize("spec", STORES, ids=[spec.rpartition(":")[2] for spec in STORES])
def test_each_example_replays_alone_with_the_trace_the_campaign_saw(
    spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if "official_watch" in spec:  # kubernetes_asyncio is in the test extra, not the client one
        pytest.importorskip("kubernetes_asyncio")
    runs, report = _campaign(spec, monkeypatch)
    assert report.found is not None or len(runs) == 8
    # The first (nothing ran before it), later ones (seven examples' leftovers before the
    # last), and, for a failure, the shrunk example whose trace the report printed.
    chosen = [runs[0], runs[len(runs) // 2], runs[-1]]
    if report.found is not None:
        printed = report.found.result.trace_hash[:16]
        assert printed == runs[-1][1]
        assert f"trace {printed}" in str(report.found)
    for token, trace in chosen:
        assert _replayed(token, tmp_path) == trace
