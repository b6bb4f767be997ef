"""Shared fixtures. Test tiers: unit/ (fast, per layer), conformance/ (raw HTTP against
``kubesim serve``), integration/ (real clients: the official client, kubectl), quality/ (kubesim
finds the known bugs in models/ and passes the fixed ones).

The suite runs in parallel under pytest-xdist (``python -m pytest -n auto --dist loadfile``,
the README's test command) and serially without ``-n``. ``--dist loadfile`` gives each test file
to one worker: module fixtures (kubesim serve, the packaging build) start once, and the mutation
check, which starts every selected mutant's run from a session fixture, runs once (under
``--dist load`` each worker would start them all). ``--dist loadgroup`` would be finer, but
pytest-xdist 3.8 cannot group under pytest 9 (it renames ``item._nodeid``, which pytest 9 no
longer reads). Lines that tests add to pytest's terminal summary (the wire fuzzer's request
count, the mutation score) travel in their reports' ``user_properties``: under xdist the summary
is written by the controller process, which runs no test and loads only this conftest, and the
reports are what reaches it from the workers.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

# models/ lives at the repository root, beside the package; tests import it by name.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kubesim import APIServer  # noqa: E402

# The user_properties names of the summary's figures (the tests that record them name them too).
WIRE_FUZZ_SENT = "kubesim_wire_fuzz_sent"  # int: requests the wire fuzzer sent in one test
MUTATION_VERDICT = "kubesim_mutation_verdict"  # dict: name, status, detail, why


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist (-p no:xdist) has no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are cores. Many tests wait on something other
    than this process (kubectl and ``kubesim check`` subprocesses, the mutation check's runs, a
    real client's backoff in wall time), and on two cores a third worker fills those waits:
    measured from fresh worktrees, 929 s of wall with two workers, 833 s with three, the same
    CPU time and every test passing."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture
def server() -> APIServer:
    return APIServer(seed=1)


class _Summary:
    """Collects the summary figures from every test report (a worker's too) and prints them."""

    def __init__(self) -> None:
        self.sent: dict[str, int] = {}  # node id -> requests sent
        self.verdicts: dict[str, dict[str, Any]] = {}  # mutant name -> verdict, in report order

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == WIRE_FUZZ_SENT:
                self.sent[report.nodeid] = int(value)
            elif name == MUTATION_VERDICT:
                self.verdicts[value["name"]] = dict(value)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        sent = sum(self.sent.values())
        if sent:
            terminalreporter.write_line(f"wire fuzzer: {sent} hostile requests sent, server alive")
        if self.verdicts:
            _write_mutation_score(terminalreporter, list(self.verdicts.values()))


def _write_mutation_score(
    terminalreporter: pytest.TerminalReporter, verdicts: list[dict[str, Any]]
) -> None:
    """``kubesim mutation score: K/N named mutants killed``, then one line per mutant."""
    killed = sum(verdict["status"] == "killed" for verdict in verdicts)
    terminalreporter.section("kubesim mutation check")
    terminalreporter.write_line(
        f"kubesim mutation score: {killed}/{len(verdicts)} named mutants killed"
    )
    width = max(len(verdict["name"]) for verdict in verdicts)
    for verdict in verdicts:
        name, status, detail = verdict["name"], verdict["status"], verdict["detail"]
        if status == "killed":
            terminalreporter.write_line(f"  killed   {name:<{width}}  {detail}")
        else:
            terminalreporter.write_line(
                f"  {status.upper():<8} {name:<{width}}  {detail}  [{verdict['why']}]", red=True
            )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Summary(), "kubesim-tests-summary")
