"""``python bench/run.py --quick`` runs end to end and prints its tables.

A smoke test only: it checks that the benchmark still runs against the current server and
transports and reports every section. It asserts nothing about timings, which on a shared
2-core machine vary by tens of percent between runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SECTION_TITLES = ("1. In-process watch", "2. HTTP watch on 127.0.0.1", "3. HTTP list on 127.0.0.1")
COLUMN_HEADERS = ("measurement", "median", "unit", "spread", "MB/s", "vs limit")


@pytest.mark.slow
def test_bench_quick_run_exits_0_and_prints_every_table(tmp_path: Path) -> None:
    output = tmp_path / "latest.json"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    completed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = f"stdout:\n{completed.stdout}\nstderr:\n{completed.stderr}"
    assert completed.returncode == 0, report
    for title in SECTION_TITLES:
        assert title in completed.stdout, report
    header_lines = [line for line in completed.stdout.splitlines() if "measurement" in line]
    assert len(header_lines) == len(SECTION_TITLES), report
    for line in header_lines:
        assert all(header in line for header in COLUMN_HEADERS), line

    results = json.loads(output.read_text(encoding="utf-8"))
    assert [section["key"] for section in results["sections"]] == [
        "inprocess",
        "http_watch",
        "http_list",
    ]
    assert results["headers"] == list(COLUMN_HEADERS)
    for section in results["sections"]:
        assert section["rows"], section["key"]
        assert all(row["samples"] for row in section["rows"]), section["key"]
