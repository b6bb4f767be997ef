"""The controlled scheduler: real threads, one at a time, every switch drawn from the choices.

Each controlled thread is a real ``threading.Thread`` that runs only while it holds the
*baton*; the others are parked on their own raw lock. A thread gives the baton away at
*scheduling points*:

- every line or opcode executed in a *traced* file (the store under test; opcode granularity
  by default so that ``x += 1`` and ``d[k] = d.get(k, 0) + 1`` can be split), via
  ``sys.settrace`` before Python 3.12 and ``sys.monitoring`` since (:mod:`kubesim.sched.tracing`);
- every operation on a simulated primitive (lock acquire and release, condition wait and
  notify, queue put and get, ``time.sleep``), and every blocking watch read.

At each point the :class:`~kubesim.sched.strategies.Strategy` picks who runs next, drawing from
the run's :class:`~kubesim._core.ChoiceSource`. Blocking parks the thread; when every thread
waits, virtual time jumps to the next deadline (trio's autojump), so an hour of watch traffic
with timeouts runs in milliseconds. When nothing can ever wake a thread, that is a
:class:`~kubesim.sched.errors.Deadlock`, reported with every thread's stack and what it waits for.

Two ways to drive a run: :meth:`Scheduler.run` runs a scenario function as thread 0 and moves
virtual time itself; :meth:`Scheduler.start_external` lets the calling thread drive (a
:class:`~kubesim.sim.simulation.Simulation`): it spawns threads and runs them until every one
waits, then applies the next step itself, and virtual time moves only when it moves the clock.

Only a running thread has scheduling points (timer callbacks fired while every thread waits run
with none), and the strategy is never asked to choose among no thread. A thread that holds the
baton but sits still on something the scheduler does not control is found by a watchdog in the
controller within seconds (:data:`DEFAULT_STUCK_AFTER`) and reported with its stack.

Threads started by controlled code are adopted (``Thread.start`` is patched for the run); a
thread the scheduler does not control that touches a simulated primitive is a loud
:class:`~kubesim.sched.errors.UncontrolledThread` error, never a silent pass.

Why this design and what it costs (a baton over real threads, opcode points, a strategy
portfolio): docs/explanation/scheduler.md.
"""

from __future__ import annotations

import _thread
import ctypes
import enum
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from time import monotonic as _wall_clock
from types import FrameType, ModuleType
from typing import Any, Protocol

from kubesim._core import ChoiceSource, SeededChoices, Trace, VirtualClock
from kubesim._core.clock import Timer
from kubesim._core.paths import CondensedStack, display_path, is_library, readable_traceback
from kubesim._core.trace import stable as _stable
from kubesim.sched import tracing
from kubesim.sched.affinity import CpuPin
from kubesim.sched.errors import (
    Deadlock,
    Livelock,
    OutOfTime,
    ThreadCrashed,
    UncontrolledThread,
    _Abort,
)
from kubesim.sched.originals import ORIGINAL_JOIN, ORIGINAL_START, ORIGINAL_THREAD
from kubesim.sched.strategies import Strategy

_get_ident = _thread.get_ident

DEFAULT_MAX_STEPS = 200_000
# The watchdog (a diagnosis only; it never decides anything in a run and never reads a clock
# into the trace). While a controlled thread holds the baton, the controller samples that
# thread's stack every WATCHDOG_INTERVAL s of wall time. A stack that stays the same (frame
# identity and instruction offset of its innermost frames) for DEFAULT_STUCK_AFTER s, while the
# thread uses no CPU, is a thread blocked on something kubesim does not control.
WATCHDOG_INTERVAL = 0.5
# Scheduling points a thread runs while another is runnable before the scheduler switches to
# that one, whatever the strategy chose: a busy-wait on a flag another thread must set ends,
# as it does under an operating system's time slices, where running one thread until it blocks
# would spin for ever (and be reported as a livelock it is not). Far more than any store's work
# between two blocking calls, so schedules and traces of ordinary runs never meet it.
TIME_SLICE = 50_000
DEFAULT_STUCK_AFTER = 3.0
# A thread that uses CPU all along for this many seconds of wall time without a scheduling
# point is spinning: a busy-wait on a flag another thread must set (kubesim runs one controlled
# thread at a time, so that thread never runs), or a computation that long. It is reported and
# stopped, not waited for.
DEFAULT_SPIN_AFTER = 30.0
# The last resort: this many seconds of wall time with no scheduling point at all, whatever the
# stack does (an endless computation in untraced code).
DEFAULT_HANDOFF_TIMEOUT = 600.0
_STACK_FRAMES = 8

_active: Scheduler | None = None
# The wall-clock time (time.monotonic, bound before any run patches it) after which a run stops
# waiting for its threads and raises OutOfTime: a campaign's --max-time (set_wall_deadline).
_wall_deadline: float | None = None


def set_wall_deadline(deadline: float | None) -> float | None:
    """From now on, runs give up waiting for a controlled thread after ``deadline`` (a
    ``time.monotonic()`` value; None: never) and raise :class:`OutOfTime`. Returns the
    previous deadline, to restore."""
    global _wall_deadline
    previous, _wall_deadline = _wall_deadline, deadline
    return previous


def active() -> Scheduler | None:
    """The scheduler of the run in progress, if any."""
    return _active


class State(enum.Enum):
    RUNNABLE = "runnable"
    BLOCKED = "blocked"
    FINISHED = "finished"


class Waitable:
    """Something a controlled thread can block on; ``describe`` goes into deadlock reports.

    ``wakes_on_time``: a waiter can be woken by virtual time passing even without a timeout of
    its own (a watch read: the server ends watches and sends bookmarks on timers).
    """

    wakes_on_time = False

    def describe(self) -> str:
        return type(self).__name__


class _Sleep(Waitable):
    def describe(self) -> str:
        return "time.sleep"


