"""Installing the simulated primitives and virtual time for the duration of a controlled run.

Patched (and restored afterwards, even on failure):

- ``threading.Lock``, ``RLock``, ``Condition`` (and therefore ``Event``, ``Semaphore``,
  ``BoundedSemaphore``, ``Barrier``, ``Timer``, which build on them by name);
- ``threading.Thread.start`` and ``join``: threads started by controlled code are adopted;
- ``queue.SimpleQueue`` -> ``queue._PySimpleQueue`` (the C one blocks in C), ``queue.time``
  (queue timeouts read this name);
- ``concurrent.futures.thread._global_shutdown_lock`` (a module-level real lock that
  ``submit`` holds across a scheduling point);
- ``time.sleep``, ``time.monotonic``, ``time.time``, ``time.perf_counter`` and their ``_ns``
  forms: virtual time for controlled threads, the real functions for every other thread.

Limit: names bound before the run (``from threading import Lock`` at import time, a lock created
at module level) keep the real objects. Blocking on one of those in a controlled thread is
reported as "blocked outside the simulation" with the thread's stack, not a silent hang.
"""

from __future__ import annotations

import concurrent.futures.thread as _futures_thread
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kubesim._core.clock import DEFAULT_EPOCH
from kubesim.sched import scheduler as _sched
from kubesim.sched.originals import (
    ORIGINAL_CONDITION,
    ORIGINAL_JOIN,
    ORIGINAL_START,
    ORIGINAL_THREAD,
)
from kubesim.sched.primitives import SimCondition, SimLock, SimRLock

_REAL: dict[str, Callable[..., Any]] = {
    "sleep": time.sleep,
    "monotonic": time.monotonic,
    "time": time.time,
    "perf_counter": time.perf_counter,
    "monotonic_ns": time.monotonic_ns,
    "time_ns": time.time_ns,
    "perf_counter_ns": time.perf_counter_ns,
}
_EPOCH_SECONDS = DEFAULT_EPOCH.timestamp()
# Virtual monotonic clocks start here, so code that treats 0 as "unset" keeps working.
_MONOTONIC_BASE = 1000.0

_saved: dict[tuple[Any, str], Any] = {}


def _controlled() -> _sched.Scheduler | None:
    scheduler = _sched.active()
    if scheduler is not None and scheduler.current_thread() is not None:
        return scheduler
    return None


def _sleep(seconds: float) -> None:
    scheduler = _controlled()
    if scheduler is None:
        _REAL["sleep"](seconds)
    else:
        scheduler.sleep(seconds)


def _virtual(name: str, offset: float) -> Callable[[], float]:
    real = _REAL[name]

    def now() -> float:
        scheduler = _controlled()
        if scheduler is None:
            return float(real())
        return offset + scheduler.clock.now()

    now.__name__ = name
    return now


def _virtual_ns(name: str, offset: float) -> Callable[[], int]:
    real = _REAL[name]

    def now() -> int:
        scheduler = _controlled()
        if scheduler is None:
            return int(real())
        return int((offset + scheduler.clock.now()) * 1_000_000_000)

    now.__name__ = name
    return now


def _start(self: threading.Thread) -> None:
    scheduler = _sched.active()
    if scheduler is None or scheduler.current_thread() is None:
        ORIGINAL_START(self)
        return
    scheduler.adopt(self)


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    scheduler = _sched.active()
    if (
        scheduler is not None
        and scheduler.current_thread() is not None
        and scheduler.is_controlled(self)
        and not scheduler.join(self, timeout)
    ):
        return  # timed out in virtual time, as Thread.join(timeout) returns
    ORIGINAL_JOIN(self, timeout)


def _patch(owner: Any, name: str, value: Any) -> None:
    _saved[(owner, name)] = getattr(owner, name)
    setattr(owner, name, value)


def install() -> None:
    if _saved:
        raise RuntimeError("kubesim scheduler patches are already installed")
    for owner, name, value in _PATCHES:
        _patch(owner, name, value)
    # A fresh one per run: a thread unwound while holding it must not leave it held.
    _patch(_futures_thread, "_global_shutdown_lock", SimLock())


# What every run installs, built once: the stand-ins read the active scheduler when called.
_PATCHES: tuple[tuple[Any, str, Any], ...] = (
    (threading, "Lock", SimLock),
    (threading, "RLock", SimRLock),
    (threading, "Condition", SimCondition),
    (threading.Thread, "start", _start),
    (threading.Thread, "join", _join),
    (queue, "SimpleQueue", queue._PySimpleQueue),  # type: ignore[attr-defined]
    (queue, "time", _virtual("monotonic", _MONOTONIC_BASE)),
    (time, "sleep", _sleep),
    (time, "monotonic", _virtual("monotonic", _MONOTONIC_BASE)),
    (time, "perf_counter", _virtual("perf_counter", _MONOTONIC_BASE)),
    (time, "time", _virtual("time", _EPOCH_SECONDS)),
    (time, "monotonic_ns", _virtual_ns("monotonic_ns", _MONOTONIC_BASE)),
    (time, "perf_counter_ns", _virtual_ns("perf_counter_ns", _MONOTONIC_BASE)),
    (time, "time_ns", _virtual_ns("time_ns", _EPOCH_SECONDS)),
)


def uninstall() -> None:
    for (owner, name), value in reversed(list(_saved.items())):
        setattr(owner, name, value)
    _saved.clear()


class _Patching:
    """This module as the scheduler sees it (:func:`kubesim.sched.scheduler.use_patching`)."""

    install = staticmethod(install)
    uninstall = staticmethod(uninstall)


# The scheduler installs these for each controlled run without importing this module (which
# imports it): kubesim.sched imports this module, which registers itself here.
_sched.use_patching(_Patching())

__all__ = [
    "ORIGINAL_CONDITION",
    "ORIGINAL_JOIN",
    "ORIGINAL_START",
    "ORIGINAL_THREAD",
    "install",
    "uninstall",
]
