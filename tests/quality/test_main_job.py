"""The README's main job: `kubesim restarts` prints per-restart figures, draws, and judges."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kubesim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


SMALL = ("--pods", "6", "--restarts", "3", "--containers", "2")


def test_the_main_job_passes_when_the_buggy_model_grows_and_the_fixed_one_does_not(
    tmp_path: Path,
) -> None:
    picture = tmp_path / "restarts.png"
    done = kubesim(
        "restarts",
        "--leaky",
        "models.kubearmor:before_pr1553",
        "--bounded",
        "models.kubearmor:after_pr1553",
        *SMALL,
        "--plot",
        str(picture),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "endpoints=12 pods=6" in out
    assert "endpoints=48 pods=6" in out
    assert "models.kubearmor:before_pr1553: GROWS" in out
    assert "models.kubearmor:after_pr1553: BOUNDED" in out
    assert "replay: kubesim restarts" in out
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_the_main_job_fails_when_an_expectation_is_wrong() -> None:
    done = kubesim("restarts", "--bounded", "models.kubearmor:before_pr1553", *SMALL)
    assert done.returncode == 1
    assert "expected it to be bounded: FAILED" in done.stdout


def test_a_bad_store_spec_is_a_usage_error_naming_the_spec() -> None:
    done = kubesim("restarts", "--leaky", "models.kubearmor")
    assert done.returncode == 2
    assert "module:attribute" in done.stderr
    assert "'models.kubearmor'" in done.stderr
    done = kubesim("restarts", "--leaky", "models.nosuch:factory")
    assert done.returncode == 2
    assert "cannot import 'models.nosuch'" in done.stderr
