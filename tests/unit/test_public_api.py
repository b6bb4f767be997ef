"""The public import path: what each public module exports is exactly its ``__all__``.

A user imports from ``kubesim``, ``kubesim.sched`` (with ``kubesim.sched.aio``, the asyncio
runner whose replay hints name it), ``kubesim.checks`` and ``kubesim.testing`` (check_store,
store_test, strategies, steps); every other module is internal.
For each public module (ruff's RUF022 keeps ``__all__`` sorted): every name in ``__all__``
resolves, every public name the module holds is listed (Hypothesis' habit in
``strategies/__init__.py``), and no listed name lives in an underscore module unless it is
re-exported on purpose (below, with the reason). tests/docs/test_docs.py checks that the
documentation imports only from these modules.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

PUBLIC_MODULES = (
    "kubesim",
    "kubesim.sched",
    "kubesim.sched.aio",
    "kubesim.checks",
    "kubesim.testing",
)

# Names whose home is an underscore module, re-exported on purpose: the choice source, the
# virtual clock and the trace are the determinism contract's vocabulary, and a user passes
# them in (``Simulation(choices=...)``, ``kubesim.sched.aio.run(clock=...)``).
DELIBERATE_REEXPORTS = {"ChoiceSource", "SeededChoices", "Trace", "VirtualClock"}

# The names a user's code needs from the façade (what the docs and the README use); losing
# one of them is an API break, not a refactoring.
FACADE_ESSENTIALS = {
    "APIServer",
    "Simulation",
    "HTTPTransport",
    "kubernetes_client",
    "kubernetes_asyncio_client",
    "run_watch_restarts",
    "MemorySampler",
    "check_memory_bounded",
    "make_pod",
    "populate_pods",
    "controlled_server",
    "explore",
    "run_schedule",
    "IsolationMonitor",
    "ServerVersions",
    "check_reads_match_server",
    "check_snapshot_consistency",
}


def _held_public_names(module: types.ModuleType) -> set[str]:
    """The non-underscore names a module holds, other than submodules and ``annotations``."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        # pytest rewrites asserts in an installed plugin's distribution, adding "@py_builtins"
        and name.isidentifier()
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
        # Names imported only for annotations or by ``from typing import ...`` are not API.
        and getattr(value, "__module__", None) not in ("typing", "collections.abc")
    }


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported), f"{name}.__all__ lists a name twice"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what {name} does not define: {missing}"


@pytest.mark.parametrize("name", ["kubesim", "kubesim.sched", "kubesim.checks", "kubesim.testing"])
def test_nothing_public_is_missing_from_all(name: str) -> None:
    module = importlib.import_module(name)
    unlisted = _held_public_names(module) - set(module.__all__)
    assert not unlisted, f"public in {name} but not in __all__: {sorted(unlisted)}"


def test_aio_lists_its_runner_and_loop() -> None:
    # kubesim.sched.aio defines helpers of its own; what it promises is in __all__.
    aio = importlib.import_module("kubesim.sched.aio")
    assert {"run", "DeterministicEventLoop"} <= set(aio.__all__)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_exports_do_not_come_from_underscore_modules(name: str) -> None:
    module = importlib.import_module(name)
    hidden = {}
    for export in module.__all__:
        home = getattr(getattr(module, export), "__module__", None)
        if home is None or export in DELIBERATE_REEXPORTS:
            continue
        if any(part.startswith("_") for part in home.split(".")):
            hidden[export] = home
    assert not hidden, f"{name} exports names defined in underscore modules: {hidden}"


def test_facade_has_what_users_write() -> None:
    import kubesim

    assert set(kubesim.__all__) >= FACADE_ESSENTIALS, sorted(
        FACADE_ESSENTIALS - set(kubesim.__all__)
    )


def test_facade_names_are_the_objects_where_they_are_defined() -> None:
    # A re-export, not a copy: ``kubesim.explore is kubesim.sched.explore.explore``.
    import kubesim

    for export in kubesim.__all__:
        value = getattr(kubesim, export)
        home = getattr(value, "__module__", None)
        if home is None or not isinstance(value, type | types.FunctionType):
            continue
        assert getattr(importlib.import_module(home), value.__name__) is value, export


@pytest.mark.parametrize("name", ["kubesim", "kubesim.checks", "kubesim.testing"])
def test_the_lazy_table_is_what_all_lists(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__) - {"__version__"} == set(module._EXPORTS)
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = module.no_such_name


@pytest.mark.parametrize("package", ["kubesim", "kubesim.testing", "kubesim.checks"])
def test_importing_a_facade_imports_nothing_until_a_name_is_used(package: str) -> None:
    # pytest imports kubesim.testing.pytest_plugin (hence these packages) in every run where
    # kubesim is installed: they must not pull in the server, the simulation or Hypothesis.
    probe = (
        f"import sys, {package}; "
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
        "('kubesim', 'hypothesis', 'kubernetes', 'orjson')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    # kubesim._version is one literal (the version the build reads too).
    facade = {"kubesim", "kubesim._lazy", "kubesim._version", "kubesim.checks", "kubesim.testing"}
    assert loaded <= facade, loaded
