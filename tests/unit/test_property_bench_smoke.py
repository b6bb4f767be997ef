"""``python bench/property.py --quick`` runs end to end and prints its tables.

A smoke test only: it checks that the property layer's benchmark still runs against the
current runner, oracles, corpus and plain stateful baseline, and reports every section. It
asserts nothing about timings, which on a shared 2-core machine vary by tens of percent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TITLES = (
    "1. Campaign rate",
    "2. One example's time",
    "3. Oracle cost",
    "4. Time to first failure",
)


@pytest.mark.slow
def test_property_bench_quick_run_exits_0_and_prints_every_table(tmp_path: Path) -> None:
    output = tmp_path / "property.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "property.py"), "--quick", "--output", str(output)],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = f"stdout:\n{completed.stdout}\nstderr:\n{completed.stderr}"
    assert completed.returncode == 0, report
    for title in TITLES:
        assert title in completed.stdout, report

    results = json.loads(output.read_text(encoding="utf-8"))
    assert {"campaign", "breakdown", "oracles", "first_failure"} <= set(results), list(results)
    # Every campaign row ran its examples, and the correct store passed them.
    # 6 pods: the default, the memory walk off, the history oracle off; 1,000 pods: the first two;
    # then the stores of several kinds (services and pods; jobs with the controllers on).
    rows = results["campaign"]["rows"]
    assert [(r["store"], r["pods"], r["memory"], r["history"], r["controllers"]) for r in rows] == [
        ("reflector", 6, True, True, False),
        ("reflector", 6, False, True, False),
        ("reflector", 6, True, False, False),
        ("reflector", 1000, True, True, False),
        ("reflector", 1000, False, True, False),
        ("service registry (services + pods)", 6, True, True, False),
        ("job watcher, controllers on", 6, True, True, True),
    ]
    assert all(r["examples"] > 0 for r in results["campaign"]["rows"])
    # Every oracle was timed on at least one of the stores.
    timed = {
        name
        for store in results["oracles"].values()
        for name, times in store["oracle_cpu_seconds"].items()
        if times
    }
    assert {"failure", "bounded", "converge", "snapshot-reads", "clean-stop", "history"} <= timed
    # The quick corpus: kubesim finds each model's expected property, and its replay matches.
    first = results["first_failure"]
    assert set(first) == {"kubearmor", "bookmark_crash"}, list(first)
    for name, model in first.items():
        for run in model["kubesim"]:
            assert run["found"], (name, run)
            assert model["expected"] in run["properties"], (name, run)
            assert run["replayed"], (name, run)
        assert model["plain"], name
