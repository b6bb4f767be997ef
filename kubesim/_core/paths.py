"""Paths in what kubesim shows a person: the same on every machine.

A report, a docs page and a CI log show tracebacks of the store's code and of the libraries it
uses. Their absolute paths name the machine (a home folder, a virtual environment's site-packages);
shown relative to the working directory, or from the package folder for installed code, they
read the same everywhere and still lead to the file.
"""

from __future__ import annotations

import os
import re

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
