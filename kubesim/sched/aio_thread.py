"""An asyncio event loop that runs inside one controlled thread of a simulation.

:class:`~kubesim.sched.aio.DeterministicEventLoop` owns time: when nothing is ready it jumps the
clock to the next timer. Inside a :class:`~kubesim.sim.simulation.Simulation` time belongs to
the driver (``settle()`` runs threads at one instant, ``advance()`` moves the clock), and other
threads (the scenario driver writing to the server, reader threads, a ``stop()`` caller) hand
the loop work through ``call_soon_threadsafe``. :class:`ControlledThreadLoop` is the same
deterministic loop with one change, the contract of this module:

- **Idle means waiting, as a thread.** With nothing ready, the loop waits on a
  ``threading.Event`` created in its controlled thread (so a simulated one) for at most the time
  until its earliest timer. The scheduler sees an ordinary waiting thread: the store is
  quiescent, ``advance()`` wakes it when its timer falls due, and ``call_soon_threadsafe`` from
  any thread (the in-process ``kubernetes_asyncio`` transport's watch wakeups among them) sets
  the event. A loop with nothing ready and no timer waits until someone hands it work; that is
  a store waiting on its watch, not a deadlock.
- **The clock's own timers are not fired from here**: the driver fires them
  (``Simulation.advance``), so the loop never reorders the server's deadlines.

The order of ready callbacks comes from ``choices`` as in the parent class. :class:`LoopOrder`
is the choice source a scenario gives it: FIFO (stock asyncio) except at the listed
*reorder points*, where the newest ready callback runs first. The points are counted like the
thread scheduler's preemptions, from the start of every step's reaction
(:meth:`LoopOrder.rebase`), so the one schedule Hypothesis draws and shrinks for a scenario
moves both the threads and the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from kubesim._core.clock import VirtualClock
from kubesim._core.trace import Trace
from kubesim.sched.aio import DeterministicEventLoop

__all__ = ["ControlledThreadLoop", "LoopOrder"]

# Ready callbacks the loop may run without ever waiting before it is called a livelock (a task
# that loops on ``await asyncio.sleep(0)``): far above what reacting to one step takes.
DEFAULT_BUSY_STEPS = 200_000


class LoopOrder:
    """FIFO order, except at reorder points (counted per reaction) where the newest goes first.

    A draw is counted only when there is a choice to make (two or more ready callbacks), so the
    points land on real alternatives. ``integer(lo, hi)`` is the whole choice-source surface the
    loop uses.
    """

    def __init__(self, points: Sequence[int] = ()) -> None:
        if any(not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in points):
            raise ValueError(f"LoopOrder needs non-negative int points, got points={points!r}")
        self.points = frozenset(points)
        self.draws = 0
        self.reordered = 0

    def rebase(self) -> None:
        """Count the points from here again (the driver calls this before every reaction)."""
        self.draws = 0

    def integer(self, lo: int, hi: int) -> int:
        draw = self.draws
        self.draws += 1
        if draw in self.points and hi > lo:
            self.reordered += 1
            return hi
        return lo

    def fork(self, name: str) -> LoopOrder:
        return self

    def __repr__(self) -> str:
        return f"LoopOrder({sorted(self.points)})"


class ControlledThreadLoop(DeterministicEventLoop):
    """A :class:`DeterministicEventLoop` that waits like a thread instead of jumping time.

    Create it *inside* the controlled thread that will run it (its wake event must be a
    simulated one). ``max_busy_steps`` bounds the callbacks run between two waits.
    """

    def __init__(
        self,
        *,
        choices: LoopOrder | None = None,
        clock: VirtualClock,
        trace: Trace | None = None,
        max_busy_steps: int = DEFAULT_BUSY_STEPS,
        replay_hint: str | None = None,
    ) -> None:
        super().__init__(
            choices=choices if choices is not None else LoopOrder(),
            clock=clock,
            trace=trace,
            replay_hint=replay_hint,
        )
        self._wake = threading.Event()
        self.max_busy_steps = max_busy_steps
        self._busy_since = 0

    def _when_idle(self) -> None:
        timeout = None
        if self._scheduled:
            timeout = max(0.0, self._scheduled[0].when() - self._clock.now())
        self._wake.wait(timeout)
        # Cleared after waking: whatever set it also put its callback in _ready, which this
        # iteration runs, so a set that lands between the wait and the clear loses nothing.
        self._wake.clear()
        self._busy_since = self._steps

    def _fire_clock_timers(self) -> None:
        pass  # the driver fires them (Simulation.advance), in its own order

    def _check_step_bound(self) -> None:
        if self._steps - self._busy_since >= self.max_busy_steps:
            recent = ", ".join(self._recent)
            raise self._livelock(
                "max_steps",
                self.max_busy_steps,
                f"the store's event loop ran {self.max_busy_steps:,} callbacks without ever "
                f"waiting (virtual time {self._clock.now():.6g} s): a task that never blocks "
                "for real (such as `while not done: await asyncio.sleep(0)`). Most recent "
                f"steps: {recent}",
            )

    def _write_to_self(self) -> None:
        # call_soon_threadsafe from another thread: wake the waiting loop.
        self._wake.set()
