"""Stores with several threads under the controlled scheduler, against the fake API server.

:class:`ScheduledWait` is the server's wait policy for controlled runs: a store thread that
reads a watch with nothing ready parks in the scheduler until the server changes (a write, a
fault, a timer ending a watch), and since those can happen on virtual time, a parked watch read
lets the scheduler jump the clock instead of reporting a deadlock.

:func:`make_atomic` makes every server operation atomic under the scheduler: no controlled
thread is ever preempted while it holds the server's lock, so no other thread (nor a timer
callback fired while every thread waits) can find the lock taken.

:func:`controlled_server` builds an :class:`~kubesim.apiserver.server.APIServer` wired both
ways, on the scheduler's clock.
"""

from __future__ import annotations

import _thread
from typing import Any

from kubesim._core import SeededChoices, VirtualClock
from kubesim.apiserver.server import APIServer, AutojumpWait
from kubesim.apiserver.watch import WatchStream
from kubesim.sched import scheduler as _sched
from kubesim.sched.originals import ORIGINAL_CONDITION
from kubesim.sched.scheduler import Scheduler, Waitable


class _ServerChanges(Waitable):
    wakes_on_time = True

    def describe(self) -> str:
        return "the next watch event"


class ScheduledWait:
    """Park a controlled thread until the server changes; other callers autojump.

    ``scheduler``: the scheduler whose threads park here (a Simulation's, which is not active
    between two settles, when its driver writes to the server); by default the active one.
    """

    def __init__(self, server: APIServer, *, scheduler: Scheduler | None = None) -> None:
        self.changes = _ServerChanges()
        self.scheduler = scheduler
        # How many times a controlled thread parked on a watch read with nothing ready.
        self.blocked_reads = 0
        self._fallback = AutojumpWait()
        server.change_listeners.append(self._on_change)

    def _scheduler(self) -> Scheduler | None:
        return self.scheduler if self.scheduler is not None else _sched.active()

    def _on_change(self) -> None:
        scheduler = self._scheduler()
        if scheduler is not None:
            scheduler.wake(self.changes)

    def wait(self, stream: WatchStream) -> None:
        scheduler = self._scheduler()
        ct = scheduler.current_thread() if scheduler is _sched.active() and scheduler else None
        if scheduler is None or ct is None:
            self._fallback.wait(stream)
            return
        if not stream.ready():
            self.blocked_reads += 1
            scheduler.block(ct, self.changes)


class _AtomicLock:
    """The server's lock: a real re-entrant lock, and no scheduling points while a controlled
    thread holds it.

    Uncontrolled callers (a Simulation's driver, ``kubesim serve``) just take the real lock.
    A controlled thread cannot block on it either: whoever held it ran to the end of the
    server operation before any other controlled thread could run.
    """

    def __init__(self) -> None:
        self._real = _thread.RLock()
        # One entry per acquire: the atomic block entered for it, if any (owner-only state).
        self._atomic: list[Any] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._real.acquire(blocking, timeout):
            return False
        scheduler = _sched.active()
        block = None
        if scheduler is not None and scheduler.current_thread() is not None:
            block = scheduler.atomic()
            block.__enter__()
        self._atomic.append(block)
        return True

    def release(self) -> None:
        block = self._atomic.pop()
        self._real.release()
        if block is not None:
            block.__exit__(None, None, None)

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    # threading.Condition's protocol, for uncontrolled waiters on ``server.changed``.
    def _is_owned(self) -> bool:
        return bool(self._real._is_owned())  # type: ignore[attr-defined]

    def _release_save(self) -> Any:
        saved = (self._real._release_save(), self._atomic)  # type: ignore[attr-defined]
        self._atomic = []
        for block in saved[1]:
            if block is not None:
                block.__exit__(None, None, None)
        return saved

    def _acquire_restore(self, state: Any) -> None:
        real, blocks = state
        self._real._acquire_restore(real)  # type: ignore[attr-defined]
        for block in blocks:
            if block is not None:
                block.__enter__()
        self._atomic = blocks


def make_atomic(server: APIServer) -> APIServer:
    """Give ``server`` a lock under which its operations are atomic for the scheduler.

    Call it right after constructing the server, before anyone else uses it.
    """
    server.lock = _AtomicLock()  # type: ignore[assignment]
    server.changed = ORIGINAL_CONDITION(server.lock)
    return server


def controlled_server(
    *, seed: int | str = 0, clock: VirtualClock | None = None, **options: Any
) -> APIServer:
    """An APIServer whose watch reads park in the active controlled scheduler.

    Inside a run it shares the scheduler's clock, so watch timeouts and bookmarks happen in the
    same virtual time as the store's sleeps and timers. Its operations are atomic under the
    scheduler (:func:`make_atomic`).
    """
    if clock is None:
        scheduler = _sched.active()
        clock = scheduler.clock if scheduler is not None else VirtualClock()
    server = make_atomic(
        APIServer(choices=SeededChoices(seed, name="server"), clock=clock, **options)
    )
    server.wait_policy = ScheduledWait(server)
    return server
