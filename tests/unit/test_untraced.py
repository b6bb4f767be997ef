"""kubesim's own code runs with the store's scheduling-point trace suspended, and only that."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from kubesim._core.untraced import leaf_of, points_trace, untraced, untraced_leaf


def _calls_seen(trace_factory: Any) -> list[str]:
    """Names of the functions a trace installed by ``trace_factory`` saw called, in a thread
    that calls ``inner`` once directly and once through :func:`untraced`."""
    seen: list[str] = []

    def inner() -> str:
        return "done"

    def body() -> None:
        sys.settrace(trace_factory(seen))
        try:
            inner()
            assert untraced(inner) == "done"
            inner()
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return [name for name in seen if name == "inner"]


def _tracer(seen: list[str]) -> Any:
    def trace(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_name)

    return trace


def test_kubesims_points_trace_is_suspended_for_its_own_code_and_restored() -> None:
    # The call through untraced() is not seen; the one after it is: the trace came back.
    assert _calls_seen(lambda seen: points_trace(_tracer(seen))) == ["inner", "inner"]


def test_a_foreign_trace_function_keeps_seeing_everything() -> None:
    # A coverage tool or a debugger is not kubesim's to switch off.
    assert _calls_seen(_tracer) == ["inner", "inner", "inner"]


def test_the_trace_comes_back_when_the_call_raises() -> None:
    seen: list[str] = []
    trace = points_trace(_tracer(seen))

    def fails() -> None:
        raise ValueError("boom")

    def body() -> None:
        sys.settrace(trace)
        try:
            with pytest.raises(ValueError, match="boom"):
                untraced(fails)
            seen.append("restored" if sys.gettrace() is trace else "lost")
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen[-1] == "restored"


def _leaf_calls_seen(traced: tuple[str, ...]) -> list[str]:
    """Functions a points trace covering ``traced`` saw called through a library leaf."""
    seen: list[str] = []

    def helper() -> str:  # what the leaf calls: in this file, like the leaf itself
        return "done"

    def decode() -> str:
        return helper()

    wrapped = untraced_leaf(decode)

    def body() -> None:
        sys.settrace(points_trace(_tracer(seen), traced))
        try:
            assert wrapped() == "done"
            helper()  # after the leaf: traced again
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return [name for name in seen if name in ("decode", "helper")]


def test_a_library_leaf_runs_untraced_unless_its_file_is_traced() -> None:
    # The store's module is traced, the library is not: the leaf and what it calls are unseen,
    # and the trace is back as soon as the leaf returns.
    assert _leaf_calls_seen(("/nowhere/store_module.py",)) == ["helper"]
    # The user asked for points in the library itself: they stay.
    assert _leaf_calls_seen((__file__,)) == ["decode", "helper", "helper"]


def test_a_leaf_knows_what_it_wraps() -> None:
    def leaf() -> None:
        pass

    assert leaf_of(untraced_leaf(leaf)) is leaf
    assert leaf_of(leaf) is None


def test_every_listed_leaf_of_an_installed_library_is_wrapped_for_the_run_only() -> None:
    import importlib

    from kubesim.transport.client_leaves import LEAVES, untraced_leaves

    found = []
    for module_name, class_name, name in LEAVES:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue  # a library (or a version of it) not installed here
        if name in cls.__dict__:
            found.append((cls, name))
    assert found, "no listed leaf is installed: the test checks nothing"
    with untraced_leaves():
        assert [(c, n) for c, n in found if leaf_of(c.__dict__[n]) is None] == []
    assert [(c, n) for c, n in found if leaf_of(c.__dict__[n]) is not None] == []
