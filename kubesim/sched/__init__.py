"""Controlled concurrency: a deterministic scheduler for the store's threads.

See :mod:`kubesim.sched.scheduler` for the design and :func:`kubesim.sched.explore.explore` for
the entry point that runs many schedules and reports the first failure with its replay.
:mod:`kubesim.sched.aio` is the asyncio counterpart: a deterministic event loop and ``run``.
"""

from kubesim.sched.aio import (
    AsyncDeadlock,
    AsyncLivelock,
    DeterministicEventLoop,
    RealIOUnsupported,
)
from kubesim.sched.errors import (
    Deadlock,
    Livelock,
    NondeterminismDetected,
    ScheduleFailure,
    ThreadCrashed,
    UncontrolledThread,
)
from kubesim.sched.scheduler import RunResult, Scheduler
from kubesim.sched.strategies import PCT, Preemptions, RandomWalk, Strategy, portfolio

__all__ = [
    "PCT",
    "AsyncDeadlock",
    "AsyncLivelock",
    "Deadlock",
    "DeterministicEventLoop",
    "Livelock",
    "NondeterminismDetected",
    "Preemptions",
    "RandomWalk",
    "RealIOUnsupported",
    "RunResult",
    "ScheduleFailure",
    "Scheduler",
    "Strategy",
    "ThreadCrashed",
    "UncontrolledThread",
    "portfolio",
]
