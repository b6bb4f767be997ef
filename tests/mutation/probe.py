"""pytest plugin loaded (``-p``) into each mutant's test subprocess; nothing else imports it.

It makes the run trustworthy and readable by the parent:

- it checks that ``kubesim`` was imported from the copy under test (``KUBESIM_MUTATION_PACKAGE``)
  and not from the repository: otherwise the "mutant" would be the real code, and a pass or a
  fail would say nothing about it. A mismatch ends the run with exit code 3;
- it writes every test report (node id, phase, outcome) and the imported package's location as
  JSON to ``KUBESIM_MUTATION_REPORT``, so the parent knows which test failed without parsing
  pytest's terminal output.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

PACKAGE_ENV = "KUBESIM_MUTATION_PACKAGE"
REPORT_ENV = "KUBESIM_MUTATION_REPORT"
WRONG_PACKAGE = 3  # pytest's INTERNAL_ERROR code: the harness, not the tests, is at fault

_reports: list[dict[str, str]] = []


def _imported_package() -> str:
    import kubesim

    return os.path.dirname(os.path.realpath(kubesim.__file__))


def pytest_sessionstart(session: pytest.Session) -> None:
    expected = os.path.realpath(os.environ[PACKAGE_ENV])
    imported = _imported_package()
    if imported != expected:
        _write(imported=imported, exitstatus=WRONG_PACKAGE)
        pytest.exit(
            f"kubesim was imported from {imported}, not from the copy under test {expected}; "
            f"sys.path={sys.path}",
            returncode=WRONG_PACKAGE,
        )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _reports.append({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _write(imported=_imported_package(), exitstatus=int(exitstatus))


def _write(**fields: Any) -> None:
    with open(os.environ[REPORT_ENV], "w") as out:
        json.dump({**fields, "reports": _reports}, out)
