"""What a controlled run can report, as exceptions with the numbers a person needs."""

from __future__ import annotations


class ScheduleFailure(Exception):
    """Base class: a controlled run found a problem (or the harness did)."""


class Deadlock(ScheduleFailure):
    """Every controlled thread waits and nothing (no timer, no server event) can wake one."""


class Livelock(ScheduleFailure):
    """The run exceeded its step or virtual-time bound without finishing."""


class ThreadCrashed(ScheduleFailure):
    """A controlled thread raised; ``original`` (also ``__cause__``) is what it raised."""

    def __init__(self, message: str, *, thread_name: str, original: BaseException) -> None:
        super().__init__(message)
        self.thread_name = thread_name
        self.original = original
        self.__cause__ = original


class UncontrolledThread(ScheduleFailure):
    """A thread the scheduler does not control touched a simulated primitive during a run."""


class NondeterminismDetected(ScheduleFailure):
    """Replaying the same schedule gave a different trace: uncontrolled nondeterminism."""


class _Abort(BaseException):
    """Raised inside controlled threads to unwind them when a run ends early.

    A ``BaseException`` so that a store's ``except Exception: retry`` cannot swallow it.
    """
