"""Paths in what kubesim shows a person: the same on every machine.

A report, a docs page and a CI log show tracebacks of the store's code and of the libraries it
uses. Their absolute paths name the machine (a home folder, a virtual environment's site-packages);
shown relative to the working directory, or from the package folder for installed code, they
read the same everywhere and still lead to the file.
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Sequence

_FILE_LINE = re.compile(r'^(\s*File ")([^"]+)(")', re.MULTILINE)


def display_path(path: str) -> str:
    """A path as a reader finds it: from the package folder for installed code
    (``kubespawner/reflector.py``, wherever the environment is, even one inside the working
    directory as CI's often is), else relative to the working directory."""
    marker = f"{os.sep}site-packages{os.sep}"
    if marker in path:
        return path.split(marker, 1)[1]
    cwd = os.getcwd() + os.sep
    return path[len(cwd) :] if path.startswith(cwd) else path


def readable_traceback(text: str) -> str:
    """``text`` with the path of every ``File "..."`` line of a traceback as
    :func:`display_path` shows it."""
    return _FILE_LINE.sub(lambda m: m[1] + display_path(m[2]) + m[3], text)


# Installed packages and the standard library: a library's frames, unless the code under test
# is itself installed (a third-party store), which the caller says with ``own``.
_LIBRARY_DIRS = (
    f"{os.sep}site-packages{os.sep}",
    f"{os.sep}dist-packages{os.sep}",
)
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
# kubesim's own frames (a leaf run untraced, a transport) are no more the store's than a
# library's are.
_KUBESIM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_library(path: str, own: Sequence[str] = ()) -> bool:
    """True for a frame of installed, standard-library or kubesim code that is not one of
    ``own`` (path prefixes of the code under test)."""
    if own and path.startswith(tuple(own)):
        return False
    return path.startswith((_STDLIB_DIR, _KUBESIM_DIR)) or any(
        marker in path for marker in _LIBRARY_DIRS
    )


class CondensedStack(traceback.StackSummary):
    """A stack whose runs of three or more library frames print as their first frame (where
    the code under test called in), a line saying how many were left out, and their last
    (where it raised): a crash deep in a client library keeps the store's own frames in the
    few lines a report shows, instead of a screenful of the library's."""

    own: tuple[str, ...] = ()

    @classmethod
    def of(cls, stack: traceback.StackSummary, own: Sequence[str]) -> CondensedStack:
        condensed = cls(stack)
        condensed.own = tuple(own)
        return condensed

    def format(self) -> list[str]:
        lines: list[str] = []
        run: list[traceback.FrameSummary] = []

        def flush() -> None:
            kept = run if len(run) < 3 else [run[0], run[-1]]
            for frame in kept:
                lines.extend(traceback.StackSummary.from_list([frame]).format())
                if len(run) >= 3 and frame is run[0]:
                    lines.append(f"  [... {len(run) - 2} more frames in libraries ...]\n")
            run.clear()

        for frame in self:
            if is_library(frame.filename, self.own):
                run.append(frame)
                continue
            flush()
            lines.extend(traceback.StackSummary.from_list([frame]).format())
        flush()
        return lines
