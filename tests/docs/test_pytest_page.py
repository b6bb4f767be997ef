"""docs/how-to/pytest.md shows what pytest prints: a failing store test's report and a passing
one's ``-rP`` section. They are pytest's output, not a command of the page's ``sh`` blocks, so
test_docs.py cannot compare them: this test runs pytest on the page's own modules and compares
each shown excerpt with the same lines of what it printed, as test_docs.py compares outputs
(``compare_shown``: times masked, and hashes and tokens off DOCS_PYTHON).
``KUBESIM_REGENERATE_DOCS=1`` rewrites the excerpts instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_docs import ALL_BLOCKS, ROOT, Block, _write_modules, compare_shown

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


def test_the_failure_shown_is_what_pytest_prints(tmp_path: Path) -> None:
    printed = _pytest(tmp_path, "test_store.py")
    assert "kubesim: mystore:factory broke" in printed, printed[-3000:]
    compare_shown(_shown("______"), _excerpt(printed, "______", "replay: kubesim replay"))


@pytest.mark.slow
def test_the_passing_section_shown_is_what_pytest_prints(tmp_path: Path) -> None:
    printed = _pytest(tmp_path, "-rP", "test_cache.py")
    assert "Captured kubesim call" in printed, printed[-3000:]
    compare_shown(
        _shown("-----"),
        _excerpt(printed, "-" * 28 + " Captured kubesim call", "oracles not selected"),
    )
