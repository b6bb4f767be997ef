"""What a failure shows of the store's code: its own frames first, libraries condensed.

A crash deep inside a client library used to keep the last 12 lines of its traceback, all of
them the library's, so the store's line that called in was never shown; and the timeline's
"at (the store's code)" column named the innermost frame outside kubesim, often a library's.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

import pytest

from kubesim._core.paths import CondensedStack, is_library
from kubesim.checks.store import _failure


def _module(path: Path, source: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"_crash_report_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def library(tmp_path: Path):
    """A library installed in a site-packages folder: ``outer(f)`` calls ``f`` through five
    frames of its own; ``where(own)`` is the stop location seen from inside it."""
    return _module(
        tmp_path / "venv" / "site-packages" / "somelib.py",
        """
        import sys
        from kubesim.sched.scheduler import _user_location

        def outer(f):
            return a(f)
        def a(f):
            return b(f)
        def b(f):
            return c(f)
        def c(f):
            return f()
        def fail():
            raise LookupError("deep inside the library")
        def where(own):
            return _user_location(sys._getframe(), own)
        """,
    )


def _crash_in(library: Any) -> traceback.TracebackException:
    """The traceback of store code (this file) calling into ``library``, which raises."""

    def store_code() -> None:
        library.outer(library.fail)

    try:
        store_code()
    except LookupError as error:
        return traceback.TracebackException.from_exception(error)
    raise AssertionError("the library did not raise")


def test_library_runs_are_condensed_around_the_stores_own_frames(library) -> None:
    text = "".join(CondensedStack.of(_crash_in(library).stack, own=()).format())
    assert "in store_code" in text
    assert "library.outer(library.fail)" in text
    assert "[... 3 more frames in libraries ...]" in text
    assert text.count("somelib.py") == 2  # where the store called in, and where it raised
    assert "in fail" in text


def test_a_crash_keeps_the_stores_line_and_the_exception(library) -> None:
    report = _crash_in(library)
    report.stack = CondensedStack.of(report.stack, own=())
    text = "".join(report.format())
    raised = RuntimeError(f"store thread 'store' raised LookupError\n{text}")
    found = _failure(type("Recording", (), {"failure": raised})())
    assert found is not None
    shown = "\n".join(found.details)
    assert "library.outer(library.fail)" in shown
    assert "LookupError: deep inside the library" in shown


def test_the_stop_location_is_the_stores_code_not_a_librarys(library, tmp_path: Path) -> None:
    helper = _module(
        tmp_path / "app" / "helper.py",
        """
        def through(library, own):
            return library.outer(lambda: library.where(own))
        """,
    )
    # Innermost first: the library's frames, the helper's (code outside every library), this
    # test's (the traced code). The traced code wins; without it, the helper.
    assert Path(__file__).name in helper.through(library, [str(Path(__file__))])
    assert "helper.py" in helper.through(library, [])
    assert "somelib.py" not in helper.through(library, [])


def test_installed_code_under_test_is_not_a_library(library) -> None:
    assert is_library(library.__file__)
    assert not is_library(library.__file__, own=[str(Path(library.__file__).parent)])
    assert is_library(sys.modules["json"].__file__)
