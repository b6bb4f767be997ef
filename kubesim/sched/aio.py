"""A deterministic asyncio event loop on kubesim's virtual clock.

:class:`DeterministicEventLoop` is a real ``asyncio`` event loop (a ``BaseEventLoop``), so
``kubernetes_asyncio``-style stores, ``asyncio.Queue``/``Lock``/``Event``/``Condition``/
``Semaphore``, ``gather``, ``wait_for``, ``timeout`` and cancellation run unchanged. Two things
differ from the stock loop, and they are the contract:

1. **Order.** At every step the loop picks *which* ready callback runs next by drawing
   ``choices.integer(0, n - 1)`` over the ``n`` ready callbacks (FIFO order; index 0 is the
   oldest). Index 0 is the shrink target and reproduces stock asyncio exactly: a source that
   always returns ``lo`` runs callbacks in the same order as ``asyncio.run`` would. Other draws
   explore interleavings at ``await`` points, the only places asyncio code can interleave, so
   schedules are stable across Python versions as long as the program's awaits are. The draw
   is over *all* ready callbacks, including ones made ready during the current iteration, so
   a nonzero draw may run two ``call_soon`` callbacks in the reverse of their registration
   order: that models I/O readiness arriving in a different order, but code that relies on
   asyncio's documented FIFO order of ``call_soon`` can see schedules stock asyncio never runs.
2. **Time.** ``loop.time()`` is ``clock.now()`` of a :class:`~kubesim._core.VirtualClock`. When
   nothing is ready, time jumps straight to the earliest timer, the loop's own or the clock's
   (trio's ``MockClock`` autojump, ``looptime``), using no wall time: an hour of
   ``asyncio.sleep`` runs in milliseconds. When nothing is ready and no timer is pending, no
   task can ever run again: that is an :class:`AsyncDeadlock`, naming every pending task, what
   it awaits and where.

Same choices + same clock start + same program => same schedule and, with a
:class:`~kubesim._core.Trace`, the same trace hash (every executed callback and every time jump
is recorded). :func:`run` is the ``asyncio.run`` of this module, with step and virtual-time
bounds that turn a livelock into an :class:`AsyncLivelock` instead of a hang.

Not supported, by design (the simulation does no real I/O and has no real threads):

- sockets, DNS, pipes, subprocesses and signal handlers raise :class:`RealIOUnsupported` (a
  ``NotImplementedError``, which is what code probing optional loop features already catches).
  Route the store's API traffic through an in-process kubesim transport instead.
- ``run_in_executor`` (and so ``asyncio.to_thread``) does not start threads: the function runs
  synchronously, as one scheduled step of its own (so where it lands among the other ready
  callbacks is drawn like any other step), taking zero virtual time. A function that blocks
  blocks the whole simulation. The ``executor`` argument is ignored.
- ``call_soon_threadsafe`` from another thread works mechanically but is nondeterministic and
  cannot wake an idle loop (an idle loop with nothing scheduled is a deadlock, it never waits).
- a callback that never returns (a CPU spin without ``await``) cannot be interrupted; the step
  bound only counts callbacks.
- programs whose own behaviour depends on ``id()``-ordered containers are not deterministic:
  ``asyncio.wait``/``as_completed`` given bare coroutines create their tasks in set order; pass
  tasks. Likewise, garbage-collection timing decides when an abandoned async generator is
  finalized.

CPython internals relied on (checked against 3.10.13, 3.11.7, 3.12.1 and 3.13.0): every
``run_forever`` calls ``self._run_once()`` once per iteration until ``self._stopping``;
``BaseEventLoop.__init__`` creates ``_ready`` (a deque of ``Handle``), ``_scheduled`` (a heapq of
``TimerHandle`` ordered by ``_when``), ``_timer_cancelled_count`` and ``_asyncgens``;
``TimerHandle.cancel`` calls ``loop._timer_handle_cancelled`` which counts only handles with
``_scheduled`` set; ``Handle._callback`` is the scheduled callable, and a task's step and wakeup
callbacks (``TaskStepMethWrapper``, ``task_wakeup``, or the pure-Python bound methods) expose the
task as ``__self__``; ``Task._fut_waiter`` is the future a suspended task awaits.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import heapq
import itertools
import linecache
import re
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from kubesim._core.choices import ChoiceSource, SeededChoices
from kubesim._core.clock import VirtualClock
from kubesim._core.trace import Trace
from kubesim._core.trace import stable as _stable
from kubesim.sched.errors import Deadlock, Livelock

__all__ = [
    "AsyncDeadlock",
    "AsyncLivelock",
    "DeterministicEventLoop",
    "RealIOUnsupported",
    "run",
]

T = TypeVar("T")
if TYPE_CHECKING:
    # Only for annotations (TypeVarTuple is in typing from 3.11 on; the package supports 3.10).
    from typing_extensions import TypeVarTuple, Unpack

    Ts = TypeVarTuple("Ts")

# CPython's own thresholds for rebuilding the timer heap when many timers were cancelled
# (base_events._MIN_SCHEDULED_TIMER_HANDLES / _MIN_CANCELLED_TIMER_HANDLES_FRACTION, the same
# in 3.10-3.13). Copied rather than imported (they are private) and kept equal, because the heap
# layout after a rebuild decides the order of equal-deadline timers, and that order must match
# stock asyncio for the all-zero schedule.
_MIN_SCHEDULED_TIMER_HANDLES = 100
_MIN_CANCELLED_TIMER_HANDLES_FRACTION = 0.5

# Default task names are "Task-<n>" from a process-wide counter, so they differ between two runs
# in one process; trace labels use the loop's own task numbers and the coroutine name instead.
_DEFAULT_TASK_NAME = re.compile(r"Task-\d+")


def _callable_name(func: Any) -> str:
    """A callable's qualified name through ``functools.partial`` layers, never its repr (whose
    arguments may hold addresses or wall-clock times)."""
    while isinstance(func, functools.partial):
        func = func.func
    name = getattr(func, "__qualname__", None)
    return name if isinstance(name, str) else type(func).__qualname__


# Callbacks the teardown of run() may execute to cancel leftover tasks before giving up.
_TEARDOWN_STEPS = 100_000

_RECENT_STEPS = 12


class AsyncDeadlock(Deadlock):
    """Nothing is ready, no timer is pending, and the loop still has work it waits for.

    ``tasks`` holds one line per pending task (``task #<n> <name> awaits <what>``); the message
    adds each task's await chain.
    """

    def __init__(self, message: str, *, tasks: tuple[str, ...], time: float, steps: int) -> None:
        super().__init__(message)
        self.tasks = tasks
        self.time = time
        self.steps = steps


class AsyncLivelock(Livelock):
    """The loop ran past its step bound or its virtual-time bound without finishing.

    ``bound`` is ``"max_steps"`` or ``"max_time"``; ``limit`` is that bound's value.
    """

    def __init__(self, message: str, *, bound: str, limit: float, time: float, steps: int) -> None:
        super().__init__(message)
        self.bound = bound
        self.limit = limit
        self.time = time
        self.steps = steps


class RealIOUnsupported(NotImplementedError):
    """The program asked the deterministic loop for real I/O (sockets, pipes, processes)."""


def _no_real_io(what: str) -> RealIOUnsupported:
    return RealIOUnsupported(
        f"loop.{what}() needs real I/O, which kubesim's DeterministicEventLoop never does (it "
        "would make runs nondeterministic and could block the simulation): route the store's "
        "API traffic through an in-process kubesim transport instead of sockets"
    )


class _OrderedWeakSet:
    """The subset of ``weakref.WeakSet`` that ``BaseEventLoop`` uses for ``_asyncgens``.

    ``WeakSet`` iterates in hash (``id()``) order, so ``shutdown_asyncgens`` would close leftover
    async generators in an order that differs between runs. A ``WeakKeyDictionary`` iterates in
    insertion order (first iteration of each generator), which is deterministic.
    """

    def __init__(self) -> None:
        self._data: weakref.WeakKeyDictionary[Any, None] = weakref.WeakKeyDictionary()

    def add(self, item: Any) -> None:
        self._data[item] = None

    def discard(self, item: Any) -> None:
        self._data.pop(item, None)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._data))


class DeterministicEventLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose ready-callback order comes from ``choices`` and time from ``clock``.

    ``choices`` is drawn from directly; pass ``root.fork("asyncio")`` to keep the other
    subsystems' streams unchanged when this loop's draws change. ``trace`` (optional) receives
    ``("aio.step", index, n, label)`` for every executed callback and ``("aio.autojump", t)`` for
    every time jump. ``max_steps`` bounds executed callbacks over the loop's life and
    ``max_time`` bounds the virtual time (an absolute ``clock.now()`` value, as for
    :class:`~kubesim.sched.scheduler.Scheduler`); crossing either raises :class:`AsyncLivelock`.
    ``replay_hint`` ends every error message (how to run exactly this schedule again).
    """

    # Created by BaseEventLoop.__init__ in 3.10-3.13; typeshed does not declare them.
    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]
    _timer_cancelled_count: int
    _stopping: bool
    _debug: bool
    _current_handle: asyncio.Handle | None
    _asyncgens: Any

    def __init__(
        self,
        *,
        choices: ChoiceSource,
        clock: VirtualClock,
        trace: Trace | None = None,
        max_steps: int | None = None,
        max_time: float | None = None,
        replay_hint: str | None = None,
    ) -> None:
        super().__init__()
        if max_steps is not None and max_steps < 1:
            # Closed first: BaseEventLoop.__del__ warns about (and needs the state of) an
            # initialised, unclosed loop.
            self.close()
            raise ValueError(f"max_steps must be >= 1 or None, got max_steps={max_steps!r}")
        self._choices = choices
        self._clock = clock
        self._trace = trace
        self.max_steps = max_steps
        self.max_time = max_time
        self.replay_hint = replay_hint
        self._steps = 0
        self._recent: collections.deque[str] = collections.deque(maxlen=_RECENT_STEPS)
        self._task_numbers: weakref.WeakKeyDictionary[asyncio.Future[Any], int] = (
            weakref.WeakKeyDictionary()
        )
        self._task_counter = itertools.count(1)
        self._asyncgens = _OrderedWeakSet()

    # -- what the loop exposes ---------------------------------------------------------------
    @property
    def clock(self) -> VirtualClock:
        return self._clock

    @property
    def choices(self) -> ChoiceSource:
        return self._choices

    @property
    def trace(self) -> Trace | None:
        return self._trace

    @property
    def steps(self) -> int:
        """Ready callbacks executed so far (cancelled handles that were skipped not counted)."""
        return self._steps

    def time(self) -> float:
        return self._clock.now()

    def create_task(
        self, coro: Coroutine[Any, Any, T] | Generator[Any, None, T], **kwargs: Any
    ) -> asyncio.Task[T]:
        # Number tasks in creation order: labels in the trace and the order of teardown
        # cancellation must not depend on id()-ordered sets such as asyncio.all_tasks().
        # **kwargs passes name= (3.10+), context= (3.11+) and eager_start= (3.13.3+) through.
        task = super().create_task(coro, **kwargs)
        self.task_number(task)
        return task

    def task_number(self, task: asyncio.Future[Any]) -> int:
        """This loop's stable number for ``task`` (creation order, or first sight)."""
        number = self._task_numbers.get(task)
        if number is None:
            number = next(self._task_counter)
            self._task_numbers[task] = number
        return number

    def task_label(self, task: asyncio.Future[Any]) -> str:
        """``#<n> <name>``: the task's own name if one was given, else its coroutine's."""
        name = ""
        if isinstance(task, asyncio.Task):
            name = task.get_name()
            if _DEFAULT_TASK_NAME.fullmatch(name):
                coro = task.get_coro()
                name = getattr(coro, "__qualname__", type(coro).__name__)
        return _stable(f"#{self.task_number(task)} {name}".rstrip())

    # -- the one iteration -------------------------------------------------------------------
    def _run_once(self) -> None:
        """One iteration: drop cancelled timers, autojump if idle, promote due timers, run.

        Mirrors BaseEventLoop._run_once (3.10-3.13) with two changes: the selector poll is gone
        (nothing here can become ready except through a callback or a timer), and each of the
        iteration's ``ntodo`` steps runs the handle at a drawn index instead of ``popleft()``.
        Keeping the batch structure (timers are promoted only between batches) is what makes
        the all-zero schedule identical to stock asyncio, where a timer that falls due mid-batch
        runs after every callback appended during that batch.
        """
        self._drop_cancelled_timers()
        if not self._ready and not self._stopping:
            self._when_idle()
        self._fire_clock_timers()
        self._promote_due_timers()

        ready = self._ready
        for _ in range(len(ready)):
            if not ready:  # defensive: only close() removes handles, and it cannot run now
                break
            self._check_step_bound()
            n = len(ready)
            index = 0 if n == 1 else self._draw(n)
            if index == 0:
                handle = ready.popleft()
            else:
                handle = ready[index]
                del ready[index]
            if handle._cancelled:
                if self._trace is not None:
                    self._trace.record("aio.skip", index, n)
                continue
            label = self._handle_label(handle)
            self._recent.append(label)
            if self._trace is not None:
                self._trace.record("aio.step", index, n, label)
            self._steps += 1
            if self._debug:
                # Stock asyncio sets _current_handle only in debug mode (exception contexts use
                # it); its slow-callback warning is meaningless on virtual time, so it is gone.
                self._current_handle = handle
                try:
                    handle._run()
                finally:
                    self._current_handle = None
            else:
                handle._run()

    def _draw(self, n: int) -> int:
        index = self._choices.integer(0, n - 1)
        if not 0 <= index < n:
            raise ValueError(
                f"choice source {self._choices!r} returned {index} for integer(0, {n - 1})"
            )
        return index

    def _drop_cancelled_timers(self) -> None:
        # Same bookkeeping as BaseEventLoop._run_once so _timer_handle_cancelled stays correct.
        scheduled = self._scheduled
        count = len(scheduled)
        if (
            count > _MIN_SCHEDULED_TIMER_HANDLES
            and self._timer_cancelled_count / count > _MIN_CANCELLED_TIMER_HANDLES_FRACTION
        ):
            kept: list[asyncio.TimerHandle] = []
            for handle in scheduled:
                if handle._cancelled:
                    handle._scheduled = False  # type: ignore[attr-defined]
                else:
                    kept.append(handle)
            heapq.heapify(kept)
            self._scheduled = kept
            self._timer_cancelled_count = 0
        else:
            while scheduled and scheduled[0]._cancelled:
                self._timer_cancelled_count -= 1
                handle = heapq.heappop(scheduled)
                handle._scheduled = False  # type: ignore[attr-defined]

    def _promote_due_timers(self) -> None:
        # Stock asyncio promotes timers with when < now + clock_resolution because the wall
        # clock is coarse; virtual time is exact, so a timer is due when when <= now.
        now = self._clock.now()
        scheduled = self._scheduled
        while scheduled and scheduled[0].when() <= now:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False  # type: ignore[attr-defined]
            self._ready.append(handle)

    def _when_idle(self) -> None:
        """Nothing is ready: move time on to the next timer (or report the deadlock).

        The one place a subclass changes how the loop waits (see
        :class:`kubesim.sched.aio_thread.ControlledThreadLoop`).
        """
        self._autojump()

    def _fire_clock_timers(self) -> None:
        # Clock timers (the fake server's watch deadlines, bookmarks) fire as they fall due,
        # even when someone else advanced the shared clock; this is a heap peek when none are.
        self._clock.advance_to(self._clock.now())

    def _autojump(self) -> None:
        target = self._scheduled[0].when() if self._scheduled else None
        clock_next = self._clock.next_deadline()
        if clock_next is not None and (target is None or clock_next < target):
            target = clock_next
        if target is None:
            raise self._deadlock()
        if self.max_time is not None and target > self.max_time:
            raise self._livelock(
                "max_time",
                self.max_time,
                f"virtual time would pass max_time={self.max_time} s (now "
                f"{self._clock.now():.6g} s, next timer at {target:.6g} s) with nothing else "
                "to run: the program keeps waiting on timers (a watch or resync loop that never "
                "ends?); raise max_time if it is meant to run longer",
            )
        if target > self._clock.now():
            if self._trace is not None:
                self._trace.record("aio.autojump", target)
            self._clock.advance_to(target)

    def _check_step_bound(self) -> None:
        if self.max_steps is not None and self._steps >= self.max_steps:
            recent = ", ".join(self._recent)
            raise self._livelock(
                "max_steps",
                self.max_steps,
                f"the loop ran max_steps={self.max_steps} ready callbacks without finishing "
                f"(virtual time {self._clock.now():.6g} s): a task that never blocks for real "
                "(such as `while not done: await asyncio.sleep(0)`) keeps it busy forever; "
                f"raise max_steps if the program is just long. Most recent steps: {recent}",
            )

    # -- labels and reports ------------------------------------------------------------------
    def _handle_label(self, handle: asyncio.Handle) -> str:
        """A description of a handle's callback that is stable across runs and processes.

        No ids, no reprs with addresses, no default task names.
        """
        callback = getattr(handle, "_callback", None)
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, asyncio.Task):
            # A task's __step or __wakeup (C: TaskStepMethWrapper / task_wakeup, 3.10-3.13).
            return f"task {self.task_label(owner)}"
        return _stable(_callable_name(callback))

    def _pending_tasks(self) -> list[asyncio.Task[Any]]:
        return sorted(
            (task for task in asyncio.all_tasks(self) if not task.done()),
            key=self.task_number,
        )

    def _describe_wait(self, task: asyncio.Task[Any]) -> tuple[str, list[str]]:
        """What ``task`` awaits, and its await chain as traceback-style lines."""
        # task.get_stack() returns only the outermost coroutine frame for a suspended task
        # (a suspended frame has no f_back; asyncio.base_tasks._task_get_stack, 3.10-3.13), so
        # follow cr_await / gi_yieldfrom down to the innermost await, as 3.14's
        # asyncio.format_call_graph does.
        frames: list[FrameType] = list(task.get_stack())
        inner: Any = getattr(task.get_coro(), "cr_await", None)
        while inner is not None and len(frames) < 64:
            frame = getattr(inner, "cr_frame", None) or getattr(inner, "gi_frame", None)
            if frame is None:
                break
            frames.append(frame)
            inner = getattr(inner, "cr_await", None) or getattr(inner, "gi_yieldfrom", None)
        lines: list[str] = []
        for frame in frames:
            code = frame.f_code
            lines.append(f'File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}')
            source = linecache.getline(code.co_filename, frame.f_lineno).strip()
            if source:
                lines.append(f"  {source}")
        waiter = getattr(task, "_fut_waiter", None)
        if isinstance(waiter, asyncio.Task):
            what = f"task {self.task_label(waiter)}"
        elif waiter is None:
            what = "nothing (it has not started, or was woken)"
        else:
            # co_qualname ("Event.wait") is 3.11+; 3.10 has only co_name ("wait").
            innermost = frames[-1].f_code if frames else None
            where = getattr(innermost, "co_qualname", getattr(innermost, "co_name", "?"))
            what = f"a {type(waiter).__name__} in {where}()"
        return what, lines

    def _deadlock(self) -> AsyncDeadlock:
        pending = self._pending_tasks()
        summaries: list[str] = []
        body: list[str] = []
        for task in pending:
            what, lines = self._describe_wait(task)
            summary = f"task {self.task_label(task)} awaits {what}"
            summaries.append(summary)
            body.append(f"- {summary}")
            body.extend(f"    {line}" for line in lines)
        if pending:
            head = f"{len(pending)} pending task(s):"
        else:
            head = "no task is pending: the loop waits on a future that nothing will resolve"
        message = (
            "asyncio deadlock: nothing is ready to run and no timer is pending, so no task can "
            f"ever run again (virtual time {self._clock.now():.6g} s, after {self._steps} "
            f"steps). {head}\n" + "\n".join(body)
        )
        return AsyncDeadlock(
            self._with_hint(message),
            tasks=tuple(summaries),
            time=self._clock.now(),
            steps=self._steps,
        )

    def _livelock(self, bound: str, limit: float, message: str) -> AsyncLivelock:
        return AsyncLivelock(
            self._with_hint(message),
            bound=bound,
            limit=limit,
            time=self._clock.now(),
            steps=self._steps,
        )

    def _with_hint(self, message: str) -> str:
        if self.replay_hint:
            return f"{message}\nReplay: {self.replay_hint}"
        return message

    # -- no threads, no real I/O -------------------------------------------------------------
    def _write_to_self(self) -> None:
        # call_soon_threadsafe wakes a selector blocked in select(); this loop never blocks.
        pass

    def run_in_executor(
        self, executor: object, func: Callable[[Unpack[Ts]], T], *args: Unpack[Ts]
    ) -> asyncio.Future[T]:
        """Run ``func(*args)`` as one scheduled step of its own, on this thread.

        No thread is started (a thread would make the run nondeterministic): the call is a ready
        callback like any other, placed among them by the choice source, and takes zero virtual
        time. ``executor`` is ignored. The returned future gets the result or the exception.
        """
        if self.is_closed():
            raise RuntimeError("Event loop is closed")
        future: asyncio.Future[T] = self.create_future()

        def call() -> None:
            if future.cancelled():
                return
            try:
                result = func(*args)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

        # The trace label is the step's qualname: name it after the function it runs.
        call.__qualname__ = f"run_in_executor({_callable_name(func)})"
        self.call_soon(call)
        return future

    def add_reader(
        self, fd: Any, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts]
    ) -> NoReturn:
        raise _no_real_io("add_reader")

    def remove_reader(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("remove_reader")

    def add_writer(
        self, fd: Any, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts]
    ) -> NoReturn:
        raise _no_real_io("add_writer")

    def remove_writer(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("remove_writer")

    def add_signal_handler(
        self, sig: int, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts]
    ) -> NoReturn:
        raise _no_real_io("add_signal_handler")

    def remove_signal_handler(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("remove_signal_handler")

    async def getaddrinfo(self, *args: Any, **kwargs: Any) -> NoReturn:
        # The base class would run socket.getaddrinfo in run_in_executor: a real DNS lookup.
        raise _no_real_io("getaddrinfo")

    async def getnameinfo(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("getnameinfo")

    async def create_connection(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("create_connection")

    async def create_server(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("create_server")

    async def create_datagram_endpoint(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("create_datagram_endpoint")

    async def create_unix_connection(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("create_unix_connection")

    async def create_unix_server(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("create_unix_server")

    async def connect_accepted_socket(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("connect_accepted_socket")

    async def connect_read_pipe(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("connect_read_pipe")

    async def connect_write_pipe(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("connect_write_pipe")

    async def subprocess_exec(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("subprocess_exec")

    async def subprocess_shell(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("subprocess_shell")

    async def sendfile(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sendfile")

    async def start_tls(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("start_tls")

    async def sock_recv(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_recv")

    async def sock_recv_into(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_recv_into")

    async def sock_recvfrom(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_recvfrom")

    async def sock_recvfrom_into(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_recvfrom_into")

    async def sock_sendall(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_sendall")

    async def sock_sendto(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_sendto")

    async def sock_connect(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_connect")

    async def sock_accept(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_accept")

    async def sock_sendfile(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _no_real_io("sock_sendfile")


# -- the runner ------------------------------------------------------------------------------
async def _call(factory: Callable[[], Awaitable[T]]) -> T:
    # Called inside the running loop, so the factory may use get_running_loop() and create
    # loop-bound objects.
    return await factory()


def run(
    main: Coroutine[Any, Any, T] | Callable[[], Awaitable[T]],
    *,
    seed: int | str | None = None,
    choices: ChoiceSource | None = None,
    clock: VirtualClock | None = None,
    trace: Trace | None = None,
    max_steps: int | None = None,
    max_time: float | None = None,
) -> T:
    """Run ``main`` (a coroutine, or a zero-argument callable returning an awaitable) to the end.

    The ``asyncio.run`` of the simulation: a fresh :class:`DeterministicEventLoop` driven by
    ``choices`` (default ``SeededChoices(seed, name="asyncio")``, seed 0 when neither is given)
    on ``clock`` (default a fresh ``VirtualClock`` at 0). On return, leftover tasks are
    cancelled and awaited and async generators closed, in a deterministic order, then the loop
    is closed. Raises :class:`AsyncDeadlock`, or :class:`AsyncLivelock` when more than
    ``max_steps`` callbacks run or virtual time would pass ``max_time`` (absolute; None means no
    bound). Must be called from synchronous code (no loop running in this thread).
    """
    if seed is not None and choices is not None:
        if asyncio.iscoroutine(main):
            main.close()
        raise TypeError("run() takes seed= or choices=, not both")
    hint_source = f"choices={choices!r}"
    if choices is None:
        seed = 0 if seed is None else seed
        choices = SeededChoices(seed, name="asyncio")
        hint_source = f"seed={seed!r}"
    if asyncio.iscoroutine(main):
        what = f"{getattr(main, '__name__', 'main')}()"
    elif callable(main):
        what = getattr(main, "__name__", repr(main))
    else:
        raise TypeError(
            f"run() needs a coroutine or a callable returning one, got {type(main).__name__}"
        )
    bounds = "".join(
        f", {name}={value!r}"
        for name, value in (("max_steps", max_steps), ("max_time", max_time))
        if value is not None
    )
    try:
        loop = DeterministicEventLoop(
            choices=choices,
            clock=VirtualClock() if clock is None else clock,
            trace=trace,
            max_steps=max_steps,
            max_time=max_time,
            replay_hint=f"kubesim.sched.aio.run({what}, {hint_source}{bounds})",
        )
    except BaseException:
        if asyncio.iscoroutine(main):
            main.close()  # no "coroutine was never awaited" warning on top of the real error
        raise
    try:
        coro = main if asyncio.iscoroutine(main) else _call(main)
        task = loop.create_task(coro, name="main")
        try:
            result = loop.run_until_complete(task)
        except BaseException:
            _teardown(loop, after_failure=True)
            raise
        _teardown(loop, after_failure=False)
        return result
    finally:
        loop.close()


def _teardown(loop: DeterministicEventLoop, *, after_failure: bool) -> None:
    """Cancel leftover tasks and close async generators, as asyncio.run does.

    Teardown gets a step budget of its own and no time bound. After ``main`` returned, teardown
    is part of the run: its order is drawn like any other step, and a teardown that deadlocks
    or livelocks (a task that ignores cancellation) is reported. After ``main`` failed, and that
    includes the choice source itself raising (a Hypothesis-backed source that ran out of data),
    the first error is the one worth reading: teardown runs in FIFO order without drawing, and
    whatever goes wrong in it is dropped.
    """
    loop.max_steps = loop.steps + _TEARDOWN_STEPS
    loop.max_time = None
    if after_failure:
        loop._choices = _Fifo()
    try:
        pending = loop._pending_tasks()
        if pending:
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            for task in pending:
                if not task.cancelled() and task.exception() is not None:
                    loop.call_exception_handler(
                        {
                            "message": "unhandled exception during kubesim.sched.aio.run() "
                            "shutdown",
                            "exception": task.exception(),
                            "task": task,
                        }
                    )
        loop.run_until_complete(loop.shutdown_asyncgens())
    except Exception:
        if not after_failure:
            raise


class _Fifo:
    """Stock asyncio order: the shrink target of every draw."""

    def integer(self, lo: int, hi: int) -> int:
        return lo

    def fork(self, name: str) -> _Fifo:
        return self
