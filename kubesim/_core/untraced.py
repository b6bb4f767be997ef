"""Running kubesim's own code with the calling thread's trace function suspended.

A controlled run traces the store's module with ``sys.settrace`` (scheduling points at its
opcodes: :mod:`kubesim.sched.tracing`). On Python 3.10 and 3.11 a thread with a trace function
runs *every* frame on the interpreter's tracing path and calls the trace function at every
call, traced file or not; the in-process server answering the store's request runs in the
store's thread, and paid for that on each of its calls. Its code has no traced points (it is
never the store under test), so suspending the trace around it changes no point and no
schedule, only the cost. Frames keep their own trace functions meanwhile: the store's code
is traced again as soon as control returns to it.

Only kubesim's own trace functions are suspended (those marked by :func:`points_trace`): a
coverage tool or a debugger tracing the same thread keeps seeing everything.

:func:`untraced_leaf` does the same for a client library's *leaf* functions: those that call
no code of the store (decoding a response into models, encoding a body, building a request),
where the store's thread spends most of its time. The store's own code keeps every point; a
library the user asked to trace (its files among the traced prefixes) keeps its points too.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_gettrace = sys.gettrace
_settrace = sys.settrace
_MARK = "_kubesim_points"
_LEAF = "_kubesim_leaf_of"


def points_trace(
    function: Callable[..., object], traced: tuple[str, ...] = ("",)
) -> Callable[..., object]:
    """Mark a global trace function as kubesim's scheduling points (see :func:`untraced`);
    ``traced``: the path prefixes of the files it gives points to (:func:`untraced_leaf`)."""
    setattr(function, _MARK, traced or ("",))
    return function


def untraced(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``function(*args, **kwargs)`` with the calling thread's scheduling-point trace function
    off, restored afterwards whatever happens (a thread without one pays a ``sys.gettrace()``
    and an attribute lookup)."""
    trace = _gettrace()
    if trace is None or not getattr(trace, _MARK, False):
        return function(*args, **kwargs)
    _settrace(None)
    try:
        return function(*args, **kwargs)
    finally:
        _settrace(trace)


def untraced_leaf(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` wrapped to run untraced (as :func:`untraced`) unless its own file is one
    the points trace covers. For library functions that never call back into the store."""
    filename = function.__code__.co_filename

    @functools.wraps(function)
    def leaf(*args: P.args, **kwargs: P.kwargs) -> R:
        trace = _gettrace()
        traced = getattr(trace, _MARK, None) if trace is not None else None
        if traced is None or filename.startswith(traced):
            return function(*args, **kwargs)
        return untraced(function, *args, **kwargs)

    setattr(leaf, _LEAF, function)
    return leaf


def leaf_of(function: Callable[..., object]) -> Callable[..., object] | None:
    """What :func:`untraced_leaf` wrapped (None: ``function`` is no such wrapper)."""
    return getattr(function, _LEAF, None)
