"""Stores with several threads under the controlled scheduler, against the fake API server.

:class:`ScheduledWait` is the server's wait policy for controlled runs: a store thread that
reads a watch with nothing ready parks in the scheduler until the server changes (a write, a
fault, a timer ending a watch), and since those can happen on virtual time, a parked watch read
lets the scheduler jump the clock instead of reporting a deadlock.

:func:`controlled_server` builds an :class:`~kubesim.server.apiserver.APIServer` wired that way,
on the scheduler's clock.
"""

from __future__ import annotations

from typing import Any

from kubesim._core import SeededChoices, VirtualClock
from kubesim.sched import scheduler as _sched
from kubesim.sched.scheduler import Waitable
from kubesim.server.apiserver import APIServer, AutojumpWait
from kubesim.server.watch import WatchStream


class _ServerChanges(Waitable):
    wakes_on_time = True

    def describe(self) -> str:
        return "the next watch event"


class ScheduledWait:
    """Park a controlled thread until the server changes; other callers autojump."""

    def __init__(self, server: APIServer) -> None:
        self.changes = _ServerChanges()
        self._fallback = AutojumpWait()
        server.change_listeners.append(self._on_change)

    def _on_change(self) -> None:
        scheduler = _sched.active()
        if scheduler is not None:
            scheduler.wake(self.changes)

    def wait(self, stream: WatchStream) -> None:
        scheduler = _sched.active()
        if scheduler is None or scheduler.current_thread() is None:
            self._fallback.wait(stream)
            return
        ct = scheduler.current_thread()
        assert ct is not None
        if not stream.ready():
            scheduler.block(ct, self.changes)


def controlled_server(
    *, seed: int | str = 0, clock: VirtualClock | None = None, **options: Any
) -> APIServer:
    """An APIServer whose watch reads park in the active controlled scheduler.

    Inside a run it shares the scheduler's clock, so watch timeouts and bookmarks happen in the
    same virtual time as the store's sleeps and timers.
    """
    if clock is None:
        scheduler = _sched.active()
        clock = scheduler.clock if scheduler is not None else VirtualClock()
    server = APIServer(choices=SeededChoices(seed, name="server"), clock=clock, **options)
    server.wait_policy = ScheduledWait(server)
    return server
