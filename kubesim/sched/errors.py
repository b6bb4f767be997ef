"""What a controlled run can report, as exceptions with the numbers a person needs."""

from __future__ import annotations


class ScheduleFailure(Exception):
    """Base class: a controlled run found a problem (or the harness did)."""


class Deadlock(ScheduleFailure):
    """Every controlled thread waits and nothing (no timer, no server event) can wake one."""

    breaks = "deadlock"  # the store property it breaks (kubesim.checks.store reads it)


class Livelock(ScheduleFailure):
    """The run exceeded its step or virtual-time bound without finishing."""

    breaks = "livelock"


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
    """Replaying the same schedule gave a different trace: uncontrolled nondeterminism.

    When the difference was located, ``record`` is the index of the first trace record where
    a run and its replay differ, and ``run_record``/``replay_record`` are those two records
    (None for a run that had already ended there).
    """

    def __init__(
        self,
        message: str,
        *,
        record: int | None = None,
        run_record: tuple[object, ...] | None = None,
        replay_record: tuple[object, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.record = record
        self.run_record = run_record
        self.replay_record = replay_record


class OutOfTime(KeyboardInterrupt):
    """The wall-clock deadline of a campaign (``kubesim check --max-time``) passed while a run
    waited for a controlled thread: the run is given up, as Ctrl-C gives it up, with no
    verdict. A ``KeyboardInterrupt`` so that nothing between the run and the campaign (a
    store's ``except Exception``, Hypothesis) takes it for a failure of the example."""


class _Abort(BaseException):
    """Raised inside controlled threads to unwind them when a run ends early.

    A ``BaseException`` so that a store's ``except Exception: retry`` cannot swallow it.
    """
