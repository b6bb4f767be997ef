"""One CPU for a controlled run: hand-offs between its threads stay on one core.

A controlled run executes one thread at a time (the baton), so its threads gain nothing from
a second core, and they pay for one at every hand-off: the thread given the baton is woken on
another core (an inter-processor interrupt; on a virtual machine often a halted virtual CPU
woken by the hypervisor), then waits there for the GIL the other thread still holds, and runs
with caches the other core filled. ``bench/points.py`` measures a hand-off round trip both
ways; on the two-core development machine pinning made it about half as costly, and a default
``kubesim check`` example 10 to 25% cheaper.

:class:`CpuPin` pins the thread that starts a run to the CPU it is on, so every thread the run
starts inherits that CPU (Linux gives a new thread its creator's affinity), and gives each of
them the original set back when the run ends. The pin lasts one run (one example), so the
kernel can still spread several processes (pytest-xdist's workers) between runs. Nested runs
(a fresh store compared inside an example) find the CPU already pinned and keep it.

Linux only: elsewhere, or when the process may use a single CPU anyway, it does nothing. It
changes which core runs a thread, never what runs, so schedules and traces are unaffected.
"""

from __future__ import annotations

import os

_TASKS = "/proc/self/task"


def _current_cpu() -> int | None:
    """The CPU the calling thread is running on (field 39 of its ``stat``), or None."""
    try:
        with open("/proc/thread-self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        # fields[0] is field 3 (state): field 39 (processor) is fields[36].
        return int(fields[36])
    except (OSError, IndexError, ValueError):
        return None


def _tasks() -> set[int]:
    try:
        return {int(name) for name in os.listdir(_TASKS)}
    except OSError:
        return set()


class CpuPin:
    """Pin a run's threads to one CPU for the run's length (see the module docstring)."""

    __slots__ = ("_before", "_saved")

    def __init__(self) -> None:
        self._saved: set[int] | None = None
        self._before: set[int] = set()

    @property
    def pinned(self) -> bool:
        return self._saved is not None

    def pin(self) -> None:
        """Pin the calling thread (and so the threads it and they start) to its current CPU."""
        if self._saved is not None or not hasattr(os, "sched_setaffinity"):
            return
        allowed = os.sched_getaffinity(0)
        if len(allowed) < 2:
            return  # already on one CPU (a nested run, taskset, a one-core machine)
        cpu = _current_cpu()
        if cpu not in allowed:
            cpu = min(allowed)
        self._before = _tasks()
        os.sched_setaffinity(0, {cpu})
        self._saved = allowed

    def release(self) -> None:
        """Give the calling thread, and every thread started while pinned, the CPUs it had."""
        saved, self._saved = self._saved, None
        if saved is None:
            return
        os.sched_setaffinity(0, saved)
        for tid in _tasks() - self._before:
            try:
                os.sched_setaffinity(tid, saved)
            except ProcessLookupError:
                continue  # it ended between the listing and the call: nothing to give back
        self._before = set()
