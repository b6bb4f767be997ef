"""Nothing in the repository points at files outside it (notes the project was built from).

Comments, docstrings and docs say what the reader needs in the project's own words, or point at a
page in docs/. ``PENDING`` lists files being rewritten on other branches at the time this test
was written; each entry must still contain such a reference (so the list shrinks as they land).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"shared/(?:reference|seeds)/|\bARCHITECTURE\.md")
PENDING: set[str] = set()
THIS = {"tests/docs/test_no_outside_references.py", "tests/docs/test_docs.py"}


def _tracked_text_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (an sdist): every file under the usual folders.
        out = [
            p.relative_to(ROOT).as_posix()
            for folder in ("kubesim", "models", "tests", "bench", "docs")
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
        ] + ["README.md"]
    return [p for p in out if p.endswith((".py", ".md", ".toml", ".ini", ".txt")) or "." not in p]


def test_no_file_points_outside_the_repository() -> None:
    offenders = set()
    for path in _tracked_text_files():
        if path in THIS or not (ROOT / path).is_file():
            continue
        text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
        if OUTSIDE.search(text):
            offenders.add(path)
    assert offenders - PENDING == set(), f"files pointing outside the repository: {offenders}"
    assert PENDING - offenders == set(), (
        f"no longer pointing outside, remove from PENDING: {sorted(PENDING - offenders)}"
    )
