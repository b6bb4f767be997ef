"""A simulation: one fake API server, one virtual clock, one choice source, and the store.

The store under test runs its own code, unchanged, in controlled threads of a
:class:`~kubesim.sched.Scheduler` in *external-driver* mode: the caller's thread is the driver
and stays uncontrolled. :meth:`Simulation.settle` lets the store's threads run, one at a time,
until every one of them waits (on a watch read with nothing ready, a sleep, a lock, an event,
a queue): the run is *quiescent* and the driver has control again. It then applies the next
step of the scenario (writes, faults, time) and settles again.

While the store runs, its ``time.sleep`` and clocks are virtual, the threads it starts are
adopted, and the locks, events and queues it creates are the scheduler's simulated ones. Virtual
time moves only in :meth:`Simulation.advance`, one timer at a time, the store settling after
each. Which thread runs at each scheduling point is the strategy's choice (by default none is
preempted, so the order is fixed); with ``traced`` modules and a strategy such as
:class:`~kubesim.sched.PCT`, a simulation also explores interleavings of the store's own
threads. Every run with the same seed and strategy interleaves identically.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from kubesim._core import SeededChoices, Trace, VirtualClock
from kubesim.apiserver.server import APIServer
from kubesim.sched.errors import ThreadCrashed
from kubesim.sched.scheduler import (
    DEFAULT_HANDOFF_TIMEOUT,
    DEFAULT_MAX_STEPS,
    DEFAULT_SPIN_AFTER,
    DEFAULT_STUCK_AFTER,
    BlockedOutsideSimulation,
    ControlledThread,
    Scheduler,
    State,
)
from kubesim.sched.strategies import Preemptions, Strategy
from kubesim.sim.threads import ScheduledWait, make_atomic

__all__ = [
    "DEFAULT_HANDOFF_TIMEOUT",
    "DEFAULT_SPIN_AFTER",
    "DEFAULT_STUCK_AFTER",
    "SimulatedThread",
    "Simulation",
    "SimulationStopped",
    "StoreBlockedOutsideSimulation",
    "StoreCrashed",
]


class SimulationStopped(BaseException):
    """How a stopped simulation's threads unwind: a ``BaseException``, so that a store's
    ``except Exception: retry`` loop cannot swallow it. (The scheduler raises its own
    ``BaseException`` for this; the name stays for code that refers to it.)
    """


class StoreBlockedOutsideSimulation(RuntimeError):
    """A store thread is blocked on something the simulation does not control (a real socket,
    a real lock created before the run, a C extension's wait). The message names the thread
    and shows its innermost frames.
    """

    breaks = "blocked"  # the store property it breaks (kubesim.checks.store reads it)


class StoreCrashed(RuntimeError):
    """A store thread raised; the original exception is ``__cause__``."""

    breaks = "crash"


class SimulatedThread:
    """A controlled thread of a simulation, as the driver sees it."""

    def __init__(self, thread: ControlledThread) -> None:
        self._thread = thread

    @property
    def name(self) -> str:
        return self._thread.name

    @property
    def finished(self) -> bool:
        return self._thread.state is State.FINISHED

    def __repr__(self) -> str:
        return f"<SimulatedThread {self.name!r} {self._thread.state.value}>"


class Simulation:
    """Drive a store against a fake API server, deterministically for ``seed``.

    Typical use::

        with Simulation(seed=7) as sim:
            sim.server.create("pods", pod, namespace="default")
            store = MyStore(sim.kubernetes_client())
            sim.start(store.run)      # runs until the store's threads all wait
            sim.server.expire_watches()
            sim.settle()              # the store reacts (re-watches, handles events), then waits
            sim.advance(30)           # 30 virtual seconds: sleeps end, watches time out

    Options (keyword-only): ``strategy`` picks who runs at each scheduling point (default:
    :class:`~kubesim.sched.Preemptions` with none, a fixed order); ``traced`` modules or paths
    get a scheduling point at every opcode or line (``granularity``); ``max_steps`` bounds the
    scheduling points of one settle; ``stuck_after`` (wall seconds) is how long a store thread
    may sit still outside the simulation before it is reported, ``spin_after`` how long it may
    use CPU without a scheduling point (a busy-wait) before it is reported and stopped;
    ``server_type`` is the
    server's class (:class:`kubesim.Cluster`, for controllers and kubelets on the virtual
    clock); every other keyword goes to its constructor.

    Failures end the simulation and are raised once, by the call that ran into them:
    :class:`StoreCrashed`, :class:`StoreBlockedOutsideSimulation`, or the scheduler's
    :class:`~kubesim.sched.Livelock` / :class:`~kubesim.sched.UncontrolledThread`.
    """

    def __init__(
        self,
        *,
        seed: int | str = 0,
        strategy: Strategy | None = None,
        traced: Iterable[str | ModuleType] = (),
        granularity: str = "opcode",
        max_steps: int = DEFAULT_MAX_STEPS,
        stuck_after: float = DEFAULT_STUCK_AFTER,
        handoff_timeout: float = DEFAULT_HANDOFF_TIMEOUT,
        spin_after: float = DEFAULT_SPIN_AFTER,
        server_type: type[APIServer] = APIServer,
        **server_options: Any,
    ) -> None:
        self.seed = seed
        self.choices = SeededChoices(seed)
        self.clock = VirtualClock()
        self.trace = Trace()
        self.scheduler = Scheduler(
            strategy=strategy if strategy is not None else Preemptions([]),
            choices=self.choices.fork("schedule"),
            clock=self.clock,
            trace=self.trace,
            traced=traced,
            granularity=granularity,
            max_steps=max_steps,
            stuck_after=stuck_after,
            handoff_timeout=handoff_timeout,
            spin_after=spin_after,
        )
        self.server = make_atomic(
            server_type(
                choices=self.choices.fork("server"),
                clock=self.clock,
                trace=self.trace,
                **server_options,
            )
        )
        self._wait = ScheduledWait(self.server, scheduler=self.scheduler)
        self.server.wait_policy = self._wait
        self._store: ControlledThread | None = None
        self._reported = False

    @property
    def blocked_reads(self) -> int:
        """How many times a store thread waited on a watch read with nothing ready."""
        return self._wait.blocked_reads

    def kubernetes_client(self) -> Any:
        """An in-process ``kubernetes.client.ApiClient`` wired to this simulation's server."""
        from kubesim.transport.kubernetes_client import kubernetes_client

        return kubernetes_client(self.server)

    # -- the store's threads ----------------------------------------------------------------
    def start(self, target: Callable[[], Any], *, name: str = "store") -> None:
        """Run ``target`` (the store's main loop) in a controlled thread until the store's
        threads all wait (it is quiescent)."""
        if self._store is not None:
            raise RuntimeError("this simulation already runs a store; start() it once per run")
        self._store = self._spawn(target, name)
        self.trace.record("store-start", name)
        self.settle()

    def spawn(self, target: Callable[[], Any], *, name: str, group: str = "") -> SimulatedThread:
        """Add a controlled thread (a reader calling the store while it works, say).

        It first runs at the next :meth:`settle` or :meth:`advance`, interleaved with the
        store's threads as the strategy decides; a crash in it is a :class:`StoreCrashed`.
        ``group`` tags it and the threads it starts (:meth:`group_of_current`).
        """
        return SimulatedThread(self._spawn(target, name, group))

    def group_of_current(self) -> str | None:
        """The group of the controlled thread calling this (None: not a controlled thread)."""
        ct = self.scheduler.current_thread()
        return None if ct is None else ct.group

    def _spawn(self, target: Callable[[], Any], name: str, group: str = "") -> ControlledThread:
        if self.scheduler.closed:
            raise RuntimeError("this simulation has stopped; create a new one")
        if not self.scheduler.external:
            self.scheduler.start_external()
        return self.scheduler.spawn(target, name=name, group=group)

    def settle(self) -> None:
        """Let the store's threads run until every one of them waits or finishes.

        Virtual time does not move here. Raises the failure, if one of them failed.
        """
        if not self.scheduler.external or self.scheduler.closed:
            return
        self.scheduler.run_until_quiescent()
        if self.scheduler.failure is None:
            cycle = self.scheduler.lock_cycle()
            if cycle is not None:
                # Quiescence is normal under a driver; threads waiting on each other's locks
                # are not: no step of the scenario can wake them.
                self.scheduler._fail(self.scheduler.report_deadlock())
        if self.scheduler.failure is not None:
            self._end_with_failure()

    def _end_with_failure(self) -> None:
        failure = self.scheduler.failure
        self.scheduler.finish()
        if failure is None or self._reported:
            return
        self._reported = True
        self.trace.record("store-failed", type(failure).__name__)
        if isinstance(failure, ThreadCrashed):
            raise StoreCrashed(f"store {failure}") from failure.original
        if isinstance(failure, BlockedOutsideSimulation):
            raise StoreBlockedOutsideSimulation(str(failure)) from None
        raise failure

    def crash_store(self) -> int:
        """The store's process dies where it stands: every controlled thread (the store's,
        the threads it started, readers) is unwound; the server keeps what they did.

        A new store may then be started with :meth:`start`. Returns how many threads ended.
        """
        if not self.scheduler.external or self.scheduler.closed:
            return 0
        ended = self.scheduler.abort_threads(list(self.scheduler.threads))
        self.trace.record("store-crash", ended)
        self._store = None
        if self.scheduler.failure is not None:
            self._end_with_failure()
        return ended

    @property
    def store_finished(self) -> bool:
        """True once the store's main thread returned (or was unwound by :meth:`stop`)."""
        return self._store is not None and self._store.state is State.FINISHED

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass, timer by timer, the store settling after each
        (a sleeping store wakes at its deadline, a watch times out at its own)."""
        if not seconds >= 0:
            raise ValueError(f"advance() needs seconds >= 0, got seconds={seconds!r}")
        target = self.clock.now() + seconds
        while True:
            deadline = self.clock.next_deadline()
            if deadline is None or deadline > target:
                break
            self.server.advance_to(deadline)
            self.settle()
        self.server.advance_to(target)
        self.settle()

    def stop(self) -> None:
        """Unwind every controlled thread and wait for them (idempotent).

        A thread reported blocked outside the simulation cannot be unwound: it is left behind
        as a daemon thread.
        """
        if not self.scheduler.external or self.scheduler.closed:
            return
        self.scheduler.finish()
        self.trace.record("store-stop", self._store.name if self._store else "")
        if self.scheduler.failure is not None and not self._reported:
            # A thread that turned the unwinding into another exception, or got stuck in it.
            self._end_with_failure()

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
