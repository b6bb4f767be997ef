"""kubesim's own code runs with the store's scheduling-point trace suspended, and only that."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from kubesim._core.untraced import points_trace, untraced


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
