"""``multiprocessing.pool.ThreadPool`` for code kubesim runs: workers the scheduler controls.

The official Python client runs ``async_req=True`` calls (which the Kubeflow training SDK and
others use) on a ``multiprocessing.pool.ThreadPool``. Its worker threads would be controlled
like any other, but the pool's own handler thread waits on a pipe with
``multiprocessing.connection.wait``: a real, C-level wait no simulated lock can wake. Under
kubesim that thread was reported as blocked outside the simulation, and at exit the client's
``atexit`` hook joined a pool whose threads waited on simulated conditions: ``check`` and
``replay`` never exited.

:class:`ControlledPool` has the interface those callers use (``apply_async``, ``apply``,
``map``, ``close``, ``terminate``, ``join``, and the :class:`ApplyResult` they get back) with
the pool's semantics (``processes`` workers taking tasks in order), built only from
``threading`` and ``queue``: created in a run, those are the simulated ones, so every wait is
a scheduling point. :func:`kubesim.transport.kubernetes_client.patch_kubernetes` hands it to
the official client for the length of a run.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kubesim.sched.scheduler as _sched


class ApplyResult:
    """What ``apply_async`` returns: ``get``, ``wait``, ``ready``, ``successful``."""

    def __init__(
        self,
        callback: Callable[[Any], object] | None,
        error_callback: Callable[[BaseException], object] | None,
    ) -> None:
        self._done = threading.Event()
        self._callback = callback
        self._error_callback = error_callback
        self._success = False
        self._value: Any = None

    def ready(self) -> bool:
        return self._done.is_set()

    def successful(self) -> bool:
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        return self._success

    def wait(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def get(self, timeout: float | None = None) -> Any:
        self.wait(timeout)
        if not self.ready():
            raise multiprocessing.TimeoutError
        if self._success:
            return self._value
        raise self._value

    def _set(self, success: bool, value: Any) -> None:
        self._success, self._value = success, value
        if success and self._callback is not None:
            self._callback(value)
        if not success and self._error_callback is not None:
            self._error_callback(value)
        self._done.set()


_CLOSE = None  # a worker's last task


class ControlledPool:
    """A thread pool of ``processes`` workers, started with the first task."""

    def __init__(
        self,
        processes: int | None = None,
        initializer: Callable[..., object] | None = None,
        initargs: Iterable[Any] = (),
    ) -> None:
        if processes is not None and processes < 1:
            raise ValueError("Number of processes must be at least 1")
        self._processes = processes or os.cpu_count() or 1
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._tasks: queue.Queue[Any] = queue.Queue()
        self._workers: list[threading.Thread] = []
        self._running = True

    def apply_async(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] = (),
        kwds: Mapping[str, Any] | None = None,
        callback: Callable[[Any], object] | None = None,
        error_callback: Callable[[BaseException], object] | None = None,
    ) -> ApplyResult:
        if not self._running:
            raise ValueError("Pool not running")
        result = ApplyResult(callback, error_callback)
        while len(self._workers) < self._processes:
            worker = threading.Thread(
                target=self._work, name=f"ThreadPool-worker-{len(self._workers) + 1}", daemon=True
            )
            self._workers.append(worker)
            worker.start()
        self._tasks.put((result, func, tuple(args), dict(kwds or {})))
        return result

    def apply(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] = (),
        kwds: Mapping[str, Any] | None = None,
    ) -> Any:
        return self.apply_async(func, args, kwds).get()

    def map(self, func: Callable[[Any], Any], iterable: Iterable[Any]) -> list[Any]:
        results = [self.apply_async(func, (item,)) for item in iterable]
        return [result.get() for result in results]

    def close(self) -> None:
        """No more tasks; the workers end once those queued are done."""
        if self._running:
            self._running = False
            for _ in self._workers:
                self._tasks.put(_CLOSE)

    def terminate(self) -> None:
        self.close()

    def join(self) -> None:
        """Wait for the workers to end (after :meth:`close`). Outside a run (the client's
        ``atexit`` hook, after the simulation ended) there is nothing to wait for: the run's
        threads ended with it or were left behind by it."""
        if self._running:
            raise ValueError("Pool is still running")
        scheduler = _sched.active()
        if scheduler is None or scheduler.current_thread() is None:
            return
        for worker in self._workers:
            worker.join()

    def __enter__(self) -> ControlledPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.terminate()

    def _work(self) -> None:
        if self._initializer is not None:
            self._initializer(*self._initargs)
        while True:
            task = self._tasks.get()
            if task is _CLOSE:
                return
            result, func, args, kwds = task
            try:
                value = func(*args, **kwds)
            except Exception as error:  # the caller's to see, through get()
                result._set(False, error)
            else:
                result._set(True, value)
