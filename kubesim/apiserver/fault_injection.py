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

from kubesim._core import ChoiceSource, Trace, VirtualClock
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
    choices: ChoiceSource
    watch_cache: WatchCache
    # Every watch cache with watchers to serve: the primary's first, then any replica's.
    watch_caches: list[WatchCache]
    lagging_replica: WatchCache | None
    replica_pinned: bool
    replica_served: list[int]
    request_failures: RequestFailures

    def notify_changed(self) -> None:
        raise NotImplementedError

    def resource(self, name: str | ResourceType) -> ResourceType:
        raise NotImplementedError

    @property
    def open_watches(self) -> int:
        return sum(cache.open_watches for cache in self.watch_caches)

    def expire_watches(self, *, with_error: bool = False) -> int:
        """End every open watch cleanly, as a server-side timeout would (F1). Returns how many.

        ``with_error=True``: each watch first gets an in-stream ``ERROR`` event carrying a 410
        ``Status`` (what the watch cache sends a watcher that fell out of its window, F4), then
        ends once the client has read what was queued before it.
        """
        return sum(cache.expire_watches(with_error=with_error) for cache in self.watch_caches)

    def drop_watches(self) -> int:
        """Cut every open watch abruptly (no terminating chunk). Returns how many."""
        return sum(cache.drop_watches() for cache in self.watch_caches)

    def silence_watches(self, seconds: float) -> int:
        """Every open watch goes silent for ``seconds``, then its connection is cut.

        A half-open connection: a load balancer or a NAT forgot it, and nothing reaches the
        client any more (no event, no bookmark, not even the server's end of the watch) until
        the connection is reset. Only a client read timeout notices it sooner. Returns how many
        watches went silent.
        """
        return sum(cache.silence_watches(seconds) for cache in self.watch_caches)

    @property
    def silent_watches(self) -> int:
        """How many watches are silent now (silence_watches), their connections not yet cut."""
        return sum(cache.silent_watches for cache in self.watch_caches)

    def end_silences(self) -> int:
        """Cut every silent watch's connection now. Returns how many."""
        return sum(cache.end_silences() for cache in self.watch_caches)

    def compact(self) -> int:
        """Drop the whole history: later watches and lists from older RVs get 410 Expired.

        While the watch cache is stalled, history is kept from the cache's RV on: the cache
        still has to deliver those events.
        """
        with self.lock:
            # A stalled or lagging cache still has to deliver the events after its RV.
            behind = [c.stalled_at for c in self.watch_caches if c.stalled_at is not None]
            floor = self.storage.compact(upto=min(behind, default=None))
            self.trace.record("fault", "compact", floor)
            self.notify_changed()
            return floor

    def send_bookmarks(self) -> int:
        """Queue a BOOKMARK now on every watch that allows them (F8). Returns how many."""
        return sum(cache.send_bookmarks() for cache in self.watch_caches)

    def set_watch_buffer(self, events: int | None) -> int:
        """Limit how many unread events a watch may queue before the server closes it (F12).

        Applies to open watches too; one already over the new limit is closed now, as the
        watch cache closes an unresponsive watcher. None removes the limit. Returns how many
        watches were closed.
        """
        return sum(cache.set_watch_buffer(events) for cache in self.watch_caches)

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
        _check_count(count, seconds)
        if code not in FAILURE_REASONS:
            raise ValueError(f"code must be one of {sorted(FAILURE_REASONS)}, got code={code!r}")
        verb_list = _verb_list(verbs)
        if retry_after is not None and (not isinstance(retry_after, int) or retry_after < 0):
            raise ValueError(f"retry_after must be an int >= 0 or None, got {retry_after!r}")
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

    def reset_connections(
        self,
        count: int = 1,
        *,
        verbs: Iterable[str] = ("list", "watch"),
        resource: str | ResourceType | None = None,
        seconds: float | None = None,
    ) -> None:
        """Read the next ``count`` matching requests and reset their connections, unanswered
        (a load balancer or an API server replica dying mid-request). Nothing is served: a write
        is not made. ``verbs``, ``resource`` and ``seconds`` as for :meth:`fail_requests`. Each
        client library raises its own error and retries as over a socket (urllib3 asks again
        for an idempotent verb, aiohttp once; requests, httpx and a POST do not)."""
        _check_count(count, seconds)
        verb_list = _verb_list(verbs)
        with self.lock:
            target = self.resource(resource) if resource is not None else None
            self.request_failures.add(
                None if seconds is not None else count,
                code=0,
                verbs=verb_list,
                resource=target,
                retry_after=None,
                until=None if seconds is None else self.clock.now() + seconds,
            )
            self.trace.record(
                "fault",
                "reset_connections",
                count if seconds is None else f"{seconds:g}s",
                ",".join(sorted(verb_list)),
                target.plural if target else None,
            )

    def refuse_connections(self, count: int = 1, *, seconds: float | None = None) -> None:
        """Refuse the connections of the next ``count`` requests, whatever they ask (an API
        server that is not listening: it restarts). They never reach the server: in-process
        transports ask before they send, and raise their library's connection error (urllib3
        tries three more times at once, as over a socket). ``seconds``: refuse every request
        for that long instead. Over a socket one request cannot be refused; stop the server."""
        _check_count(count, seconds)
        with self.lock:
            until = None if seconds is None else self.clock.now() + seconds
            self.request_failures.refuse(None if seconds is not None else count, until=until)
            what = count if seconds is None else f"{seconds:g}s"
            self.trace.record("fault", "refuse_connections", what)

    def verbs_sent(self) -> tuple[str, ...]:
        """The REST verbs of the requests clients have asked so far (``get``, ``list``,
        ``watch``, ``create``, ``patch``, ...), each once, in the order first asked."""
        with self.lock:
            return tuple(self.request_failures.sent)

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

    # -- a lagging replica ----------------------------------------------------------------
    def lag_replica(self, events: int, *, pinned: bool = False) -> int:
        """A second API server replica serves behind the same endpoint, its watch cache
        ``events`` writes behind the primary's (a slow etcd member, a cache that restarted).

        Until :meth:`catch_up_replica`, each list served from the watch cache (``resourceVersion``
        "0" or NotOlderThan) and each watch goes to the primary or to the replica, drawn per
        request as a load balancer spreads them: the replica lists its past state, answers a
        resourceVersion it has not reached with a 504 "Too large resource version", and gives
        its watches nothing newer. A client that takes such a list for the truth goes back in
        time (kubernetes#59848). Consistent lists (no resourceVersion) and exact ones are read
        from storage, as from etcd. ``pinned``: every such request goes to the replica, as all
        of a client's requests do when its connection is to that API server (client-go keeps
        one HTTP/2 connection). Returns the RV the replica is at (no older than history holds);
        a replica already lagging stays where it is.
        """
        if not isinstance(events, int) or isinstance(events, bool) or events < 1:
            raise ValueError(f"events must be an int >= 1, got events={events!r}")
        with self.lock:
            replica = self.lagging_replica
            if replica is None:
                replica = self._new_replica()
                replica.lag_behind(self.storage.rv - events)
                self._forget_idle_replicas()
                self.watch_caches.append(replica)
                self.lagging_replica = replica
            self.replica_pinned = pinned
            self.trace.record("fault", "lag_replica", replica.resource_version, pinned)
            self.notify_changed()
            return replica.resource_version

    def catch_up_replica(self) -> int:
        """The lagging replica catches up: its watches get the events it held, in order, and
        new requests go to the primary again. Returns how many events it held (0 when no
        replica lags)."""
        with self.lock:
            replica, self.lagging_replica = self.lagging_replica, None
            if replica is None:
                return 0
            held = replica.resume()
            self._forget_idle_replicas()
            self.notify_changed()
            return held

    @property
    def replica_lagging(self) -> bool:
        return self.lagging_replica is not None

    def serving_cache(self) -> WatchCache:
        """The watch cache that serves the next list from the cache or watch: the primary's,
        or while a replica lags either, drawn (called with the lock held)."""
        replica = self.lagging_replica
        if replica is None:
            return self.watch_cache
        if not self.replica_pinned and not self._replica_choices.integer(0, 1):
            return self.watch_cache
        self.trace.record("served-by-replica", replica.resource_version)
        self.replica_served.append(replica.resource_version)
        return replica

    def _forget_idle_replicas(self) -> None:
        """A replica that caught up is kept while its watches last: forgotten once none is
        left."""
        self.watch_caches[:] = [
            cache
            for cache in self.watch_caches
            if cache is self.watch_cache or cache is self.lagging_replica or cache.watchers()
        ]

    def _new_replica(self) -> WatchCache:
        raise NotImplementedError

    @property
    def _replica_choices(self) -> ChoiceSource:
        raise NotImplementedError


def _check_count(count: int, seconds: float | None) -> None:
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"count must be an int >= 1, got count={count!r}")
    if seconds is not None and not (isinstance(seconds, int | float) and seconds > 0):
        raise ValueError(f"seconds must be a number > 0 or None, got seconds={seconds!r}")


def _verb_list(verbs: Iterable[str]) -> list[str]:
    if isinstance(verbs, str):
        raise TypeError(f"verbs must be a collection of verb names, got verbs={verbs!r}")
    verb_list = list(verbs)
    unknown = [v for v in verb_list if v not in FAILABLE_VERBS]
    if unknown or not verb_list:
        raise ValueError(
            f"verbs must be a non-empty collection of {list(FAILABLE_VERBS)}, "
            f"got verbs={verb_list!r}"
        )
    return verb_list
