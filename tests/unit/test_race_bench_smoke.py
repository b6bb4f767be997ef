"""``python bench/races.py --quick`` runs kubesim and frontrun end to end and prints its tables.

A smoke test only: it checks that the race benchmark still drives both tools over the whole
corpus, that kubesim raises no false alarm on the correct twins (the bench exits 1 if it does)
and that every table is printed. It asserts nothing about timings or schedule counts, which
depend on the machine's load. Skipped when frontrun is not installed (``pip install frontrun``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TABLE_TITLES = ("1. Racy cases", "2. Correct twins", "3. Cost per schedule")
RACY_HEADERS = ("case", "tool", "mode", "found", "schedules", "to 1st failure", "false passes")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("frontrun") is None,
    reason="frontrun is not installed (pip install frontrun); the race bench compares against it",
)


@pytest.mark.slow
def test_race_bench_quick_run_exits_0_and_prints_every_table(tmp_path: Path) -> None:
    output = tmp_path / "races.json"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    completed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "races.py"), "--quick", "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    report = f"stdout:\n{completed.stdout}\nstderr:\n{completed.stderr}"
    assert completed.returncode == 0, report
    for title in TABLE_TITLES:
        assert title in completed.stdout, report
    header = next(line for line in completed.stdout.splitlines() if line.startswith("case "))
    assert all(name in header for name in RACY_HEADERS), header

    results = json.loads(output.read_text(encoding="utf-8"))
    tools = {(s["tool"], s["mode"]) for s in results["summaries"]}
    assert tools == {
        ("kubesim", "portfolio"),
        ("kubesim", "random(0.05)"),
        ("kubesim", "pct(2)"),
        ("frontrun", "dpor"),
        ("frontrun", "random"),
    }
    assert not results["meta"]["errors"], results["meta"]["errors"]
    kubesim_alarms = [
        s
        for s in results["summaries"]
        if s["tool"] == "kubesim" and not s["racy"] and s["false_alarms"]
    ]
    assert not kubesim_alarms, kubesim_alarms
