"""kuryr-kubernetes' Watcher under ``kubesim check`` (store: stores/kuryr_watcher.py).

Tried with kuryr-kubernetes 10.0.0 (its own requests-based ``K8sClient``, routed in-process by
kubesim's requests seam; Python 3.11), in its own virtual environment: kuryr pulls in OpenStack's
oslo libraries and eventlet, so it is not in the test extra and this module is skipped where it
is not installed. The store is a registry of pods fed by a synchronous ``Watcher`` on kuryr's
``CNIPipeline``, as the CNI daemon keeps its registry
(docs/findings/kuryr-watcher-missed-deletes.md).

What kubesim finds, and why it is kuryr's: after a watch from a compacted resourceVersion (an
``ERROR`` event with a 410 ``Status``), ``K8sClient.watch`` takes the resourceVersion from the
event's object, which has none, and watches again from "now": the pods that exist arrive as
``ADDED``, the ones deleted in the gap never arrive as ``DELETED``, and the registry keeps them.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("kuryr_kubernetes.watcher", reason="kuryr-kubernetes is not installed")

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import DeleteWhileDisconnected, DropWatches
from kubesim.testing.check import check_store
from tests.integration.stores import kuryr_watcher

VERSION = "10.0.0"
ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "findings" / "kuryr-watcher-missed-deletes.md"
SPEC = "tests/integration/stores/kuryr_watcher.py:factory"


def test_the_version_is_the_one_tried() -> None:
    # A new release: run the campaigns again, and update the page.
    assert importlib.metadata.version("kuryr-kubernetes") == VERSION


def test_a_pod_deleted_while_the_watch_is_down_stays_in_the_registry() -> None:
    result = run_scenario(
        kuryr_watcher.factory, [DeleteWhileDisconnected(compacted=True)], seed=0, spec=SPEC
    )
    violations = {v.property: str(v) for v in judge(result.recording).violations}
    assert set(violations) == {"converge", "history"}, violations
    assert (
        "phantom(s) the server no longer has (missed deletes): team-0/web-000"
        in (violations["converge"])
    )


def test_a_cut_watch_resumes_from_its_resource_version() -> None:
    # Without compaction the re-watch from the last resourceVersion replays the delete.
    result = run_scenario(kuryr_watcher.factory, [DeleteWhileDisconnected()], seed=0, spec=SPEC)
    assert not judge(result.recording).violations
    result = run_scenario(kuryr_watcher.factory, [DropWatches()], seed=0, spec=SPEC)
    assert not judge(result.recording).violations


def test_the_campaign_finds_it() -> None:
    report = check_store(
        kuryr_watcher.factory,
        spec=SPEC,
        examples=10,
        seed=0,
        kinds=["create", "delete-in-gap"],
        database=":memory:",
    )
    found = report.found
    assert found is not None
    assert "converge" in found.properties, str(found)
    assert "while disconnected, history compacted" in str(found)


def test_the_plain_script_against_kubesim_serve(tmp_path: Path) -> None:
    text = PAGE.read_text()
    script = re.search(r"## Without kubesim's property layer.*?```python\n(.*?)```", text, re.S)
    assert script is not None
    path = tmp_path / "kuryr_plain.py"
    path.write_text(script.group(1))
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kuryr's registry: ['db', 'web']" in done.stdout, done.stdout
    assert "on the server: ['db']" in done.stdout, done.stdout