class _Joined(Waitable):
    def __init__(self, target: ControlledThread) -> None:
        self.target = target

    def describe(self) -> str:
        return f"join of thread {self.target.name!r}"


class ControlledThread:
    __slots__ = (
        "_on_state",
        "_state",
        "atomic",
        "group",
        "id",
        "ident",
        "joined",
        "name",
        "native_id",
        "park",
        "thread",
        "timed_out",
        "timer",
        "waiting_on",
    )

    def __init__(
        self,
        ident: int,
        name: str,
        thread: threading.Thread | None,
        on_state: Callable[[], None] = lambda: None,
    ) -> None:
        self.id = ident
        self.name = name
        self.thread = thread
        self.ident: int | None = None
        self.native_id: int | None = None
        self.park = _thread.allocate_lock()
        self.park.acquire()
        # Told of every change of state: the scheduler keeps the runnable ids between changes
        # (a scheduling point, at every opcode of traced code, asks for them).
        self._on_state = on_state
        self._state = State.RUNNABLE
        self.waiting_on: Waitable | None = None
        self.timer: Timer | None = None
        self.timed_out = False
        self.joined = _Joined(self)
        # Which process of the run the thread belongs to (a store instance, a reader): set by
        # whoever spawns it, inherited by the threads it starts.
        self.group = ""
        # Depth of the atomic blocks it is in (Scheduler.atomic): its points are off meanwhile.
        self.atomic = 0

    @property
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, value: State) -> None:
        self._state = value
        self._on_state()

    def __repr__(self) -> str:
        return f"<thread {self.id} {self.name!r} {self.state.value}>"


@dataclass(frozen=True)
class RunResult:
    """How one controlled run went."""

    steps: int
    switches: int
    preemptions: int
    threads: int
    virtual_time: float
    trace_hash: str
    failure: BaseException | None
    strategy: str

    @property
    def ok(self) -> bool:
        return self.failure is None


def _resolve_traced(traced: Iterable[str | ModuleType]) -> tuple[str, ...]:
    """Files (or package directories) whose code gets scheduling points."""
    import os

    prefixes: list[str] = []
    for item in traced:
        if isinstance(item, ModuleType):
            path = getattr(item, "__file__", None)
            if path is None:
                raise ValueError(f"traced module {item.__name__!r} has no __file__")
            if os.path.basename(path) == "__init__.py":
                prefixes.append(os.path.dirname(os.path.abspath(path)) + os.sep)
            else:
                prefixes.append(os.path.abspath(path))
        elif isinstance(item, str):
            prefixes.append(os.path.abspath(item))
        else:
            raise TypeError(f"traced entries must be modules or paths, got {item!r}")
    return tuple(prefixes)


