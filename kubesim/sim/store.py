"""The store under test, as kubesim sees it: a factory, and the hooks the store offers.

Contract (what every command that runs a store relies on):

- A *factory* is a callable ``factory(api_client) -> store``; ``api_client`` is the in-process
  ``kubernetes.client.ApiClient`` of the simulation. An ``async def`` factory is awaited on the
  store's own event loop and gets an in-process ``kubernetes_asyncio`` client instead; a store
  whose ``run`` is ``async def`` runs on that loop (:mod:`kubesim.sim.async_store`).
- ``store.run()`` (required) is the store's main loop: it lists and/or watches, handles
  events, and watches again when a watch ends. It is not expected to return.
- ``store.sizes()`` (optional) returns ``{structure name: number of entries}`` for the
  structures the store keeps (``pods``, ``endpoints``, an index). The memory verdict uses it: a
  structure that grows while the live set does not is a leak.

A factory is named on the command line as ``module:attribute`` (``models.kubearmor:before_pr1553``)
or ``path/to/file.py:attribute``. :func:`load_factory` resolves either; a file's folder goes first
on ``sys.path`` and the file is imported by its name, so its sibling modules import as they do in
its own repository.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from kubesim._core.words import did_you_mean

StoreFactory = Callable[[Any], Any]


class StoreContractError(ValueError):
    """A factory spec, a factory, or a store that does not meet the contract above."""


class FactoryFailed(StoreContractError):
    """The factory raised (or a hook kubesim asks for data did): the user's setup, not a
    finding. The original exception is ``__cause__``."""


def _import_file(path: str, spec: str) -> Any:
    if not os.path.isfile(path):
        raise StoreContractError(f"no such file {path!r} in factory spec {spec!r}")
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.splitext(os.path.basename(path))[0]
    if not name.isidentifier():
        raise StoreContractError(
            f"cannot import {path!r} (from {spec!r}) by name: {name!r} is not a Python "
            "identifier; rename the file"
        )
    loaded = sys.modules.get(name)
    if loaded is not None:
        where = getattr(loaded, "__file__", None)
        if where is None or os.path.abspath(where) != os.path.abspath(path):
            raise StoreContractError(
                f"cannot import {path!r} (from {spec!r}) as module {name!r}: that name is "
                f"already taken by {where or 'a built-in module'}; rename the file"
            )
        return loaded
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return _import(name, spec)


def _import(module_name: str, spec: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise StoreContractError(f"cannot import {module_name!r} for {spec!r}: {exc}") from exc
    except Exception as exc:  # the user's module failed while importing: say so, no traceback
        raise StoreContractError(
            f"importing {module_name!r} for {spec!r} raised {type(exc).__name__}: {exc}"
        ) from exc


def load_factory(spec: str) -> StoreFactory:
    """Resolve ``module:attribute`` or ``path/to/file.py:attribute`` to a callable factory.

    For ``module:attribute`` the current directory is importable, as for ``python -m``, so a
    repository's own ``models`` or ``tests`` packages can be named. Raises
    :class:`StoreContractError` naming the spec and what was expected.
    """
    if not isinstance(spec, str):
        raise StoreContractError(f"expected a factory spec as a string, got {spec!r}")
    module_part, sep, attribute = spec.rpartition(":")
    if not sep or not module_part or not attribute:
        raise StoreContractError(
            "expected a store factory as module:attribute or path/to/file.py:attribute "
            f"(e.g. models.kubearmor:before_pr1553), got {spec!r}"
        )
    if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        module = _import_file(module_part, spec)
        module_name = module_part
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = _import(module_part, spec)
        module_name = module_part
    target: Any = module
    for part in attribute.split("."):
        try:
            owner = target
            target = getattr(owner, part)
        except AttributeError:
            public = (name for name in dir(owner) if not name.startswith("_"))
            raise StoreContractError(
                f"{module_name!r} has no attribute {attribute!r} (from {spec!r})"
                + did_you_mean(part, public)
            ) from None
    if not callable(target):
        raise StoreContractError(
            f"{spec!r} is a {type(target).__name__}, not a callable factory(api_client) -> store"
        )
    return target  # type: ignore[no-any-return]


def check_store_contract(store: object, *, factory: str = "the factory") -> None:
    """Raise :class:`StoreContractError` unless ``store`` offers the hooks kubesim needs.

    ``factory`` names where the store came from, for the message.
    """
    if store is None:
        raise StoreContractError(
            f"{factory} returned None; expected a store object with a run() method "
            "(did the factory forget to return the store?)"
        )
    run = getattr(store, "run", None)
    if not callable(run):
        raise StoreContractError(
            f"{factory} returned a {type(store).__name__} with no callable run(); expected a "
            "store whose run() is its main loop (list and/or watch, handle events, watch again)"
        )
    sizes = getattr(store, "sizes", None)
    if sizes is not None and not callable(sizes):
        raise StoreContractError(
            f"{factory} returned a {type(store).__name__} whose sizes is a "
            f"{type(sizes).__name__}, not a method; expected sizes() -> {{name: entries}}"
        )


def store_sizes(store: object, *, factory: str = "the factory") -> dict[str, int]:
    """``store.sizes()`` checked against the contract; {} for a store without the hook."""
    sizes = getattr(store, "sizes", None)
    if sizes is None:
        return {}
    reported = sizes()
    if not isinstance(reported, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in reported.items()
    ):
        raise StoreContractError(
            f"the store from {factory}: sizes() returned {reported!r}; expected a mapping of "
            "structure name (str) to number of entries (int)"
        )
    return dict(reported)


def store_roots(store: object, factory: object = None) -> dict[str, object]:
    """What a store can keep things in: the store, and the globals of its own module(s).

    The roots :func:`kubesim.checks.retained.measure_retained` walks to measure what the store
    retains (module-level caches count; other modules' globals do not).
    """
    roots: dict[str, object] = {"store": store}
    names = {type(store).__module__, getattr(factory, "__module__", None)}
    for name in sorted(n for n in names if isinstance(n, str) and n in sys.modules):
        if name.split(".")[0] in ("kubesim", "builtins"):
            continue
        for key, value in vars(sys.modules[name]).items():
            if not (key.startswith("__") and key.endswith("__")):
                roots[f"{name}.{key}"] = value
    return roots
