"""Watchers: one per open watch request, fed by the server as writes commit.

A :class:`Watcher` owns the queue of lines one client has not read yet. The server pushes
every committed event to each watcher of that resource; the watcher decides, per its own
label and field selectors, what the client sees (apiserver ``cache_watcher.go``,
``convertToWatchEvent``):

=========================  ===================================================
matched before / after      delivered
=========================  ===================================================
no / yes                    ``ADDED`` (new object)
yes / yes                   ``MODIFIED`` (new object)
yes / no                    ``DELETED`` (old object, stamped with the new RV)
no / no                     nothing
=========================  ===================================================

Transports read through :class:`WatchStream`, which is the one place the simulation may block:
when no line is ready, :meth:`WatchStream.next_chunk` asks the server's :class:`WaitPolicy` to
wait, and the policy decides what waiting means (park a simulated thread and move virtual time,
or wait on the wall clock under ``kubesim serve``).
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from kubesim._core.clock import Timer, VirtualClock
from kubesim.apiserver.encoding import dumps
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.selectors import FieldSelector, LabelSelector
from kubesim.apiserver.storage import ADDED, DELETED, MODIFIED, Event, Key, Stored

JSON = dict[str, Any]

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


class WatchEnd(enum.Enum):
    """How a watch ended, as the client experiences it."""

    CLOSED = "closed"  # clean end of the chunked body (timeout, expiry, server close)
    DROPPED = "dropped"  # connection cut with no terminating chunk
    CANCELLED = "cancelled"  # the client went away


class WatchDropped(ConnectionError):
    """Raised by :meth:`WatchStream.next_chunk` when the server cut the connection abruptly."""


class WatchReadTimeout(TimeoutError):
    """Raised by :meth:`WatchStream.next_chunk` when nothing arrived for the client's read
    timeout (:attr:`WatchStream.read_timeout`, in the server's time)."""


class WaitPolicy(Protocol):
    """What "block until the watch has something" means for whoever drives the server.

    ``wait`` is called with the server lock *not* held, when ``stream`` had nothing to read; it
    returns once the stream may have changed (a line, an end, or time having passed). It must
    not spin: if nothing can ever change, it raises.
    """

    def wait(self, stream: WatchStream) -> None: ...


class StreamServer(Protocol):
    """What a stream and its wait policy use of the server that opened it (an
    :class:`~kubesim.apiserver.server.APIServer`): named here rather than imported, so that this
    module does not depend on the server, nor does the watch cache built on it
    (:mod:`kubesim.apiserver.watch_cache`).
    """

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def changed(self) -> threading.Condition: ...

    @property
    def clock(self) -> VirtualClock: ...

    @property
    def wait_policy(self) -> WaitPolicy: ...

    @property
    def read_hooks(self) -> list[Callable[[], None]]: ...

    def advance_to(self, when: float) -> None: ...

    def notify_changed(self) -> None: ...


def _object_line(event_type: str, body: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + body + b"}\n"


class Watcher:
    """Server-side state of one watch."""

    def __init__(
        self,
        *,
        ident: int,
        resource: ResourceType,
        namespace: str | None,
        label_selector: LabelSelector,
        field_selector: FieldSelector,
        allow_bookmarks: bool,
        buffer_limit: int | None,
        on_close: Callable[[Watcher], None],
        on_deliver: Callable[[Stored], None] | None = None,
    ) -> None:
        self.ident = ident
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.allow_bookmarks = allow_bookmarks
        self.buffer_limit = buffer_limit
        self._on_close = on_close
        # Told of every object version the client reads (APIServer.delivery_listeners).
        self.on_deliver = on_deliver
        self._initial: Iterator[bytes] | None = None
        self._peeked: bytes | None = None  # the initial line has_ready() took a look at
        self._queue: deque[bytes | Event] = deque()
        # How many queued items, at the front of the queue, are the history replayed when the
        # watch opened: sent at the client's pace, they do not count towards buffer_limit.
        self._replayed = 0
        self._replaying = False
        self.ended: WatchEnd | None = None
        # A half-open connection (APIServer.silence_watches): nothing reaches the client, not
        # even the end, until the connection is cut.
        self.silent = False
        self.timers: list[Timer] = []
        self.delivered = 0
        self._closing = False
        self._filtered = not (label_selector.empty() and field_selector.empty())
        # A watch from RV r sends only events (and bookmarks) newer than r, even when r is
        # ahead of the server: it then waits for r (cache_watcher.go process()).
        self.after_rv = 0

    # -- matching -------------------------------------------------------------------------
    def matches(self, key: Key, stored: Stored) -> bool:
        """Whether the object stored under ``key`` is one this watch sees. The namespace comes
        from the key, so an unfiltered watch never decodes an object that was only encoded."""
        if self.namespace is not None and (key[0] or None) != self.namespace:
            return False
        if not self._filtered:
            return True
        obj = stored.obj
        if not self.label_selector.matches(obj["metadata"].get("labels")):
            return False
        if self.field_selector.empty():
            return True
        return self.field_selector.matches(self.resource.fields_of(obj))

    # -- feeding --------------------------------------------------------------------------
    def set_initial(self, lines: Iterator[bytes]) -> None:
        self._initial = lines

    def push_line(self, line: bytes) -> None:
        if self.ended is None:
            self._queue.append(line)

    def offer(self, event: Event) -> None:
        """Consider one committed event; enqueue what this watcher's client should see."""
        if self.ended is not None or event.rv <= self.after_rv or self.silent:
            return
        was = event.old is not None and self.matches(event.key, event.old)
        if event.type == DELETED:
            if was:
                self._enqueue(event)
            return
        now = self.matches(event.key, event.new)
        if now and (was or event.type == ADDED):
            self._enqueue(event)
        elif now:
            self._enqueue(_object_line(ADDED, event.new.json()))
        elif was and event.old is not None:
            self._enqueue(_object_line(DELETED, _restamp(event.old.obj, event.rv)))

    def replay(self, events: Iterable[Event]) -> None:
        """Queue the history since the watch's RV, ahead of any live event.

        Like the initial events of a watch without RV, the replay is sent at the client's pace
        (cache_watcher.go ``processInterval`` drains the interval before it reads its input
        channel): only live events count towards ``buffer_limit``. Otherwise a watch resumed
        from an RV more than ``buffer_limit`` events back would be closed before the client
        could read anything, and a reflector re-watching from the same RV would never progress.
        """
        self._replaying = True
        try:
            for event in events:
                self.offer(event)
        finally:
            self._replaying = False

    def _enqueue(self, item: bytes | Event) -> None:
        self._queue.append(item)
        if self._replaying:
            self._replayed += 1
            return
        if self.buffer_limit is not None and self.backlog > self.buffer_limit:
            # apiserver cache_watcher.go: "Forcing watcher close due to unresponsiveness".
            self.end(WatchEnd.CLOSED)

    @property
    def backlog(self) -> int:
        """Live events queued and not yet read by the client (what ``buffer_limit`` bounds)."""
        return len(self._queue) - self._replayed

    def bookmark(self, rv: int) -> None:
        if not self.allow_bookmarks or self.ended is not None or rv < self.after_rv or self.silent:
            return
        metadata: JSON = {"resourceVersion": str(rv)}
        obj = {
            "kind": self.resource.kind,
            "apiVersion": self.resource.api_version,
            "metadata": metadata,
        }
        self._queue.append(_object_line("BOOKMARK", dumps(obj)))

    def close_when_drained(self) -> None:
        """End cleanly once the client has read what is queued (the ERROR-then-close pattern)."""
        self._closing = True

    def end(self, how: WatchEnd) -> None:
        if self.ended is not None:
            return
        self.ended = how
        self._queue.clear()
        self._replayed = 0
        self._initial = self._peeked = None
        for timer in self.timers:
            timer.cancel()
        self._on_close(self)

    # -- draining -------------------------------------------------------------------------
    def has_ready(self) -> bool:
        if self.silent:
            return False
        if self._queue:
            return True
        if self._initial is not None:
            # Peek: the initial-events iterator may be exhausted already.
            if self._peeked is None:
                try:
                    self._peeked = next(self._initial)
                except StopIteration:
                    self._initial = None
                    return bool(self._queue)
            return True
        return False

    def take(self, limit: int) -> list[bytes]:
        lines: list[bytes] = []
        # Synthetic ADDED lines first: live events queued since the watch opened come after
        # them (cacher.go: the initial interval is sent before the watcher's input channel).
        if self._initial is not None:
            if self._peeked is not None:
                lines.append(self._peeked)
                self._peeked = None
            while len(lines) < limit:
                line = next(self._initial, None)
                if line is None:
                    self._initial = None
                    break
                lines.append(line)
        queue = self._queue
        deliver = self.on_deliver
        while queue and len(lines) < limit:
            item = queue.popleft()
            if isinstance(item, bytes):
                lines.append(item)
            else:
                lines.append(item.line())
                if deliver is not None:
                    deliver(item.new)
            if self._replayed:
                self._replayed -= 1
        self.delivered += len(lines)
        if self._closing and not self._queue and self._initial is None:
            self.end(WatchEnd.CLOSED)
        return lines


def _restamp(obj: JSON, rv: int) -> bytes:
    """``obj`` with ``metadata.resourceVersion`` replaced, for DELETED-on-transition events."""
    metadata = dict(obj["metadata"])
    metadata["resourceVersion"] = str(rv)
    return dumps({**obj, "metadata": metadata})


def initial_events_end_line(resource: ResourceType, rv: int) -> bytes:
    """The BOOKMARK that ends a watch-list's initial events (apiserver storage/util.go)."""
    metadata = {"resourceVersion": str(rv), "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}}
    obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": metadata}
    return _object_line("BOOKMARK", dumps(obj))


def initial_lines(items: Iterator[tuple[Key, Stored]], watcher: Watcher) -> Iterator[bytes]:
    """Synthetic ADDED lines for existing objects, in key order, each with its own RV."""
    for key, stored in items:
        if watcher.matches(key, stored):
            if watcher.on_deliver is not None:
                watcher.on_deliver(stored)
            yield _object_line(ADDED, stored.json())


class WatchStream:
    """The transport-facing side of a watch: read chunks of lines until the end."""

    # 16 lines a chunk: the official client's line splitter copies its buffer after every line,
    # so big chunks cost it quadratic time (bench/run.py: 35k ev/s at 256 lines, 57k at 16).
    def __init__(
        self, server: StreamServer, watcher: Watcher, *, max_lines_per_chunk: int = 16
    ) -> None:
        self.server = server
        self.watcher = watcher
        self.max_lines = max_lines_per_chunk
        # The client's read timeout, in seconds of the server's clock: the longest a read may
        # wait for the next line (urllib3's read timeout, aiohttp's sock_read). None: forever.
        self.read_timeout: float | None = None

    @property
    def ident(self) -> int:
        return self.watcher.ident

    def ready(self) -> bool:
        """True when :meth:`next_chunk` would not block (a line or the end is available)."""
        with self.server.lock:
            watcher = self.watcher
            return not watcher.silent and (watcher.ended is not None or watcher.has_ready())

    def poll(self) -> bytes | None:
        """Lines ready now, b"" at a clean end, None when nothing is ready; never blocks."""
        with self.server.lock:
            watcher = self.watcher
            if watcher.silent:
                return None
            if watcher.ended is not None:
                if watcher.ended is WatchEnd.DROPPED:
                    raise WatchDropped(f"watch {watcher.ident} was dropped by the server")
                return b""
            lines = watcher.take(self.max_lines)
            if not lines:
                return None
        for hook in self.server.read_hooks:
            hook()  # without the lock: a harness may block the reader here
        return b"".join(lines)

    def next_chunk(self) -> bytes:
        """One or more complete lines; b"" once the stream ended cleanly.

        Raises :class:`WatchDropped` if the server cut the connection abruptly, and
        :class:`WatchReadTimeout` if nothing came for :attr:`read_timeout` seconds.
        """
        chunk = self.poll()
        if chunk is not None:
            return chunk
        if self.read_timeout is None:
            while chunk is None:
                self.server.wait_policy.wait(self)
                chunk = self.poll()
            return chunk
        # A timer at the deadline wakes the waiting reader (a change it must look at).
        server = self.server
        expired: list[bool] = []

        def expire() -> None:
            with server.lock:
                expired.append(True)
                server.notify_changed()

        timer = server.clock.call_at(server.clock.now() + self.read_timeout, expire)
        try:
            while chunk is None:
                if expired:
                    raise WatchReadTimeout(
                        f"read timed out after {self.read_timeout:g} s on watch {self.ident}"
                    )
                server.wait_policy.wait(self)
                chunk = self.poll()
            return chunk
        finally:
            timer.cancel()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            chunk = self.next_chunk()
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        """The client went away: unregister the watcher (idempotent)."""
        with self.server.lock:
            self.watcher.end(WatchEnd.CANCELLED)


__all__ = [
    "ADDED",
    "DELETED",
    "INITIAL_EVENTS_END_ANNOTATION",
    "MODIFIED",
    "StreamServer",
    "WaitPolicy",
    "WatchDropped",
    "WatchEnd",
    "WatchReadTimeout",
    "WatchStream",
    "Watcher",
]
