"""prefect-kubernetes' ``KubernetesJobRun.wait_for_completion`` under ``kubesim check``
(store: prefect_job_run.py; page: docs/findings/prefect-job-run-wait.md).

Tried with prefect-kubernetes 0.8.0 (prefect 3.9.1, kubernetes_asyncio 36.1.0, Python 3.11).
prefect-kubernetes is not in the test extra: these tests run where it is installed (a venv with
``pip install prefect-kubernetes==0.8.0 -e .``) and are skipped elsewhere.

What kubesim finds, and why it is prefect-kubernetes':

- **progress**: ``await_for_completion`` sleeps only while ``status.active`` is non-zero. A Job
  with no active pod and no ``Complete`` or ``Failed`` condition (its status before the Job
  controller's first sync; on a cluster, above all, between a failed pod and its replacement,
  while the controller waits out its backoff of 10 s, 20 s, ... up to 6 minutes) is read, and its
  pods listed, again at once, without end: here 1,000 requests at one virtual instant, in a
  world with no Job controller, where Jobs keep that status.
- **crash** (the failure oracle): any error of the API server (a 500, a 503 or 429, a
  connection refused during an apiserver restart) on the Job's read or its pods' list ends
  ``wait_for_completion``
  with that exception while the Job runs on: ``run_namespaced_job`` fails, and with
  ``delete_after_completion`` the Job is left behind. One 500 on a list is enough.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

prefect_kubernetes = pytest.importorskip(
    "prefect_kubernetes", reason="prefect-kubernetes is not installed"
)

SPEC = "tests/integration/prefect_job_run.py:factory"
ROOT = Path(__file__).resolve().parents[2]
# With the workload's create, delete and churn, which every campaign draws.
FAULTS = ["labels", "annotate", "status"]
JOBS = ("jobs.batch", "pods")


@pytest.fixture
def store() -> Any:
    from importlib.metadata import version

    # The version docs/findings/prefect-job-run-wait.md names: a release that fixes the loop
    # fails these tests, which then need updating.
    assert version("prefect-kubernetes") == "0.8.0", version("prefect-kubernetes")
    from tests.integration import prefect_job_run

    return prefect_job_run


def _check(faults: list[str], *, controllers: bool, oracles: list[str] | None = None) -> str:
    """``kubesim check`` in a process of its own: prefect keeps state per process (its settings,
    its clients) that makes a second campaign in the same process differ from a first."""
    command = [sys.executable, "-m", "kubesim.cli.main", "check", SPEC, "--kinds", ",".join(JOBS)]
    command += ["--faults", ",".join(faults), "--examples", "8", "--database", ":memory:"]
    command += ["--controllers"] if controllers else []
    command += ["--oracles", ",".join(oracles)] if oracles else []
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_a_job_with_no_active_pod_and_no_condition_is_polled_without_a_pause(store: Any) -> None:
    # No Job controller: every Job of the world keeps the status it was written with, none.
    text = _check(FAULTS, controllers=False)
    assert "\nprogress: " in text, text
    assert "API requests at virtual time 0 s without waiting for anything" in text, text
    assert "/apis/batch/v1/namespaces/" in text or "/api/v1/namespaces/" in text, text


def test_one_api_error_ends_the_wait_for_a_running_job(store: Any) -> None:
    # Not judged by progress: each waiter reads its Job and lists its pods every 5 s, by design,
    # and with more than about five Jobs (the workload creates some) that is more than kubesim's
    # bound for one store, 2 requests a second.
    oracles = ["failure", "bounded", "history", "effects-once"]
    text = _check([*FAULTS, "http-error"], controllers=True, oracles=oracles)
    assert "\ncrash: StoreCrashed" in text, text
    assert "raised ApiException" in text, text
    assert "fail the next 1 list or watch request with" in text, text


def test_the_pages_plain_script_shows_both(store: Any, tmp_path: Path) -> None:
    # docs/findings/prefect-job-run-wait.md's script against kubesim serve, as a user runs it.
    page = (ROOT / "docs" / "findings" / "prefect-job-run-wait.md").read_text(encoding="utf-8")
    script = page.split("```python\n# file: prefect_wait.py\n", 1)[1].split("```", 1)[0]
    (tmp_path / "prefect_wait.py").write_text(script, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "prefect_wait.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    spun, raised = done.stdout.strip().splitlines()
    sent = int(spun.split(": ")[1].split()[0])
    assert sent > 2, spun  # one read and one list, then a 5 s sleep: at most 2 in 3 s
    assert raised == "wait_for_completion raised ApiException (500)", raised
