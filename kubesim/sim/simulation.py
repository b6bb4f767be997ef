"""A simulation: one fake API server, one virtual clock, one choice source, and the store.

The store under test runs its own code, unchanged, in a *simulated thread*: a real thread
that runs only while the driver waits for it. The two hand a baton back and forth, so exactly
one of them runs at any time and every run with the same seed interleaves identically.

The store gives the baton back at the one place it blocks: reading the next watch event when
none is ready (``SimulationWait``, the server's wait policy). The driver then applies the next
step of the scenario (writes, faults, time) and hands the baton back with :meth:`settle`.

The controlled scheduler for several store threads (issue 3) generalises this baton; the seam
stays the same.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from kubesim._core import SeededChoices, Trace, VirtualClock
from kubesim.server.apiserver import APIServer, AutojumpWait
from kubesim.server.watch import WatchStream

# How long the driver waits, in wall time, for the store thread to hand the baton back before
# it declares the store blocked outside the simulation. Only a diagnosis: never part of a trace.
DEFAULT_HANDOFF_TIMEOUT = 120.0


class SimulationStopped(BaseException):
    """Raised inside the store thread to unwind it when the simulation stops.

    A ``BaseException`` so that a store's ``except Exception: retry`` loop cannot swallow it.
    """


class StoreBlockedOutsideSimulation(RuntimeError):
    """The store thread stopped handing the baton back (real sleep, socket or lock?)."""


class StoreCrashed(RuntimeError):
    """The store's thread raised; the original exception is ``__cause__``."""


class _StoreThread:
    def __init__(self, target: Callable[[], Any], name: str) -> None:
        self.name = name
        self._target = target
        self._resume = threading.Semaphore(0)
        self._parked = threading.Semaphore(0)
        self.stopping = False
        self.finished = False
        self.error: BaseException | None = None
        self.error_text = ""
        self.thread = threading.Thread(target=self._main, name=f"kubesim-store-{name}", daemon=True)

    def _main(self) -> None:
        self._resume.acquire()
        try:
            if not self.stopping:
                self._target()
        except SimulationStopped:
            pass
        except BaseException as exc:  # reported to the driver, which raises StoreCrashed
            self.error = exc
            self.error_text = traceback.format_exc()
        finally:
            self.finished = True
            self._parked.release()

    def park(self) -> None:
        """Called in the store thread: give the baton to the driver and wait for it back."""
        self._parked.release()
        self._resume.acquire()
        if self.stopping:
            raise SimulationStopped

    def run_until_parked(self, timeout: float) -> None:
        """Called by the driver: let the store run until it parks or finishes."""
        if self.finished:
            return
        self._resume.release()
        if not self._parked.acquire(timeout=timeout):
            raise StoreBlockedOutsideSimulation(
                f"store thread {self.name!r} did not yield within {timeout:.0f} s of wall time: it "
                "is blocked outside the simulation (a real sleep, socket, lock or queue?).\n"
                + "".join(traceback.format_stack(_frame_of(self.thread)))
            )


def _frame_of(thread: threading.Thread) -> Any:
    import sys

    return sys._current_frames().get(thread.ident or -1)


class SimulationWait:
    """Wait policy: the store thread parks; any other caller autojumps virtual time."""

    def __init__(self, simulation: Simulation) -> None:
        self._simulation = simulation
        self._fallback = AutojumpWait()

    def wait(self, stream: WatchStream) -> None:
        store = self._simulation._store
        if store is not None and threading.current_thread() is store.thread:
            self._simulation.blocked_reads += 1
            store.park()
        else:
            self._fallback.wait(stream)


class Simulation:
    """Drive a store against a fake API server, deterministically for ``seed``.

    Typical use::

        sim = Simulation(seed=7)
        sim.server.create("pods", pod, namespace="default")
        store = MyStore(sim.kubernetes_client())
        sim.start(store.run)      # runs until the store waits for a watch event
        sim.server.expire_watches()
        sim.settle()              # the store reacts (re-watches, handles events), then waits
        sim.stop()
    """

    def __init__(
        self,
        *,
        seed: int | str = 0,
        handoff_timeout: float = DEFAULT_HANDOFF_TIMEOUT,
        **server_options: Any,
    ) -> None:
        self.seed = seed
        self.choices = SeededChoices(seed)
        self.clock = VirtualClock()
        self.trace = Trace()
        self.handoff_timeout = handoff_timeout
        self.blocked_reads = 0
        self._store: _StoreThread | None = None
        self.server = APIServer(
            choices=self.choices.fork("server"),
            clock=self.clock,
            trace=self.trace,
            wait_policy=SimulationWait(self),
            **server_options,
        )

    def kubernetes_client(self) -> Any:
        """An in-process ``kubernetes.client.ApiClient`` wired to this simulation's server."""
        from kubesim.transport.kubernetes_client import kubernetes_client

        return kubernetes_client(self.server)

    # -- the store thread -----------------------------------------------------------------
    def start(self, target: Callable[[], Any], *, name: str = "store") -> None:
        """Run ``target`` (the store's main loop) in a simulated thread until it first waits."""
        if self._store is not None:
            raise RuntimeError("this simulation already runs a store; one store thread per run")
        self._store = _StoreThread(target, name)
        self._store.thread.start()
        self.trace.record("store-start", name)
        self.settle()

    def settle(self) -> None:
        """Hand the baton to the store until it waits for a watch event again (or finishes)."""
        store = self._store
        if store is None:
            return
        store.run_until_parked(self.handoff_timeout)
        if store.error is not None:
            error, store.error = store.error, None
            raise StoreCrashed(
                f"store thread {store.name!r} raised {type(error).__name__}: {error}\n"
                + store.error_text
            ) from error

    @property
    def store_finished(self) -> bool:
        return self._store is not None and self._store.finished

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass, timer by timer, the store settling after each."""
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
        """Unwind the store thread (it sees :class:`SimulationStopped`) and wait for it."""
        store = self._store
        if store is None or store.finished:
            return
        store.stopping = True
        store.run_until_parked(self.handoff_timeout)
        store.thread.join(self.handoff_timeout)
        self.trace.record("store-stop", store.name)

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
