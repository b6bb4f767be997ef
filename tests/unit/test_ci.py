"""CI (.ci/run) lints, type-checks and runs the README's test command, and fails if any fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_ci_stops_at_the_first_failing_step() -> None:
    assert "set -euo pipefail" in _commands()


def test_ci_runs_lint_typing_then_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # The suite runs in parallel under pytest-xdist (tests/conftest.py).
    test_command = 'pip install -e ".[test]" && python -m pytest -n auto --dist loadfile'
    assert test_command in readme
    commands = _commands()
    steps = ["ruff check .", "ruff format --check .", "mypy kubesim", test_command]
    positions = [commands.index(step) for step in steps]  # ValueError: a step is missing
    assert positions == sorted(positions), f"out of order: {steps}"
    assert commands[-1] == test_command
    # The tools run from the install, before any of them: the first install precedes them.
    install = next(
        i for i, c in enumerate(commands) if re.match(r'pip install .*-e "\.\[test\]"', c)
    )
    assert install < positions[0]


def test_the_test_extra_carries_the_lint_and_typing_tools_and_xdist() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {
        re.split(r"[<>=!;\[ ]", req, maxsplit=1)[0].lower()
        for req in project["optional-dependencies"]["test"]
    }
    assert {"ruff", "mypy", "types-pyyaml", "pytest-xdist"} <= names
