"""Waiting on a live server: real threads, and virtual time that follows a real clock.

When no :class:`~kubesim.sim.Simulation`, controlled scheduler or deterministic loop drives the
server, it should behave like a live kube-apiserver: a watch read with nothing ready waits until
another thread writes (and wakes at once when it does), and watch timeouts and bookmarks fire
after real seconds. :class:`LiveWait` is that wait policy; it is the :class:`APIServer` default
and what ``kubesim serve`` uses.

This is the one place below the sim layer that reads a real clock, and only on purpose: a live
server is not a replayable run. Runs that must replay install their own policy (the
simulation's, the controlled scheduler's) or :class:`~kubesim.apiserver.server.AutojumpWait`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesim.apiserver.watch import StreamServer, WatchStream

# Bound at import: kubesim.sched patches ``time.monotonic`` to virtual time inside controlled
# runs, and a live server must keep following the real clock.
_wall_clock = time.monotonic

# Longest single wait before a waiting reader re-checks its stream; a liveness guard (every
# change notifies the waiters), not a timer.
IDLE_RECHECK = 1.0


class ClockFollower:
    """Moves a server's virtual clock forward by the time that passed on another clock.

    ``now`` is the clock to follow (the wall clock, an event loop's ``time``). Each
    :meth:`catch_up` advances the server by what ``now`` moved since the previous catch-up, firing
    the timers that fall due (and notifying waiters only then); the first one only takes the
    reading. Relative, so a manual ``server.advance(...)`` adds to the followed time instead of
    being undone or waited out. Keep one follower per server: two would count time twice.
    """

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._last: float | None = None

    def catch_up(self, server: StreamServer) -> None:
        with server.lock:
            now = self._now()
            last, self._last = self._last, now
            if last is None or now <= last:
                return
            clock = server.clock
            target = clock.now() + (now - last)
            deadline = clock.next_deadline()
            if deadline is not None and deadline <= target:
                server.advance_to(target)  # fires the timers and notifies the waiters
            else:
                # Only time passed: nothing a waiter could see, so no notification (which
                # would wake every waiter, including the one catching up, into a spin).
                clock.advance_to(target)

    def seconds_until_next_deadline(self, server: StreamServer) -> float | None:
        """Virtual seconds to the server clock's next timer (0 if due), None if there is none."""
        with server.lock:
            deadline = server.clock.next_deadline()
            return None if deadline is None else max(deadline - server.clock.now(), 0.0)


class LiveWait:
    """Wait policy for a server driven by real threads.

    A reader with nothing ready waits on :attr:`APIServer.changed`, which every write, watch end
    and fault notifies, so a write from another thread wakes it at once. With
    ``follow_wall_clock`` (the default), virtual time follows the wall clock: a waiting reader
    sleeps at most until the clock's next deadline and advances the server by the wall time that
    passed, so a ``timeoutSeconds=5`` watch ends after about 5 real seconds and a watch with no
    timeout simply waits (no re-watch storm). The in-process transports also call
    :meth:`catch_up` before each request, so a watch opened after a quiet spell starts its
    timeout from the current time.

    ``kubesim serve`` passes ``follow_wall_clock=False``: it advances the clock itself.
    """

    def __init__(self, *, follow_wall_clock: bool = True) -> None:
        self.follow_wall_clock = follow_wall_clock
        self._follower = ClockFollower(_wall_clock) if follow_wall_clock else None

    def catch_up(self, server: StreamServer) -> None:
        """Bring the server's virtual time up to the wall clock (no-op when not following)."""
        if self._follower is not None:
            self._follower.catch_up(server)

    def wait(self, stream: WatchStream) -> None:
        server = stream.server
        watcher = stream.watcher
        with server.lock:
            self.catch_up(server)
            if watcher.ended is not None or watcher.has_ready():
                return
            timeout = IDLE_RECHECK
            if self._follower is not None:
                until = self._follower.seconds_until_next_deadline(server)
                if until is not None:
                    timeout = min(timeout, until)
            if timeout > 0:
                server.changed.wait(timeout)
            self.catch_up(server)


__all__ = ["IDLE_RECHECK", "ClockFollower", "LiveWait"]