class Scheduler:
    """Runs a scenario's threads one at a time under a strategy. One run per instance."""

    def __init__(
        self,
        *,
        strategy: Strategy,
        choices: ChoiceSource | None = None,
        seed: int | str = 0,
        clock: VirtualClock | None = None,
        trace: Trace | None = None,
        traced: Iterable[str | ModuleType] = (),
        granularity: str = "opcode",
        max_steps: int = DEFAULT_MAX_STEPS,
        max_time: float | None = None,
        stuck_after: float = DEFAULT_STUCK_AFTER,
        handoff_timeout: float = DEFAULT_HANDOFF_TIMEOUT,
        spin_after: float = DEFAULT_SPIN_AFTER,
        one_cpu: bool = True,
    ) -> None:
        if granularity not in ("opcode", "line"):
            raise ValueError(
                f"granularity must be 'opcode' or 'line', got granularity={granularity!r}"
            )
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got max_steps={max_steps!r}")
        if not stuck_after > 0:  # also rejects NaN
            raise ValueError(f"stuck_after must be > 0 seconds, got stuck_after={stuck_after!r}")
        if not spin_after > 0:
            raise ValueError(f"spin_after must be > 0 seconds, got spin_after={spin_after!r}")
        if not handoff_timeout > 0:
            raise ValueError(
                f"handoff_timeout must be > 0 seconds, got handoff_timeout={handoff_timeout!r}"
            )
        self.strategy = strategy
        self.choices = choices if choices is not None else SeededChoices(seed, name="schedule")
        self.clock = clock if clock is not None else VirtualClock()
        self.trace = trace if trace is not None else Trace()
        self.traced = _resolve_traced(traced)
        # Where scheduling points come from (sys.settrace or sys.monitoring): see tracing.py.
        self.points = tracing.points_for(
            self.traced, opcodes=granularity == "opcode", point=self.point
        )
        self.opcodes = self.points.opcodes
        self.max_steps = max_steps
        self._step_budget = max_steps
        self.max_time = max_time
        self.stuck_after = stuck_after
        self.handoff_timeout = handoff_timeout
        self.spin_after = spin_after
        # The run's threads share one CPU while it lasts: a hand-off stays on one core
        # (see affinity.py; one_cpu=False for bench/points.py's side-by-side figures).
        self._cpu_pin = CpuPin() if one_cpu else None
        # How many times the watchdog looked at the baton holder (tests wait on it, not on time).
        self.watchdog_samples = 0
        # A thread reported blocked outside the simulation: left behind, never resumed.
        self.abandoned: ControlledThread | None = None
        # External-driver mode (start_external): the calling thread drives; quiescence hands
        # control back to it instead of moving virtual time.
        self.external = False
        self.closed = False
        self._last_quiescent = -1
        self.threads: list[ControlledThread] = []
        self._runnable_ids: tuple[int, ...] | None = None
        self._by_ident: dict[int, ControlledThread] = {}
        self._by_thread: dict[threading.Thread, ControlledThread] = {}
        self.current: ControlledThread | None = None
        self.steps = 0
        self.switches = 0
        self.preemptions = 0
        # The thread running since the last preemption and its points so far (TIME_SLICE).
        self._slice_owner = -1
        self._slice = 0
        self.failure: BaseException | None = None
        self.aborting = False
        self._atomic = 0
        self._done = _thread.allocate_lock()
        self._controller = threading.get_ident()
        # Who ran when, for a person (the campaign report's timeline): called in the thread
        # that stops running, with the line of its own code it stops at. Never part of the
        # trace: code locations are file paths, which differ between machines.
        self.observer: Callable[[Stop], None] | None = None

    # -- identity ---------------------------------------------------------------------------
    def current_thread(self) -> ControlledThread | None:
        """The controlled thread calling this, or None for any other thread."""
        return self._by_ident.get(_thread.get_ident())

    def require_current(self, what: str) -> ControlledThread:
        ct = self.current_thread()
        if ct is None:
            # No threading.current_thread(): for a raw _thread it would build a _DummyThread,
            # whose Event is simulated too, and recurse. Nor its ident in the first line: it
            # differs per process, and that line is in the trace.
            stack = "\n".join(_user_stack(sys._getframe(1)))
            error = UncontrolledThread(
                f"a thread kubesim does not control used {what} during a controlled run; start "
                "threads from inside the scenario (they are adopted) instead of with _thread or "
                f"before the run\ninnermost frames of that thread:\n{stack}"
            )
            self._fail(error)
            raise error
        return ct

    # -- running ----------------------------------------------------------------------------
    def run(self, main: Callable[[], Any], *, name: str = "main") -> RunResult:
        """Run ``main`` as controlled thread 0; the run ends when it returns (or fails).

        Threads that ``main`` started and did not join are unwound when it returns.
        """
        global _active
        if _active is not None:
            raise RuntimeError("a controlled run is already in progress; runs do not nest")
        if self.threads:
            raise RuntimeError("a Scheduler runs once; create a new one per run")
        self.strategy.start(self.choices)
        self._done.acquire()
        self._pin()
        # The first real thread starts before the patches: its Thread internals stay real.
        first = self._new_thread(name, None)
        self._start_real_thread(first, main)
        _active = self
        _patching().install()
        try:
            self.current = first
            self.trace.record("run", self.strategy.name)
            self.points.start()
            first.park.release()
            self._await_control()
            self._abort_all()
        finally:
            self.points.stop()
            _patching().uninstall()
            _active = None
            self.closed = True
            self._unpin()
        return self.result()

    def result(self) -> RunResult:
        """How the run went so far (complete once it is over)."""
        return RunResult(
            steps=self.steps,
            switches=self.switches,
            preemptions=self.preemptions,
            threads=len(self.threads),
            virtual_time=self.clock.now(),
            trace_hash=self.trace.hexdigest(),
            failure=self.failure,
            strategy=self.strategy.name,
        )

    def _new_thread(self, name: str, thread: threading.Thread | None) -> ControlledThread:
        ct = ControlledThread(len(self.threads), name, thread, self._runnable_changed)
        self.threads.append(ct)
        self._runnable_ids = None
        if thread is not None:
            self._by_thread[thread] = ct
        self.strategy.on_spawn(ct.id)
        self.trace.record("spawn", ct.id, _stable(name))
        return ct

    def _start_real_thread(self, ct: ControlledThread, target: Callable[[], Any]) -> None:
        real = ORIGINAL_THREAD(
            target=lambda: self._thread_main(ct, target), name=f"kubesim-{ct.name}", daemon=True
        )
        ct.thread = real
        ORIGINAL_START(real)

    def adopt(self, thread: threading.Thread) -> None:
        """Take over a ``threading.Thread`` that controlled code is starting.

        A thread with threading's default name (``Thread-N`` or ``Thread-N (target)``) is renamed
        ``Thread-<controlled id>``, keeping the ``(target)`` suffix: names are per run, not per
        process, so a replay names its threads as the run it replays did.
        """
        self.require_current("Thread.start")
        # threading's default names count up over the whole process ("Thread-7 (bump)"), so the
        # same schedule would name its threads differently in every run and the trace (spawn
        # records, failure messages) would differ: number them by controlled id instead.
        given: object = thread.name
        if isinstance(given, str):
            name = given
            if (default := _DEFAULT_THREAD_NAME.match(name)) is not None:
                name = thread.name = f"Thread-{len(self.threads)}{default.group(1) or ''}"
        else:
            # A subclass may keep its own data in threading's ``_name`` (Patroni's ObjectCache
            # keeps a pod name there, or None), which ``Thread.name`` returns: leave it alone.
            name = f"{type(thread).__name__}-{len(self.threads)}"
        parent = self.current_thread()
        ct = self._new_thread(name, thread)
        ct.group = parent.group if parent is not None else ""
        run = thread.run
        thread.run = lambda: self._thread_main(ct, run)  # type: ignore[method-assign]
        # Thread.start waits on _started, which the child sets before run(): it must be a real
        # flag, or the child would touch simulated state without the baton.
        thread._started = _RealFlag()  # type: ignore[attr-defined]
        ORIGINAL_START(thread)
        self.point()

    def _thread_main(self, ct: ControlledThread, target: Callable[[], Any]) -> None:
        ct.ident = _thread.get_ident()
        ct.native_id = threading.get_native_id()
        self._by_ident[ct.ident] = ct
        ct.park.acquire()
        try:
            if self.aborting:
                return
            self.points.enter_thread()
            try:
                target()
            finally:
                self.points.exit_thread()
        except (_Abort, _Stopped):
            pass
        except BaseException as exc:
            # A thread being unwound (a crash, a stop, the end of the run) may raise from a
            # finally block (kuryr's Watcher calls sys.exit() there): a process that dies runs
            # none of that, so it is part of the unwinding, not a crash of the store.
            if not (self.aborting and _raised_while_unwinding(exc)):
                self._fail(_crash(ct, exc, self.traced))
        finally:
            if ct is not self.abandoned:  # a thread the run gave up on touches nothing of it
                self._finish(ct)

    def _finish(self, ct: ControlledThread) -> None:
        if self.closed:
            return  # a thread left behind by a finished run (blocked outside, then freed)
        ct.state = State.FINISHED
        self.trace.record("finish", ct.id)
        if self.observer is not None:
            self._observe(ct, "finished")
        self.wake(ct.joined)
        if self.aborting or self.failure is not None or (ct.id == 0 and not self.external):
            # Thread 0 is the scenario: when it returns the run is over and the threads still
            # running (watch loops, daemon workers) are unwound, as a process exit ends daemons.
            self._done_release()
            return
        runnable = self._runnable()
        if (
            not self.external
            and not runnable
            and all(t.state is State.FINISHED for t in self.threads)
        ):
            self._done_release()
            return
        try:
            self._hand_off_from(ct, finished=True)
        except _Abort:
            self._done_release()

    def _done_release(self) -> None:
        if self._done.locked():
            self._done.release()

    def abort_threads(self, threads: Iterable[ControlledThread]) -> int:
        """Driver: unwind these threads where they stand (a crash), leaving the others parked.

        Each unfinished one runs once more and raises :class:`_Abort` from where it waits, so
        its ``finally`` blocks and ``with`` exits run (a process that dies releases its locks
        too). Returns how many were unwound. The run goes on: the driver may start new threads.
        """
        global _active
        self._require_driver("abort_threads")
        doomed = [ct for ct in threads if ct.state is not State.FINISHED]
        if not doomed:
            return 0
        if _active is not None:
            raise RuntimeError("a controlled run is already in progress; runs do not nest")
        self.trace.record("crash", *[ct.id for ct in doomed])
        _active = self
        _patching().install()
        self.aborting = True
        try:
            for ct in doomed:
                if ct.thread is None or ct is self.abandoned:
                    continue
                self._done.acquire(blocking=False)
                ct.state = State.RUNNABLE
                self.current = ct
                ct.park.release()
                self._await_control()
        finally:
            self.aborting = False
            self.current = None
            _patching().uninstall()
            _active = None
        join = ORIGINAL_JOIN
        for ct in doomed:
            if ct.thread is not None and ct is not self.abandoned and ct.thread.is_alive():
                join(ct.thread, self.handoff_timeout)
        return len(doomed)

    def _abort_all(self) -> None:
        """Unwind every unfinished thread, one at a time, with :class:`_Abort`.

        A thread reported blocked outside the simulation is left behind (a daemon thread that
        never gets the baton again); every other real thread has ended when this returns.
        """
        self.aborting = True
        for ct in self.threads:
            if ct.state is State.FINISHED or ct.thread is None or ct is self.abandoned:
                continue
            if ct.ident is None and not ct.thread.is_alive():
                continue
            self._done.acquire(blocking=False)
            ct.state = State.RUNNABLE
            self.current = ct
            ct.park.release()
            self._await_control()  # a thread stuck while unwinding is abandoned too
        self.current = None
        join = ORIGINAL_JOIN
        for ct in self.threads:
            if ct.thread is not None and ct is not self.abandoned and ct.thread.is_alive():
                # The thread has given up the baton for good; only its last lines remain.
                join(ct.thread, self.handoff_timeout)

    # -- the watchdog -----------------------------------------------------------------------
    def _await_control(self) -> bool:
        """Controller: wait until a controlled thread hands control back (``_done``).

        While waiting, sample the baton holder (the watchdog, see :data:`DEFAULT_STUCK_AFTER`).
        A holder that is stuck outside the simulation is reported once, as the run's failure,
        and abandoned; then this returns False and the controller ends the run.
        """
        interval = min(WATCHDOG_INTERVAL, self.stuck_after / 4, self.spin_after / 4)
        stuck_samples = max(2, round(self.stuck_after / interval))
        spin_samples = max(2, round(self.spin_after / interval))
        cap_samples = max(1, round(self.handoff_timeout / interval))
        progress = (self.steps, self.switches)
        idle = 0
        same = 0
        spinning = 0
        last: tuple[object, ...] | None = None
        last_cpu: float | None = None
        while True:
            try:
                if self._done.acquire(timeout=interval):
                    return True
            except BaseException:
                # Interrupted (Ctrl-C, a test's timeout): the holder still runs; never resume it.
                self.abandoned = self.current
                raise
            self.watchdog_samples += 1
            holder = self.current
            if holder is None or holder.ident is None:
                same, spinning, last, last_cpu = 0, 0, None, None
                continue
            now = (self.steps, self.switches)
            idle = idle + 1 if now == progress else 0
            progress = now
            signature = _stack_signature(holder.ident)
            cpu = _cpu_seconds(holder.native_id)
            busy = cpu is not None and last_cpu is not None and cpu - last_cpu > interval / 10
            unchanged = signature is not None and signature == last
            same = same + 1 if unchanged and not busy else 0
            spinning = spinning + 1 if busy and idle else 0
            last, last_cpu = signature, cpu
            if spinning >= spin_samples:
                self.abandoned = holder
                self._fail(self._spinning(holder))
                _stop_spinning(holder)
                return False
            if same >= stuck_samples or idle >= cap_samples:
                self.abandoned = holder
                self._fail(self._blocked_outside(holder, stuck=same >= stuck_samples))
                return False
            if _wall_deadline is not None and _wall_clock() > _wall_deadline:
                # Given up as Ctrl-C gives it up: the holder is never resumed, and one that is
                # burning CPU is stopped rather than left to burn a core.
                self.abandoned = holder
                if busy:
                    _stop_spinning(holder)
                raise OutOfTime(
                    f"the wall-clock deadline passed while thread {holder.name!r} held the baton"
                )

    # -- scheduling points ------------------------------------------------------------------
    def point(self) -> None:
        """A scheduling point of the calling (current) thread.

        Only a running thread has scheduling points: code that runs on behalf of a thread that
        is blocking (a timer callback fired while it hands off, a lock taken inside one) is
        not a place where another thread can be chosen.
        """
        if self._atomic or self.aborting:
            return
        ct = self.current
        if ct is None or ct.ident != _get_ident() or ct._state is not State.RUNNABLE or ct.atomic:
            return
        self.steps += 1
        if self.steps > self.max_steps:
            self.steps -= 1
            self._count_step()  # fails the run as a livelock
        runnable = self._runnable()
        chosen = self.strategy.at_point(self.steps, ct.id, runnable)
        if chosen == ct.id and len(runnable) > 1:
            # A time slice, as an operating system's: a thread that keeps running while others
            # could (a loop polling a flag another thread sets) yields to the next of them.
            if self._slice_owner != ct.id:
                self._slice_owner, self._slice = ct.id, 0
            self._slice += 1
            if self._slice >= TIME_SLICE:
                chosen = next((i for i in runnable if i > ct.id), runnable[0])
        if chosen != ct.id:
            self._slice_owner = -1
            self.preemptions += 1
            if self.observer is not None:
                self._observe(ct, f"preempted for {self.threads[chosen].name}")
            self._switch(ct, self.threads[chosen])

    def _observe(self, ct: ControlledThread, why: str) -> None:
        assert self.observer is not None
        self.observer(
            Stop(
                self.steps,
                self.clock.now(),
                ct.name,
                why,
                _user_location(sys._getframe(2), self.traced),
            )
        )

    def _count_step(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            self._fail(
                Livelock(
                    f"the run exceeded max_steps={self.max_steps} scheduling points without "
                    f"finishing (virtual time {self.clock.now():.3f} s): a livelock or a loop that "
                    "never ends; raise max_steps if the scenario is just long\n"
                    + self._thread_report()
                )
            )
            raise _Abort

    def atomic(self) -> _Atomic:
        """A block with no scheduling points (for harness code that must not be interleaved).

        Per thread: a controlled thread's block turns off *its* points. One that blocks inside
        (a reader's bookkeeping meeting a lock the store holds) lets the others run with
        theirs: a process-wide switch left on by a parked thread silenced the store's relist
        that ran meanwhile. On behalf of no thread (timer callbacks, the driver), every point
        is off until the block ends."""
        return _Atomic(self)

    def _runnable(self) -> tuple[int, ...]:
        runnable = self._runnable_ids
        if runnable is None:
            runnable = self._runnable_ids = tuple(
                t.id for t in self.threads if t._state is State.RUNNABLE
            )
        return runnable

    def _runnable_changed(self) -> None:
        self._runnable_ids = None

    def _choose(self, *, at_point: bool, current: int, runnable: Sequence[int]) -> int:
        """Ask the strategy who runs next (:meth:`point`, the hot path, asks it directly)."""
        assert runnable, f"a strategy was asked to choose among no runnable thread ({self!r})"
        if at_point:
            return self.strategy.at_point(self.steps, current, runnable)
        return self.strategy.after_block(self.steps, current, runnable)

    def _switch(self, cur: ControlledThread, nxt: ControlledThread) -> None:
        self.switches += 1
        self.trace.record("switch", self.steps, cur.id, nxt.id)
        self.current = nxt
        nxt.park.release()
        cur.park.acquire()
        if self.aborting:
            raise _Abort

    def _hand_off_from(self, ct: ControlledThread, *, finished: bool = False) -> None:
        """``ct`` cannot run (blocked or finished): run someone else, moving time if needed."""
        while True:
            runnable = self._runnable()
            if runnable:
                chosen = self.threads[
                    self._choose(at_point=False, current=ct.id, runnable=runnable)
                ]
                if chosen is ct:
                    return
                if finished:
                    self.switches += 1
                    self.trace.record("switch", self.steps, ct.id, chosen.id)
                    self.current = chosen
                    chosen.park.release()
                    return
                self._switch(ct, chosen)
                return
            if self.external:
                # Every controlled thread waits: the run is quiescent, and the driver decides
                # what happens next (a write, a fault, time passing).
                self._quiesce(ct)
                if finished:
                    return
                ct.park.acquire()
                if self.aborting:
                    raise _Abort
                return  # the driver chose ct: it is runnable again
            if not self._time_can_help():
                self._fail(Deadlock(self._deadlock_report()))
                raise _Abort
            deadline = self.clock.next_deadline()
            assert deadline is not None
            if self.max_time is not None and deadline > self.max_time:
                self._fail(
                    Livelock(
                        f"virtual time would pass max_time={self.max_time} s (next deadline "
                        f"{deadline:.3f} s) with every thread waiting; raise max_time if intended\n"
                        + self._thread_report()
                    )
                )
                raise _Abort
            self.trace.record("autojump", deadline)
            # Timer callbacks (the server's watch timeouts and bookmark ticks) run on behalf of
            # no thread: they have no scheduling points, whatever locks they take.
            with self.atomic():
                self.clock.advance_to(deadline)

    def _time_can_help(self) -> bool:
        """True when moving virtual time could wake a blocked thread.

        A pending timer alone is not enough (a server's bookmark ticker, an unrelated
        ``call_later``): only a blocked thread with a timeout of its own, or one waiting on
        something that time wakes (a watch read), can be helped. Otherwise two threads stuck on
        each other's locks next to a ticking timer would autojump forever instead of being
        reported as the deadlock they are.
        """
        if self.clock.next_deadline() is None:
            return False
        return any(
            t.state is State.BLOCKED
            and (t.timer is not None or (t.waiting_on is not None and t.waiting_on.wakes_on_time))
            for t in self.threads
        )

    # -- blocking ---------------------------------------------------------------------------
    def block(self, ct: ControlledThread, waitable: Waitable, timeout: float | None = None) -> bool:
        """Park ``ct`` until :meth:`wake` names ``waitable`` (True) or ``timeout`` ends (False)."""
        if self.aborting:
            raise _Abort
        # Blocking counts as a step: a loop of sleeps or timed waits is bounded like a spin.
        self._count_step()
        ct.state = State.BLOCKED
        ct.waiting_on = waitable
        ct.timed_out = False
        if timeout is not None:
            ct.timer = self.clock.call_later(max(0.0, timeout), lambda: self._time_out(ct))
        # The class name, not describe(): descriptions carry id()s, which differ per run.
        self.trace.record("block", self.steps, ct.id, type(waitable).__name__)
        if self.observer is not None:
            self._observe(ct, f"waits ({type(waitable).__name__})")
        try:
            self._hand_off_from(ct)
        finally:
            if ct.timer is not None:
                ct.timer.cancel()
                ct.timer = None
        return not ct.timed_out

    def _time_out(self, ct: ControlledThread) -> None:
        if ct.state is State.BLOCKED:
            ct.timed_out = True
            ct.state = State.RUNNABLE
            ct.waiting_on = None

    def wake(self, waitable: Waitable, n: int | None = None) -> int:
        """Make up to ``n`` (default: all) threads blocked on ``waitable`` runnable, in id order."""
        woken = 0
        for t in self.threads:
            if n is not None and woken >= n:
                break
            if t.state is State.BLOCKED and t.waiting_on is waitable:
                t.state = State.RUNNABLE
                t.waiting_on = None
                woken += 1
        return woken

    def yield_to(self, thread_id: int) -> bool:
        """The calling controlled thread lets ``thread_id`` run now and stays runnable itself
        (it runs again when a later choice picks it). False, and nothing happens, when that
        thread cannot run or is the caller. For harness threads that take turns with the store
        (a reader sampling a relist: :class:`kubesim.sched.strategies.Preemptions`)."""
        ct = self.require_current("yield_to")
        target = self.threads[thread_id] if 0 <= thread_id < len(self.threads) else None
        if target is None or target is ct or target._state is not State.RUNNABLE:
            return False
        if self._atomic or ct.atomic or self.aborting:
            return False
        self._count_step()
        self._slice_owner = -1
        self._switch(ct, target)
        return True

    def sleep(self, seconds: float) -> None:
        ct = self.require_current("time.sleep")
        if seconds <= 0:
            self.point()
            return
        self.block(ct, _Sleep(), seconds)

    def join(self, target: threading.Thread, timeout: float | None) -> bool:
        """Wait for an adopted thread to finish; True if it did."""
        ct = self.require_current("Thread.join")
        other = self._by_thread.get(target)
        if other is None:
            return False
        if other.state is not State.FINISHED:
            self.block(ct, other.joined, timeout)
        return other.state is State.FINISHED

    def is_controlled(self, thread: threading.Thread) -> bool:
        return thread in self._by_thread

    # -- failures ---------------------------------------------------------------------------
    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
            # The first line only, without the 0x... ids an exception text may carry (an object's
            # default repr): those differ per run and would make the replay's trace differ.
            first = (str(error).splitlines() or [""])[0]
            self.trace.record("failure", type(error).__name__, _stable(first)[:200])

    def _stacks(self) -> dict[int, str]:
        frames = sys._current_frames()
        out: dict[int, str] = {}
        for t in self.threads:
            frame = frames.get(t.ident or -1)
            if frame is not None:
                out[t.id] = "".join(traceback.format_stack(frame)[-8:])
        return out

    def lock_cycle(self) -> list[ControlledThread] | None:
        """Threads blocked on locks held by each other in a cycle (a deadlock), or None.

        Under a driver a quiescent run is normal (threads wait for the next step); a cycle of
        lock waits is not: nothing the driver can do wakes it.
        """
        waits_for: dict[int, ControlledThread] = {}
        for t in self.threads:
            owner = getattr(t.waiting_on, "_owner", None) if t.state is State.BLOCKED else None
            if isinstance(owner, ControlledThread):
                waits_for[t.id] = owner
        for start in waits_for:
            path: list[int] = []
            current: int | None = start
            while current is not None and current not in path:
                path.append(current)
                nxt = waits_for.get(current)
                current = nxt.id if nxt is not None else None
            if current is not None:
                cycle = path[path.index(current) :]
                return [self.threads[i] for i in cycle]
        return None

    def report_deadlock(self) -> Deadlock:
        """The :class:`Deadlock` to report for the current state, with every thread's stack."""
        return Deadlock(self._deadlock_report())

    def _deadlock_report(self) -> str:
        return (
            f"deadlock after {self.steps} steps at virtual time {self.clock.now():.3f} s: every "
            "controlled thread waits and nothing can wake one\n" + self._thread_report()
        )

    def _thread_report(self) -> str:
        """Each unfinished thread, what it waits for, and where it is in its own code.

        Stacks end at the thread's last frame outside :mod:`kubesim.sched` (the line that
        blocked or was preempted), so the thread writing the report shows its own code too,
        not the scheduler's. Descriptions never carry ``id()``s: they differ per run.
        """
        frames = sys._current_frames()
        lines: list[str] = []
        for t in self.threads:
            if t.state is State.FINISHED:
                continue
            what = t.waiting_on.describe() if t.waiting_on else "nothing"
            lines.append(f"- thread {t.id} {t.name!r} waits for {what}")
            frame = frames.get(t.ident if t.ident is not None else -1)
            if frame is not None:
                lines.extend("    " + line for line in _user_stack(frame))
        return "\n".join(lines)

    def _holder_stack(self, holder: ControlledThread) -> str:
        frame = sys._current_frames().get(holder.ident or -1)
        return "".join(f"{line}\n" for line in _user_stack(frame)) if frame else ""

    def _spinning(self, holder: ControlledThread) -> BaseException:
        stack = self._holder_stack(holder)
        return Spinning(
            f"thread {holder.name!r} used CPU for {self.spin_after:g} s of wall time without "
            "reaching a scheduling point: a busy-wait (a loop polling a flag or an attribute "
            "that another thread must set: kubesim runs one controlled thread at a time and "
            "switches at scheduling points only, so that thread never gets to run, where an "
            "operating system would preempt the loop) or a computation that long. To wait for "
            "another thread, wait on a threading.Event or Condition: kubesim simulates those. "
            "The thread was stopped.\n"
            f"innermost frames of {holder.name!r}:\n{stack}",
            thread_name=holder.name,
        )

    def _blocked_outside(self, holder: ControlledThread, *, stuck: bool) -> BaseException:
        stack = self._holder_stack(holder)
        if stuck:
            what = (
                f"has not moved for {self.stuck_after:g} s of wall time (same stack, no CPU "
                "used) without reaching a scheduling point"
            )
        else:
            what = (
                f"held the baton for {self.handoff_timeout:g} s of wall time without reaching "
                "a scheduling point"
            )
        return BlockedOutsideSimulation(
            f"thread {holder.name!r} {what}: it is blocked outside the simulation, on something "
            "kubesim does not control (a real lock, socket, sleep or C-level wait, or a lock "
            "created before the run and shared with it). Create such objects inside the run, or "
            "use the simulated ones. The thread is left behind as a daemon thread.\n"
            f"innermost frames of {holder.name!r}:\n{stack}",
            thread_name=holder.name,
        )

    # -- external-driver mode ---------------------------------------------------------------
    def start_external(self) -> None:
        """Begin a run driven from the calling thread, which stays uncontrolled.

        The driver adds threads with :meth:`spawn` and lets them run with
        :meth:`run_until_quiescent`, which returns once every controlled thread waits (the run
        is *quiescent*); virtual time moves only when the driver moves the clock. Between those
        calls the patches are off and no controlled thread runs, so the driver may call the
        server and read the store. :meth:`finish` unwinds the threads and ends the run.
        """
        if self.threads or self.external:
            raise RuntimeError("a Scheduler runs once; create a new one per run")
        self.external = True
        self.strategy.start(self.choices)
        self._done.acquire()
        self._controller = threading.get_ident()
        self._pin()
        self.trace.record("run", self.strategy.name)
        # Points stay on for the whole run, not per settle: a store thread parked inside traced
        # code (its run() loop) resumes in a frame sys.monitoring would not rediscover.
        self.points.start()

    def spawn(self, target: Callable[[], Any], *, name: str, group: str = "") -> ControlledThread:
        """A new controlled thread running ``target``; it first runs at the next
        :meth:`run_until_quiescent`. Driver only, between runs. ``group``: see
        :attr:`ControlledThread.group` (the threads it starts inherit it)."""
        self._require_driver("spawn")
        ct = self._new_thread(name, None)
        ct.group = group
        self._start_real_thread(ct, target)
        return ct

    def run_until_quiescent(self) -> None:
        """Driver: run the controlled threads until every one waits, finishes, or one fails.

        Afterwards check :attr:`failure`: a failure ends the run (call :meth:`finish`).
        """
        global _active
        self._require_driver("run_until_quiescent")
        runnable = self._runnable()
        if self.failure is not None or not runnable:
            return
        chosen = self.threads[
            self._choose(at_point=False, current=self._last_quiescent, runnable=runnable)
        ]
        if _active is not None:
            raise RuntimeError("a controlled run is already in progress; runs do not nest")
        # Under a driver, max_steps bounds each run to quiescence, not the whole simulation.
        self.max_steps = self.steps + self._step_budget
        _active = self
        _patching().install()
        try:
            self.current = chosen
            chosen.park.release()
            self._await_control()
        finally:
            _patching().uninstall()
            _active = None

    def finish(self) -> RunResult:
        """Driver: unwind every controlled thread and end the run (idempotent)."""
        global _active
        if not self.closed:
            self._require_driver("finish")
            if _active is not None:
                raise RuntimeError("a controlled run is already in progress; runs do not nest")
            _active = self
            _patching().install()
            try:
                self._abort_all()
            finally:
                self.points.stop()
                _patching().uninstall()
                _active = None
                self.closed = True
                self._unpin()
        return self.result()

    def _pin(self) -> None:
        if self._cpu_pin is not None:
            self._cpu_pin.pin()

    def _unpin(self) -> None:
        if self._cpu_pin is not None:
            self._cpu_pin.release()

    def _require_driver(self, what: str) -> None:
        if not self.external:
            raise RuntimeError(f"{what}() needs a run started with start_external()")
        if self.closed:
            raise RuntimeError(f"{what}(): this run has finished")
        if threading.get_ident() != self._controller:
            raise RuntimeError(
                f"{what}() must be called by the driver, the thread that started the run"
            )

    def _quiesce(self, ct: ControlledThread) -> None:
        """Hand control back to the driver: no controlled thread can run."""
        self.trace.record("quiescent", self.steps, ct.id)
        self._last_quiescent = ct.id
        self.current = None
        self._done_release()


class BlockedOutsideSimulation(Deadlock):
    """A controlled thread is blocked on something the scheduler does not control."""

    def __init__(self, message: str, *, thread_name: str) -> None:
        super().__init__(message)
        self.thread_name = thread_name


class Spinning(BlockedOutsideSimulation):
    """A controlled thread runs on without a scheduling point, using CPU (a busy-wait)."""


class _Stopped(BaseException):
    """Raised asynchronously into a spinning thread the run gave up on, to end it."""


def _stop_spinning(ct: ControlledThread) -> None:
    """End a thread that spins in Python code: ask the interpreter to raise :class:`_Stopped`
    in it at its next bytecode (a busy loop otherwise burns a core until the process exits)."""
    if ct.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(ct.ident), ctypes.py_object(_Stopped)
        )


