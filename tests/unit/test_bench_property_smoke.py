"""``python bench/property.py --quick`` runs end to end and prints its four tables.

A smoke test only: the bench still runs against the current property layer and models. It
asserts nothing about timings (bench/ measures them, side by side in one run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TITLES = (
    "1. Default campaign, correct reflector",
    "2. Cost of each oracle per recording",
    "3. Time to first failure",
    "4. A plain Hypothesis stateful test",
)


@pytest.mark.slow
def test_the_property_bench_quick_run_prints_every_table() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "property.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-2000:]}"
    assert done.returncode == 0, report
    for title in TITLES:
        assert title in done.stdout, report
    assert "models.kubearmor:before_pr1553                      1/1" in done.stdout, report
