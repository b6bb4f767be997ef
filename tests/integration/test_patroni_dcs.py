"""Patroni's Kubernetes DCS (``ObjectCache``) under ``kubesim check``: it held up.

Tried with patroni 4.1.5 (its own urllib3 client, routed in-process by kubesim's urllib3 seam;
Python 3.11). The store (tests/integration/stores/patroni_dcs.py) is ``get_dcs()`` as a Patroni
member builds it, and its view is one of the two ``ObjectCache`` threads it starts: the
ConfigMaps labelled ``application=patroni,cluster-name=demo`` (leader lock, configuration,
failover), or the member pods with those labels. The starting world is one such object.

The default campaign held up, on both caches, with every oracle that judges them:
``ObjectCache`` relists on a 410 event, after a cut or an error, and replaces its whole cache
with each list (a delete while the watch was down is gone after the relist); its list has no
resourceVersion (a quorum read), so a lagging watch cache cannot take it back in time; a read
copies the dict under the cache's lock, and a relist swaps the dict whole; in an outage each
cache retries its list once a second.

Two verdicts on the way were kubesim's errors, since fixed: ``snapshot-reads`` judged every
read against the server's pods (a ConfigMap read was "never the server's state"), and the
``outage`` budget of ``progress`` was one retry a second per store, where Patroni runs two
caches, each retrying once a second (tests/unit/test_workload_kinds.py and
tests/unit/test_store_oracles.py hold both).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

patroni = pytest.importorskip("patroni.version", reason="patroni is not installed")
pytest.importorskip("psycopg2", reason="patroni's DCS imports a psycopg driver")

VERSION = "4.1.5"
ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/integration/stores/patroni_dcs.py:factory"
LABELS = "  labels: {application: patroni, cluster-name: demo}\n"
CONFIGMAP = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-config\n  namespace: default\n"
    + LABELS
    + '  annotations:\n    config: \'{"ttl": 30, "loop_wait": 10}\'\n'
)
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: demo-0\n  namespace: default\n"
    + LABELS
    + "spec:\n  containers: [{name: postgres, image: postgres}]\n"
)


def test_the_version_is_the_one_tried() -> None:
    assert patroni.__version__ == VERSION  # a new release: run the campaigns again


def check(world: Path, cache: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubesim.cli.main", "check", SPEC, "--objects", str(world)]
    budget = ["--examples", "15", "--database", ":memory:"]
    return subprocess.run(
        [*command, *budget, *options],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PATRONI_CACHE": cache},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_configmap_cache_holds_up(tmp_path: Any) -> None:
    world = tmp_path / "world.yaml"
    world.write_text(CONFIGMAP)
    done = check(world, "_kinds", "--kinds", "configmaps")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "OK after 15 examples" in done.stdout
    assert "snapshot-reads" in done.stdout.split("oracles run:")[1].splitlines()[0]


def test_the_pod_cache_holds_up_and_its_reads_are_snapshots(tmp_path: Any) -> None:
    world = tmp_path / "pod.yaml"
    world.write_text(POD)
    done = check(world, "_pods", "--kinds", "pods")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "OK after 15 examples" in done.stdout
    assert "snapshot-reads" in done.stdout.split("oracles run:")[1].splitlines()[0]