def _stack_signature(ident: int) -> tuple[tuple[int, int], ...] | None:
    """Where a thread is: identity and instruction offset of its innermost frames."""
    frame = sys._current_frames().get(ident)
    signature: list[tuple[int, int]] = []
    while frame is not None and len(signature) < _STACK_FRAMES:
        signature.append((id(frame), frame.f_lasti))
        frame = frame.f_back
    return tuple(signature) if signature else None


def _cpu_seconds(native_id: int | None) -> float | None:
    """CPU time a thread has used: a thread in a long C call moves no frame but uses CPU.

    Read from ``/proc`` (safe for a thread that has just ended); None where the platform has
    no such file, and then the stack alone decides.
    """
    if native_id is None:
        return None
    try:
        with open(f"/proc/self/task/{native_id}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    # utime and stime (fields 14 and 15 of proc(5); 11 and 12 after the name) in clock ticks.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


_CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


class _Atomic:
    __slots__ = ("scheduler", "thread")

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.thread: ControlledThread | None = None

    def __enter__(self) -> None:
        thread = self.thread = self.scheduler.current_thread()
        if thread is not None:
            thread.atomic += 1
        else:
            self.scheduler._atomic += 1

    def __exit__(self, *exc: object) -> None:
        if self.thread is not None:
            self.thread.atomic -= 1
        else:
            self.scheduler._atomic -= 1


class _RealFlag:
    """A minimal Event on a raw lock, for ``Thread._started`` of adopted threads."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        acquired = self._lock.acquire(True, -1 if timeout is None else timeout)
        if acquired:
            self._lock.release()
        return self._set

    def clear(self) -> None:  # Thread internals never call it on _started; keep the API whole
        if self._set:
            self._lock.acquire()
            self._set = False


_DEFAULT_THREAD_NAME = re.compile(r"Thread-\d+( \(.*\))?\Z")
_SCHED_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class Stop:
    """A controlled thread stopped running: preempted, waiting, or finished.

    ``steps``: the scheduler's count of scheduling points then, so consecutive stops cut the
    run into the stretches each thread ran; ``location``: the last line of code outside
    kubesim and the standard library the thread was at (``path:line in function``).
    """

    steps: int
    time: float
    thread: str
    why: str
    location: str


_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
_KUBESIM_DIR = os.path.dirname(_SCHED_DIR.rstrip(os.sep)) + os.sep


def _user_location(frame: FrameType | None, own: Sequence[str] = ()) -> str:
    """``path:line in function`` of the innermost frame of the store's code: of ``own`` (the
    traced modules) if the stack has one, else outside kubesim and every library, else outside
    kubesim and the standard library (threads park inside both); "" for a thread running none
    of the store's code (a kubesim reader between reads, a thread that finished)."""
    fallback: FrameType | None = None
    outside: FrameType | None = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if own and filename.startswith(tuple(own)):
            outside = frame
            break
        if not filename.startswith((_KUBESIM_DIR, _STDLIB_DIR)) and filename[:1] != "<":
            fallback = fallback or frame
            if outside is None and not is_library(filename):
                outside = frame
        frame = frame.f_back
    chosen = outside or fallback
    if chosen is None:
        return ""
    return f"{display_path(chosen.f_code.co_filename)}:{chosen.f_lineno} in {chosen.f_code.co_name}"


