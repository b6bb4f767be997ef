"""Controlled concurrency: a deterministic scheduler for the store's threads.

See :mod:`kubesim.sched.scheduler` for the design and :func:`explore` for the entry point that
runs many schedules and reports the first failure (:class:`Found`) with its replay: a
``kubesim schedule`` command, or the equivalent :func:`run_schedule` call.
:mod:`kubesim.sched.aio` is the asyncio counterpart: a deterministic event loop and ``run``.
"""

# The patches register themselves with the scheduler, which installs them for each run.
import kubesim.sched.patches  # noqa: F401
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
from kubesim.sched.explore import Exploration, Found, explore, run_schedule
from kubesim.sched.scheduler import RunResult, Scheduler
from kubesim.sched.strategies import (
    PCT,
    InvalidStrategy,
    Preemptions,
    RandomWalk,
    Strategy,
    describe_strategy,
    parse_strategy,
    portfolio,
)

__all__ = [
    "PCT",
    "AsyncDeadlock",
    "AsyncLivelock",
    "Deadlock",
    "DeterministicEventLoop",
    "Exploration",
    "Found",
    "InvalidStrategy",
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
    "describe_strategy",
    "explore",
    "parse_strategy",
    "portfolio",
    "run_schedule",
]
