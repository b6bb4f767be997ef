"""docs/how-to/pytest.md shows what pytest prints: a failing store test's report and a passing
one's ``-rP`` section. They are pytest's output, not a command of the page's ``sh`` blocks, so
test_docs.py cannot compare them: this test runs pytest on the page's own modules and compares
each shown excerpt with the same lines of what it printed (times and, off DOCS_PYTHON, hashes
and tokens masked). ``KUBESIM_REGENERATE_DOCS=1`` rewrites the excerpts instead."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_docs import (
    ALL_BLOCKS,
    DOCS_PYTHON,
    ROOT,
    Block,
    _masked,
    _rewrite,
    _write_modules,
)

PAGE = "docs/how-to/pytest.md"


def _excerpt(printed: str, first: str, last: str) -> str:
    """The lines of ``printed`` from the one starting with ``first`` to the one starting with
    ``last`` (both kept)."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(last))
    return "\n".join(lines[start : end + 1]) + "\n"


def _shown(starting: str) -> Block:
    return next(
        b
        for b in ALL_BLOCKS
        if b.page == PAGE and b.kind == "text" and b.code.lstrip().startswith(starting)
    )


def _pytest(tmp_path: Path, *args: str) -> str:
    _write_modules(PAGE, tmp_path)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    env["COLUMNS"] = "80"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc.stdout


def _compare(shown: Block, printed: str) -> None:
    if os.environ.get("KUBESIM_REGENERATE_DOCS"):
        _rewrite(shown, printed)
        return
    exact = platform.python_version() == DOCS_PYTHON
    assert _masked(printed, exact=exact) == _masked(shown.code, exact=exact), (
        f"{shown.where}: the excerpt is not what pytest prints now "
        "(KUBESIM_REGENERATE_DOCS=1 rewrites it):\n" + printed
    )


def test_the_failure_shown_is_what_pytest_prints(tmp_path: Path) -> None:
    printed = _pytest(tmp_path, "test_store.py")
    assert "kubesim: mystore:factory broke" in printed, printed[-3000:]
    _compare(_shown("______"), _excerpt(printed, "______", "replay: kubesim replay"))


@pytest.mark.slow
def test_the_passing_section_shown_is_what_pytest_prints(tmp_path: Path) -> None:
    printed = _pytest(tmp_path, "-rP", "test_cache.py")
    assert "Captured kubesim call" in printed, printed[-3000:]
    _compare(
        _shown("-----"),
        _excerpt(printed, "-" * 28 + " Captured kubesim call", "oracles not selected"),
    )
