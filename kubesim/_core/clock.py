"""Virtual time.

The fake API server never reads the wall clock: creation timestamps, watch deadlines and
bookmark ticks all come from a :class:`Clock`. A :class:`VirtualClock` only moves when told
(``advance``/``advance_to``), and fires the timers that fall due, in deadline order and, for
equal deadlines, in the order they were scheduled. That order is what makes "an hour of watch
traffic" replay identically in a fraction of a second (trio's ``MockClock`` with autojump).

Whoever drives a run decides how time passes: the simulation jumps straight to
:meth:`VirtualClock.next_deadline` when everything waits; ``kubesim serve`` advances the same
clock from the wall clock in its outermost layer.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

# Objects are created "at" this instant plus virtual time, so timestamps are stable per seed.
DEFAULT_EPOCH = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the clock's epoch."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...


class Timer:
    """A pending callback; :meth:`cancel` is idempotent."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """A clock that moves only when advanced, firing due timers in a deterministic order."""

    def __init__(self, *, start: float = 0.0, epoch: _dt.datetime = DEFAULT_EPOCH) -> None:
        self._now = float(start)
        self.epoch = epoch
        self._timers: list[tuple[float, int, Timer]] = []
        self._sequence = itertools.count()
        # Every write stamps a timestamp and many fall in the same virtual second: format once.
        self._stamp: tuple[int, str] = (-1, "")

    def now(self) -> float:
        return self._now

    def timestamp(self) -> str:
        """RFC 3339 with second precision, as Kubernetes writes ``metav1.Time``."""
        second = int(self._now)
        if self._stamp[0] != second:
            instant = self.epoch + _dt.timedelta(seconds=second)
            self._stamp = (second, instant.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return self._stamp[1]

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(when, callback)
        heapq.heappush(self._timers, (when, next(self._sequence), timer))
        return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self._now + delay, callback)

    def next_deadline(self) -> float | None:
        """When the earliest live timer fires, or None when nothing is scheduled."""
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def advance_to(self, when: float) -> int:
        """Move to ``when`` (never backwards), firing every timer due by then.

        Returns how many timers fired.
        """
        fired = 0
        while self._timers and self._timers[0][0] <= when:
            deadline, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, deadline)
            timer.cancelled = True
            timer.callback()
            fired += 1
        self._now = max(self._now, when)
        return fired

    def advance(self, seconds: float) -> int:
        if seconds < 0:
            raise ValueError(f"advance() needs seconds >= 0, got seconds={seconds}")
        return self.advance_to(self._now + seconds)

    def jump_to_next_deadline(self) -> bool:
        """Autojump: fire the next timer (and any sharing its deadline); False if none."""
        deadline = self.next_deadline()
        if deadline is None:
            return False
        self.advance_to(deadline)
        return True
