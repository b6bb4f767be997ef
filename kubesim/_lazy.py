"""Lazy re-exports for package façades (PEP 562).

``import kubesim`` happens whenever anything under it is imported, the pytest plugin
included, which pytest loads in every run of every project where kubesim is installed. So the
façades name their exports in a table and import a submodule only when one of its names is
first used: a test run that never touches kubesim pays for nothing beyond these few lines.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``; ``table`` maps each name to its module.

    A name, once resolved, is stored on the package, so later lookups are plain attributes.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
