"""Async stores in a simulation: ``async def run()`` on ``kubernetes_asyncio``, unchanged.

An async store lives in one controlled thread, the ``store`` thread, on a
:class:`~kubesim.sched.aio_thread.ControlledThreadLoop` that runs on the simulation's clock.
Its API traffic goes through kubesim's in-process ``kubernetes_asyncio`` transport (no sockets):
the factory is handed such an ``ApiClient``, and clients the store builds itself
(``kubernetes_asyncio.config.load_kube_config()``, ``ApiClient()``) reach the simulation too.

Contract (what :class:`AsyncStoreHost` guarantees, and what it asks):

- A store is *async* when its factory is ``async def`` (it is awaited inside the store's loop,
  so it may create tasks, futures and clients, and gets a ``kubernetes_asyncio`` client), or when
  a plain factory returns a store whose ``run`` is ``async def`` (that factory gets the official
  client, as every plain factory does; a store that builds its own asyncio client is fine).
- ``run()`` is awaited as the loop's main task; the run ends when it returns. Leftover tasks are
  then cancelled and async generators closed, as ``asyncio.run`` does.
- Hooks may be plain methods or ``async def``. ``read()`` and ``stop()`` always run *on the
  loop*, as a task handed over from the calling thread: an asyncio consumer reads between two
  awaits, never in the middle of a callback, and a reader thread preempting the loop mid-callback
  would see states no real consumer can. ``view()``, ``sizes()`` and ``effects()`` are called by
  the driver at quiescent points, where the loop waits between callbacks; an ``async def`` one is
  handed to the loop the same way.
- ``workers()`` may return coroutine functions (started as tasks on the loop) or plain
  functions (started as threads, as for a threaded store).
- A ``run()`` cancelled because ``stop()`` cancelled the task it awaits is a clean end; so is a
  ``stop()`` cut short because ``run()`` ended and the loop's teardown cancelled what was left.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from kubesim.sched.aio_thread import ControlledThreadLoop, LoopOrder

__all__ = ["AsyncStoreHost", "is_async_factory", "is_async_store"]


def is_async_factory(factory: object) -> bool:
    """True for an ``async def`` factory (or a callable object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(factory) or inspect.iscoroutinefunction(
        getattr(factory, "__call__", None)  # noqa: B004 - the bound __call__, not callable()
    )


def is_async_store(store: object) -> bool:
    """True for a store whose ``run`` is ``async def``."""
    return inspect.iscoroutinefunction(getattr(store, "run", None))


class AsyncStoreHost:
    """One async store's loop and the doors other threads use to reach it.

    ``serve_factory``/``serve_store`` run in the store's controlled thread and return when
    ``run()`` ends. ``on_loop`` is called from other controlled threads (readers, the stop
    caller); ``from_driver`` by the scenario driver at quiescent points.
    """

    def __init__(self, simulation: Any, order: LoopOrder | None = None) -> None:
        self.sim = simulation
        self.order = order if order is not None else LoopOrder()
        self.loop: ControlledThreadLoop | None = None
        self.stopping = False
        self.run_ended = False  # run() returned (or was cancelled by stop()): the loop tears down

    # -- the store thread ---------------------------------------------------------------------
    def serve_factory(
        self, factory: Callable[[Any], Awaitable[Any]], accept: Callable[[Any], bool]
    ) -> None:
        """Build the store with ``await factory(client)`` on a new loop, then run it.

        ``accept(store)`` checks the store (and may refuse it: False ends the thread quietly).
        """

        async def main() -> None:
            from kubesim.transport.kubernetes_asyncio_client import (
                detach,
                kubernetes_asyncio_client,
            )

            client = kubernetes_asyncio_client(self.sim.server)
            try:
                store = await factory(client)
                if accept(store):
                    await self._run(store)
            finally:
                detach(client)  # its loop may be gone (a crash): no await

        self._serve(main)

    def serve_store(self, store: Any) -> None:
        """Run an already built store whose ``run`` is ``async def``."""
        self._serve(lambda: self._run(store))

    def _serve(self, main: Callable[[], Awaitable[None]]) -> None:
        from kubesim.sched.aio import _teardown

        loop = ControlledThreadLoop(choices=self.order, clock=self.sim.clock, trace=self.sim.trace)
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:

            async def call() -> None:
                await main()

            task = loop.create_task(call(), name="run")
            try:
                loop.run_until_complete(task)
                self.run_ended = True
            except asyncio.CancelledError:
                self.run_ended = True
                if not self.stopping:
                    raise RuntimeError(
                        "the store's run() was cancelled while nobody stopped it (a task it "
                        "awaited was cancelled)"
                    ) from None
            except BaseException:
                _bury(loop)
                raise
            _teardown(loop, after_failure=False)
        finally:
            loop.close()
            asyncio.set_event_loop(None)

    async def _run(self, store: Any) -> None:
        workers = getattr(store, "workers", None)
        for number, work in enumerate(workers() if callable(workers) else (), 1):
            if inspect.iscoroutinefunction(work):
                asyncio.get_running_loop().create_task(work(), name=f"worker-{number}")
            else:
                threading.Thread(target=work, name=f"worker-{number}", daemon=True).start()
        result = store.run()
        if not inspect.isawaitable(result):
            raise TypeError(
                f"the store's run() returned {type(result).__name__}, not an awaitable: an "
                "async store's run() is `async def run(self)`"
            )
        await result

    # -- other threads ------------------------------------------------------------------------
    def on_loop(self, hook: Callable[[], Any], *, name: str) -> Any:
        """Run ``hook()`` (awaiting its result if it is awaitable) as a task on the store's
        loop, from another controlled thread, and wait for it. Its exception is re-raised here.
        """
        loop = self.loop
        if loop is None or loop.is_closed():
            raise RuntimeError(f"cannot call the store's {name}(): its event loop has ended")
        if name == "stop":
            self.stopping = True
        done = threading.Event()  # created in the calling controlled thread: a simulated one
        box: dict[str, Any] = {}

        async def call() -> None:
            try:
                result = hook()
                if inspect.isawaitable(result):
                    result = await result
                box["result"] = result
            except BaseException as error:  # handed to the caller, who raises it
                box["error"] = error
            finally:
                done.set()

        def start() -> None:
            loop.create_task(call(), name=f"kubesim {name}()")

        loop.call_soon_threadsafe(start)
        done.wait()
        error = box.get("error")
        if isinstance(error, asyncio.CancelledError) and name == "stop" and self.run_ended:
            # run() ended (what stop() asked for) and the loop's teardown cancelled the rest of
            # stop() with the other leftover tasks: the store has stopped.
            return None
        if error is not None:
            raise error
        return box.get("result")

    def from_driver(self, hook: Callable[[], Any], *, name: str) -> Any:
        """Call ``hook()`` from the driver at a quiescent point (the loop waits between
        callbacks). An awaitable result is handed to the loop and the store settles."""
        result = hook()
        if not inspect.isawaitable(result):
            return result
        loop = self.loop
        if loop is None or loop.is_closed():
            if inspect.iscoroutine(result):
                result.close()
            raise RuntimeError(f"cannot await the store's {name}(): its event loop has ended")
        box: dict[str, Any] = {}

        async def call() -> None:
            try:
                box["result"] = await result
            except BaseException as error:
                box["error"] = error

        loop.call_soon_threadsafe(lambda: loop.create_task(call(), name=f"kubesim {name}()"))
        self.sim.settle()
        if "error" in box:
            raise box["error"]
        if "result" not in box:
            raise RuntimeError(
                f"the store's async {name}() did not finish while the store settled: a hook "
                "kubesim calls at quiescent points must not wait for time to pass"
            )
        return box["result"]


_BURY_ROUNDS = 8


def _bury(loop: ControlledThreadLoop) -> None:
    """The store's thread is being unwound (its process crashed, or the run ended) or failed.

    Its tasks are cancelled and run to their end in FIFO order, so their ``finally`` blocks and
    ``async with`` exits run, as an unwound thread's do. Cleanup that would wait for something
    is cut short: the waiting raises again (the thread is being unwound) and the rest is left
    undone, as in a process that dies. Coroutines still suspended then are closed here, not at
    some later garbage collection where their cleanup would fail on a loop that is gone.
    """
    loop._choices = LoopOrder()  # FIFO
    # Cleanup may start tasks of its own (kopf closes its schedulers under asyncio.shield):
    # cancel again what the previous round started, a bounded number of times.
    for _ in range(_BURY_ROUNDS):
        pending = loop._pending_tasks()
        if not pending:
            break
        for task in pending:
            task.cancel()
        with contextlib.suppress(BaseException):  # the unwinding itself, raised again at a wait
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    for task in loop._pending_tasks():
        task._log_destroy_pending = False  # type: ignore[attr-defined]
        # GeneratorExit thrown in; a finally block that awaits makes close() raise
        # RuntimeError, one that fails raises its own error: cleanup of a dead store.
        with contextlib.suppress(Exception):
            task.get_coro().close()
