"""Run a mutant's tests in a fresh pytest subprocess against a patched copy of ``kubesim/``.

The working tree is never modified: each run copies the ``kubesim`` package into a temporary
directory, applies the patch there, and starts ``python -m pytest -x -q -p no:cacheprovider
<tests>`` with that directory as its working directory (``sys.path[0]`` under ``-m``) and first
on ``PYTHONPATH``, so the copy shadows the repository's package; the repository root comes next
(``models/``, ``tests/``). The probe plugin (probe.py) checks that the copy is what got imported.

Exit codes: 1 (a test failed) kills the mutant, 0 means it survived; anything else (2
interrupted, 3 wrong package or internal error, 4 usage error, 5 no tests collected, a timeout)
is a broken harness, never a kill. The same tests must pass on an unmutated copy (the baseline),
or a kill would mean nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .loader import ROOT, Mutant
from .probe import PACKAGE_ENV, REPORT_ENV

PROBE = Path(__file__).with_name("probe.py")
PROBE_MODULE = "kubesim_mutation_probe"
TIMEOUT_ENV = "KUBESIM_MUTATION_TIMEOUT"
JOBS_ENV = "KUBESIM_MUTATION_JOBS"
DEFAULT_TIMEOUT = 300.0

KILLED = "killed"
SURVIVED = "survived"
BROKEN = "broken"


@dataclass(frozen=True)
class Run:
    """One pytest subprocess: its exit code, per-test outcomes, and the tail of its output."""

    command: tuple[str, ...]
    returncode: int | None  # None: it timed out and was killed
    reports: tuple[tuple[str, str, str], ...]  # (node id, phase, outcome)
    imported: str | None  # where kubesim came from, as the probe saw it
    output: str
    timeout: float = DEFAULT_TIMEOUT

    def failed_tests(self) -> list[str]:
        return _unique(nodeid for nodeid, _, outcome in self.reports if outcome == "failed")

    def passed(self, node_id: str) -> bool:
        """Every report of ``node_id`` (or its parametrizations) passed, and its call ran."""
        mine = [r for r in self.reports if _selects(node_id, r[0])]
        return any(when == "call" for _, when, _ in mine) and all(
            outcome == "passed" for _, _, outcome in mine
        )


@dataclass(frozen=True)
class Verdict:
    status: str  # KILLED, SURVIVED or BROKEN
    detail: str  # the killing test, or what went wrong
    message: str  # the full explanation for a failing test


# pytest-timeout per test inside a mutant run (seconds).
PER_TEST_TIMEOUT = 30

# Installed pytest plugins no mutant's tests use, left out of every run: frontrun's imports
# hypothesis, SQLAlchemy and redis, and hypothesis's own imports all of hypothesis to print its
# end-of-run summary, together about half of a short run's 3.3 s (1.7 s without them). A test
# that needs one fails its baseline, which is a broken harness, never a kill. anyio's stays: it
# imports anyio at startup, and without it anyio's lazy importer first ran inside a test (an
# httpx async client closing), where its compile() failed on CPython 3.11.7 with "SystemError:
# AST constructor recursion depth mismatch", a broken harness that came and went.
UNUSED_PLUGINS = ("frontrun", "hypothesispytest", "xdist", "xdist.looponfail")


def run_tests(
    tests: Sequence[str],
    *,
    mutant: Mutant | None,
    stop_at_first: bool,
    timeout: float = DEFAULT_TIMEOUT,
) -> Run:
    """Run ``tests`` against a copy of ``kubesim/`` with ``mutant`` applied (None: unmutated)."""
    with tempfile.TemporaryDirectory(prefix="kubesim-mutant-") as tmp:
        work = Path(tmp)
        package = work / "kubesim"
        # Compiled modules come along (copy2 keeps each source's mtime, which its .pyc names):
        # the mutated file is written anew, so Python compiles it again, and only it.
        shutil.copytree(ROOT / "kubesim", package)
        if mutant is not None:
            target = work / mutant.path
            target.write_text(mutant.patched_source())
        shutil.copyfile(PROBE, work / f"{PROBE_MODULE}.py")
        report = work / "report.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(work), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        env[PACKAGE_ENV] = str(package)
        env[REPORT_ENV] = str(report)
        # A mutant can turn an ending watch into one that waits forever: a per-test timeout
        # makes that hang a failing test (a kill) within seconds, not a broken 300 s run.
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-o", f"timeout={PER_TEST_TIMEOUT}"]
        command += [arg for plugin in UNUSED_PLUGINS for arg in ("-p", f"no:{plugin}")]
        command += ["-p", PROBE_MODULE, *(["-x"] if stop_at_first else [])]
        # Absolute paths: the run's working directory is the copy, not the repository.
        command += [str(ROOT / test) for test in tests]
        try:
            done = subprocess.run(
                command,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            returncode: int | None = done.returncode
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            returncode = None
            output = _text(exc.stdout) + _text(exc.stderr)
        data = json.loads(report.read_text()) if report.exists() else {}
    root = f"{ROOT}{os.sep}"
    return Run(
        command=tuple(part.replace(root, "") for part in command),
        returncode=returncode,
        reports=tuple((r["nodeid"], r["when"], r["outcome"]) for r in data.get("reports", ())),
        imported=data.get("imported"),
        output=output[-3000:],
        timeout=timeout,
    )


def judge(mutant: Mutant, baseline: Run, run: Run) -> Verdict:
    """Killed only if the tests pass unmutated and a listed test fails with the mutant."""
    replay = f"replay: python -m pytest -m mutation tests/mutation -k {mutant.name}"
    header = (
        f"mutant {mutant.name} ({mutant.source}): {mutant.why}\n"
        f"  patch {mutant.path}: {mutant.old!r} -> {mutant.new!r}\n"
        f"  tests: {', '.join(mutant.tests)}"
    )
    not_passing = [test for test in mutant.tests if not baseline.passed(test)]
    if baseline.returncode is None or not_passing:
        why = "timed out" if baseline.returncode is None else f"exit code {baseline.returncode}"
        detail = f"without the mutant these tests do not pass ({why}): {', '.join(not_passing)}"
        return Verdict(BROKEN, detail, _explain(header, detail, baseline, replay))
    if run.returncode == 1:
        failed = [test for test in run.failed_tests() if _listed(mutant, test)]
        if failed:
            return Verdict(KILLED, f"by {failed[0]}", "")
        detail = "exit code 1 but none of the listed tests reported a failure"
        return Verdict(BROKEN, detail, _explain(header, detail, run, replay))
    if run.returncode == 0:
        detail = "every listed test passed with the mutant applied"
        message = (
            f"SURVIVED: {header}\n  {detail}: the tests do not detect this weakening.\n  {replay}"
        )
        return Verdict(SURVIVED, detail, message)
    if run.returncode is None:
        detail = f"the test run timed out (over {run.timeout} s)"
    else:
        detail = f"the test run ended with exit code {run.returncode}, neither a pass nor a fail"
    return Verdict(BROKEN, detail, _explain(header, detail, run, replay))


def _explain(header: str, detail: str, run: Run, replay: str) -> str:
    return (
        f"BROKEN HARNESS (not a kill): {header}\n  {detail}\n"
        f"  command: {' '.join(run.command)}\n  kubesim imported from: {run.imported}\n"
        f"  {replay}\n--- output (tail) ---\n{run.output}"
    )


class MutationCheck:
    """Runs the baseline and every mutant in a small thread pool of pytest subprocesses.

    Everything is submitted up front (so the runs overlap with each other); :meth:`verdict`
    waits for one mutant's result. The baseline is one run of the union of the mutants' tests
    on an unmutated copy, without ``-x``, judged per test.
    """

    def __init__(self, mutants: Iterable[Mutant], *, jobs: int, timeout: float) -> None:
        self.mutants = [m for m in mutants if m.valid]
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="mutant")
        tests = _unique(test for mutant in self.mutants for test in mutant.tests)
        self._baseline: Future[Run] | None = None
        if tests:
            self._baseline = self._pool.submit(
                run_tests, tests, mutant=None, stop_at_first=False, timeout=timeout
            )
        self._runs = {
            m.name: self._pool.submit(
                run_tests, m.tests, mutant=m, stop_at_first=True, timeout=timeout
            )
            for m in self.mutants
        }

    def verdict(self, mutant: Mutant) -> Verdict:
        assert self._baseline is not None
        return judge(mutant, self._baseline.result(), self._runs[mutant.name].result())

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def default_jobs() -> int:
    text = os.environ.get(JOBS_ENV)
    if text is not None:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{JOBS_ENV} must be a whole number >= 1, got {text!r}")
        return int(text)
    return min(2, os.cpu_count() or 1)


def default_timeout() -> float:
    text = os.environ.get(TIMEOUT_ENV)
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds > 0, got {text!r}")
    return seconds


def _selects(node_id: str, reported: str) -> bool:
    return reported == node_id or reported.startswith((f"{node_id}[", f"{node_id}::"))


def _listed(mutant: Mutant, reported: str) -> bool:
    return any(_selects(test, reported) for test in mutant.tests)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""
