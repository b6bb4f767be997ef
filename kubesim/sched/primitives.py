"""Simulated blocking primitives: the scheduler's versions of ``threading.Lock``, ``RLock`` and
``Condition``.

Everything else that blocks in the standard library is built on these three, looked up by name
at construction time: ``threading.Event``, ``Semaphore``, ``BoundedSemaphore``, ``Barrier`` and
``Timer``; ``queue.Queue``, ``LifoQueue``, ``PriorityQueue`` and (through ``queue._PySimpleQueue``)
``SimpleQueue``; ``concurrent.futures.ThreadPoolExecutor``. With these three patched in for a run
(:mod:`kubesim.sched.patches`), all of them park the calling thread instead of blocking in C
while holding the baton, which is the hang the prototype reproduced.

Every acquire, release, wait and notify is a scheduling point. Waiters are woken in thread-id
order, so who wins a contended lock is decided by the strategy, never by the OS.

Outside a controlled run the objects still work, as plain real locks (so a lock created during a
run and used after it, by an ``atexit`` hook say, does not break), and they keep what the run
left in them: a lock a parked controlled thread holds is not free for the driver of a
:class:`~kubesim.sim.simulation.Simulation` between two settles (it cannot wait for it, since
nothing runs while it waits: that is an error naming the holder), and a notify from the driver
wakes the controlled threads waiting on the condition, at the next settle.
"""

from __future__ import annotations

import _thread
from typing import Any

from kubesim.sched import scheduler as _sched
from kubesim.sched.scheduler import ControlledThread, Waitable


class SimLock(Waitable):
    """``threading.Lock`` under the scheduler."""

    def __init__(self) -> None:
        self._locked = False
        self._owner: ControlledThread | None = None
        self._real = _thread.allocate_lock()  # used only outside controlled runs

    def describe(self) -> str:
        # Named by its holder, never by id(): an address differs per run, and reports must read
        # the same in a replay.
        if self._owner is None:
            return f"{type(self).__name__} (not held)"
        return (
            f"{type(self).__name__} held by thread {self._owner.name!r} (thread {self._owner.id})"
        )

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        scheduler = _sched.active()
        if scheduler is None:
            if self._locked:
                return self._held_by_parked_thread(blocking)
            return self._real.acquire(blocking, timeout)
        ct = scheduler.require_current("a lock")
        scheduler.point()
        while self._locked:
            if not blocking or timeout == 0:
                return False
            timed_out = not scheduler.block(ct, self, None if timeout < 0 else timeout)
            if timed_out and self._locked:
                return False
        self._locked = True
        self._owner = ct
        return True

    def release(self) -> None:
        scheduler = _sched.active()
        if scheduler is None:
            self._real.release()
            return
        if not self._locked:
            raise RuntimeError("release unlocked lock")
        self._locked = False
        self._owner = None
        scheduler.wake(self)
        scheduler.point()

    def locked(self) -> bool:
        return self._locked if _sched.active() is not None else self._locked or self._real.locked()

    def _held_by_parked_thread(self, blocking: bool) -> bool:
        """Outside a run, a lock a controlled thread holds: no one can release it meanwhile."""
        if not blocking:
            return False
        holder = self._owner.name if self._owner is not None else "?"
        raise RuntimeError(
            f"{type(self).__name__} at {id(self):#x} is held by the controlled thread {holder!r}, "
            "which cannot run while an uncontrolled thread waits for it (between two settles "
            "of a Simulation nothing runs): take it from a controlled thread instead "
            "(Simulation.spawn)"
        )

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    # threading.Condition's protocol for the lock it wraps.
    def _release_save(self) -> Any:
        self.release()

    def _acquire_restore(self, state: Any) -> None:
        self.acquire()

    def _is_owned(self) -> bool:
        scheduler = _sched.active()
        if scheduler is None:
            if self._real.acquire(False):
                self._real.release()
                return False
            return True
        return self._locked and self._owner is scheduler.current_thread()

    def _at_fork_reinit(self) -> None:
        self._locked = False
        self._owner = None
        self._real = _thread.allocate_lock()


