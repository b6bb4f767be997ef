"""The API server's faults, as verbs a harness calls: watch ends, compaction, errors, a stall.

:class:`FaultInjection` is the part of :class:`~kubesim.apiserver.server.APIServer` that breaks
things on purpose, each as a real cluster breaks them (the F-numbers are those of
docs/reference/faults-and-oracles.md): watches that end (a server-side timeout, a 410 in the
stream, a cut connection, a half-open one), history compacted, a watch cache that stalls and
serves stale lists, requests answered with an error ``Status``. The watch faults are carried
out by the server's :class:`~kubesim.apiserver.watch_cache.WatchCache`, the request failures by
its :class:`~kubesim.apiserver.faults.RequestFailures`. Every method takes the server's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kubesim._core import Trace, VirtualClock
from kubesim.apiserver.faults import FAILABLE_VERBS, FAILURE_REASONS, RequestFailures
from kubesim.apiserver.storage import Storage
from kubesim.apiserver.watch_cache import WatchCache

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType


class FaultInjection:
    """The fault verbs of an API server (a base of :class:`~kubesim.apiserver.server.APIServer`,
    which provides what is declared here)."""

    lock: threading.RLock
    clock: VirtualClock
    trace: Trace
    storage: Storage
    watch_cache: WatchCache
    request_failures: RequestFailures

    def notify_changed(self) -> None:
        raise NotImplementedError

    def resource(self, name: str | ResourceType) -> ResourceType:
        raise NotImplementedError

    @property
    def open_watches(self) -> int:
        return self.watch_cache.open_watches

    def expire_watches(self, *, with_error: bool = False) -> int:
        """End every open watch cleanly, as a server-side timeout would (F1). Returns how many.

        ``with_error=True``: each watch first gets an in-stream ``ERROR`` event carrying a 410
        ``Status`` (what the watch cache sends a watcher that fell out of its window, F4), then
        ends once the client has read what was queued before it.
        """
        return self.watch_cache.expire_watches(with_error=with_error)

    def drop_watches(self) -> int:
        """Cut every open watch abruptly (no terminating chunk). Returns how many."""
        return self.watch_cache.drop_watches()

    def silence_watches(self, seconds: float) -> int:
        """Every open watch goes silent for ``seconds``, then its connection is cut.

        A half-open connection: a load balancer or a NAT forgot it, and nothing reaches the
        client any more (no event, no bookmark, not even the server's end of the watch) until
        the connection is reset. Only a client read timeout notices it sooner. Returns how many
        watches went silent.
        """
        return self.watch_cache.silence_watches(seconds)

    @property
    def silent_watches(self) -> int:
        """How many watches are silent now (silence_watches), their connections not yet cut."""
        return self.watch_cache.silent_watches

    def end_silences(self) -> int:
        """Cut every silent watch's connection now. Returns how many."""
        return self.watch_cache.end_silences()

    def compact(self) -> int:
        """Drop the whole history: later watches and lists from older RVs get 410 Expired.

        While the watch cache is stalled, history is kept from the cache's RV on: the cache
        still has to deliver those events.
        """
        with self.lock:
            floor = self.storage.compact(upto=self.watch_cache.stalled_at)
            self.trace.record("fault", "compact", floor)
            self.notify_changed()
            return floor

    def send_bookmarks(self) -> int:
        """Queue a BOOKMARK now on every watch that allows them (F8). Returns how many."""
        return self.watch_cache.send_bookmarks()

    def set_watch_buffer(self, events: int | None) -> int:
        """Limit how many unread events a watch may queue before the server closes it (F12).

        Applies to open watches too; one already over the new limit is closed now, as the
        watch cache closes an unresponsive watcher. None removes the limit. Returns how many
        watches were closed.
        """
        return self.watch_cache.set_watch_buffer(events)

    def fail_requests(
        self,
        count: int = 1,
        *,
        code: int = 500,
        verbs: Iterable[str] = ("list", "watch"),
        resource: str | ResourceType | None = None,
        retry_after: int | None = None,
        seconds: float | None = None,
    ) -> None:
        """Answer the next ``count`` matching requests with an error ``Status`` (HTTP errors).

        ``code``: 403 Forbidden, 429 TooManyRequests, 500 InternalError, 503
        ServiceUnavailable or 504 Timeout. ``verbs``: which REST verbs fail (``list``,
        ``watch``, ``get``, ``create``, ``update``, ``patch``, ``delete``). ``resource``: only
        requests for this resource (default: any). ``retry_after``: seconds for
        ``details.retryAfterSeconds`` and the ``Retry-After`` header (429 defaults to 1).
        ``seconds``: a lasting failure instead (an outage, a storm of 429s): every matching
        request fails until that many seconds of the server's time have passed, however many
        there are (``count`` is then ignored). Rules registered earlier are consumed first.
        """
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"count must be an int >= 1, got count={count!r}")
        if code not in FAILURE_REASONS:
            raise ValueError(f"code must be one of {sorted(FAILURE_REASONS)}, got code={code!r}")
        if isinstance(verbs, str):
            raise TypeError(f"verbs must be a collection of verb names, got verbs={verbs!r}")
        verb_list = list(verbs)
        unknown = [v for v in verb_list if v not in FAILABLE_VERBS]
        if unknown or not verb_list:
            raise ValueError(
                f"verbs must be a non-empty collection of {list(FAILABLE_VERBS)}, "
                f"got verbs={verb_list!r}"
            )
        if retry_after is not None and (not isinstance(retry_after, int) or retry_after < 0):
            raise ValueError(f"retry_after must be an int >= 0 or None, got {retry_after!r}")
        if seconds is not None and not (isinstance(seconds, int | float) and seconds > 0):
            raise ValueError(f"seconds must be a number > 0 or None, got seconds={seconds!r}")
        with self.lock:
            target = self.resource(resource) if resource is not None else None
            self.request_failures.add(
                None if seconds is not None else count,
                code=code,
                verbs=verb_list,
                resource=target,
                retry_after=retry_after,
                until=None if seconds is None else self.clock.now() + seconds,
            )
            self.trace.record(
                "fault",
                "fail_requests",
                count if seconds is None else f"{seconds:g}s",
                code,
                ",".join(sorted(verb_list)),
                target.plural if target else None,
            )

    def stall_watch_cache(self) -> int:
        """Stop the watch cache at the current RV while storage moves on (F6, F7).

        Until :meth:`resume_watch_cache`: lists with ``resourceVersion=0`` or a NotOlderThan RV
        are served at the stalled RV (stale lists); a list or watch from a newer RV answers 504
        "Too large resource version"; open watches receive nothing new. Returns the stalled RV.
        """
        return self.watch_cache.stall()

    def resume_watch_cache(self) -> int:
        """Let a stalled watch cache catch up: held events reach watches, in order.

        Returns how many events were held.
        """
        return self.watch_cache.resume()

    @property
    def watch_cache_stalled(self) -> bool:
        return self.watch_cache.stalled_at is not None

    @property
    def resource_version(self) -> int:
        return self.storage.rv