def _harness_frames(frames: Sequence[traceback.FrameSummary]) -> int:
    """How many of the outermost ``frames`` are the harness around a thread's target: the
    thread bootstrap, and kubesim starting the store."""
    outer = 0
    while outer < len(frames) and frames[outer].filename.startswith(
        (threading.__file__, _KUBESIM_DIR)
    ):
        outer += 1
    return outer


def _user_stack(frame: FrameType, *, limit: int = _STACK_FRAMES) -> list[str]:
    """The last ``limit`` frames of a thread's stack as a person reads them: without the
    scheduler's own frames (its parking), without the harness around the thread's target (the
    thread bootstrap, kubesim starting the store) unless nothing else is left, and with paths
    that are the same on every machine."""
    summary = [f for f in traceback.extract_stack(frame) if not f.filename.startswith(_SCHED_DIR)]
    outer = _harness_frames(summary)
    if outer < len(summary):
        summary = summary[outer:]
    text = "".join(traceback.format_list(summary[-limit:]))
    return readable_traceback(text).rstrip().splitlines()


def _raised_while_unwinding(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while an :class:`_Abort` unwound the thread (in a finally)."""
    seen: set[int] = set()
    cause = exc.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, _Abort):
            return True
        seen.add(id(cause))
        cause = cause.__context__
    return False


def _crash(ct: ControlledThread, exc: BaseException, own: Sequence[str] = ()) -> ThreadCrashed:
    """``ct`` raised ``exc``: its traceback from the store's code on, runs of library frames
    condensed (``own``: the traced modules, the store's code even where it is installed)."""
    report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    # From the store's own code on: the frames above it are kubesim starting the thread.
    outer = _harness_frames(report.stack)
    if outer < len(report.stack):
        report.stack = traceback.StackSummary.from_list(report.stack[outer:])
    report.stack = CondensedStack.of(report.stack, own)
    text = "".join(report.format())
    # Paths as a reader finds them, the same on every machine (a report, a docs page).
    text = readable_traceback(text)
    return ThreadCrashed(
        f"thread {ct.name!r} raised {type(exc).__name__}: {exc}\n{text}",
        thread_name=ct.name,
        original=exc,
    )


class Patching(Protocol):
    """What a controlled run installs for its duration and removes after
    (:mod:`kubesim.sched.patches`: simulated locks, adopted threads, virtual time)."""

    def install(self) -> None: ...

    def uninstall(self) -> None: ...


_installed_patching: Patching | None = None


def use_patching(patching: Patching) -> None:
    """Set what every controlled run installs: called once, by :mod:`kubesim.sched.patches`
    when :mod:`kubesim.sched` is imported (the patches import the scheduler, so the scheduler
    cannot import them)."""
    global _installed_patching
    _installed_patching = patching


def _patching() -> Patching:
    if _installed_patching is None:
        raise RuntimeError(
            "no patches registered for controlled runs: import kubesim.sched (which imports "
            "kubesim.sched.patches) before starting one"
        )
    return _installed_patching