class SimRLock(SimLock):
    """``threading.RLock`` under the scheduler: re-entrant, released only by its owner."""

    def __init__(self) -> None:
        super().__init__()
        self._count = 0
        self._real_owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        scheduler = _sched.active()
        if scheduler is None:
            me = _thread.get_ident()
            if self._real_owner == me:
                self._count += 1
                return True
            if self._locked:
                return self._held_by_parked_thread(blocking)
            if not self._real.acquire(blocking, timeout):
                return False
            self._real_owner, self._count = me, 1
            return True
        ct = scheduler.require_current("an RLock")
        if self._locked and self._owner is ct:
            self._count += 1
            scheduler.point()
            return True
        if not super().acquire(blocking, timeout):
            return False
        self._count = 1
        return True

    def release(self) -> None:
        scheduler = _sched.active()
        if scheduler is None:
            if self._real_owner != _thread.get_ident():
                raise RuntimeError("cannot release un-acquired lock")
            self._count -= 1
            if not self._count:
                self._real_owner = None
                self._real.release()
            return
        if not self._locked or self._owner is not scheduler.current_thread():
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            super().release()

    __enter__ = acquire

    def _release_save(self) -> Any:
        count = self._count
        self._count = 1
        self.release()
        return count

    def _acquire_restore(self, state: Any) -> None:
        self.acquire()
        self._count = int(state)

    def _is_owned(self) -> bool:
        scheduler = _sched.active()
        if scheduler is None:
            return self._real_owner == _thread.get_ident()
        return self._locked and self._owner is scheduler.current_thread()


class _Waiter(Waitable):
    def __init__(self, condition: SimCondition, scheduler: _sched.Scheduler) -> None:
        self.condition = condition
        # Who parked the waiter: a notify from outside the run (a Simulation's driver between
        # settles) still has to make it runnable there.
        self.scheduler = scheduler
        self.notified = False

    def describe(self) -> str:
        return "a Condition's notify"


class SimCondition:
    """``threading.Condition`` under the scheduler; timeouts are virtual time."""

    def __init__(self, lock: Any = None) -> None:
        self._lock = lock if lock is not None else SimRLock()
        self.acquire = self._lock.acquire
        self.release = self._lock.release
        self._waiters: list[_Waiter] = []

    def __enter__(self) -> bool:
        return bool(self._lock.__enter__())

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)

    def __repr__(self) -> str:
        return f"<SimCondition({self._lock!r}, {len(self._waiters)})>"

    def _is_owned(self) -> bool:
        owned = getattr(self._lock, "_is_owned", None)
        return bool(owned()) if owned is not None else True

    def wait(self, timeout: float | None = None) -> bool:
        scheduler = _sched.active()
        if scheduler is None:
            raise RuntimeError(
                "a kubesim simulated Condition (an Event, a Queue...) was waited on outside a "
                "controlled run, where nothing could ever notify it: create blocking objects "
                "inside the run they are used in, and wait in a controlled thread (between the "
                "settles of a Simulation, run the waiting code with Simulation.spawn)"
            )
        if not self._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        ct = scheduler.require_current("a Condition")
        waiter = _Waiter(self, scheduler)
        self._waiters.append(waiter)
        # No scheduling point between releasing the lock and parking: a notify landing in that
        # window would find nobody parked and be lost (the wakeup Event.set relies on).
        with scheduler.atomic():
            saved = self._lock._release_save()
        try:
            woken = waiter.notified or scheduler.block(ct, waiter, timeout)
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            self._lock._acquire_restore(saved)
        return woken

    def wait_for(self, predicate: Any, timeout: float | None = None) -> Any:
        scheduler = _sched.active()
        clock_now = scheduler.clock.now if scheduler is not None else None
        end = None
        result = predicate()
        while not result:
            if timeout is not None:
                if end is None and clock_now is not None:
                    end = clock_now() + timeout
                remaining = timeout if clock_now is None or end is None else end - clock_now()
                if remaining <= 0:
                    break
                self.wait(remaining)
            else:
                self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        scheduler = _sched.active()
        woken = self._waiters[:n]
        del self._waiters[:n]
        for waiter in woken:
            waiter.notified = True
            waiter.scheduler.wake(waiter)
        if scheduler is not None:
            scheduler.point()

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all
