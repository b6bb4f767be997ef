"""The watch cache: the open watches of a server and the events they are fed.

kube-apiserver serves watches from its watch cache, not from etcd: the ``Cacher``
(k8s.io/apiserver/pkg/storage/cacher) sees every committed event and dispatches it to its
watchers (``cacheWatcher``, each filtering by its own selectors: a
:class:`~kubesim.apiserver.watch.Watcher` here), ends them at their timeout, sends their bookmarks,
and refuses a resourceVersion it has not reached or no longer holds. :class:`WatchCache` is that
component, one for all the resources of a server.

Contract:

- It owns the open watchers (in the order they opened), the stall of the cache (the RV it
  stopped at while storage moves on, and the events held since), the half-open watches of
  :meth:`WatchCache.silence_watches`, the watch buffer, the periodic bookmarks, and the faults
  that end watches (:meth:`~WatchCache.expire_watches`, :meth:`~WatchCache.drop_watches`).
  Followed logs (:meth:`WatchCache.follow_log`) are among the watchers those faults end, cut
  and silence; they are told of every write, stall or not, and are no watch to anything else.
- Its caller is :class:`~kubesim.apiserver.server.APIServer`, which keeps the request path: it
  checks and parses a watch request, asks :meth:`WatchCache.watch` for the watcher and wraps it
  in the :class:`~kubesim.apiserver.watch.WatchStream` a transport reads; it hands every committed
  event to :meth:`WatchCache.process_event`; its watch faults delegate here.
- It runs under the server's lock, which it is given (:attr:`WatchCache.lock`, swapped along
  with the server's). The fault verbs and the timers it schedules take it;
  :meth:`~WatchCache.watch`, :meth:`~WatchCache.process_event`, :meth:`~WatchCache.watchers`
  and :meth:`~WatchCache.close_watches_of` are called with it held and do not take it again
  (the lock is taken where, and as often as, it was when all this was the server's). After
  each change a blocked watch reader may care about (a watch end, a bookmark, a fault) it calls
  ``notify_changed``, the server's.

It imports nothing of the server: it is given the lock, the clock, the trace, the storage it
reads history from and the choice source of default watch timeouts, so that several caches
(API server replicas at different resourceVersions) can stand side by side.

Determinism: its trace records, clock timers and draws are part of every run's trace hash, in
the order they happen; a change here that reorders them changes every hash.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kubesim._core import ChoiceSource, Trace, VirtualClock, uniform
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import dumps
from kubesim.apiserver.faults import CacheStall
from kubesim.apiserver.log_follow import LogFollower
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.selectors import FieldSelector, LabelSelector
from kubesim.apiserver.storage import Event, Key, Storage, Stored
from kubesim.apiserver.watch import WatchEnd, Watcher, initial_events_end_line, initial_lines

# How long the watch cache waits to reach a resourceVersion before it refuses it (cacher
# watch_cache.go blockTimeout).
TOO_LARGE_WAIT = 3.0


class WatchCache:
    """The watchers of one server and what they are sent (see the module's docstring).

    ``bookmark_interval``: seconds between the bookmarks every watch that allows them gets
    (None: none but the one before each watch's deadline). ``min_request_timeout``: a watch
    with no ``timeoutSeconds`` ends after a time drawn from ``timeout_choices`` in
    ``[min_request_timeout, 2 * min_request_timeout)``. ``watch_buffer``: how many unread
    events a watcher may queue before it is closed (None: no limit). ``expired_reason``: the
    reason of the 410 ``Status`` a watch from a compacted resourceVersion gets.
    """

    def __init__(
        self,
        *,
        lock: threading.RLock,
        clock: VirtualClock,
        trace: Trace,
        storage: Storage,
        timeout_choices: ChoiceSource,
        notify_changed: Callable[[], None],
        bookmark_interval: float | None,
        min_request_timeout: float,
        watch_buffer: int | None,
        expired_reason: str,
    ) -> None:
        self.lock = lock
        self.clock = clock
        self.trace = trace
        self.storage = storage
        self._timeout_choices = timeout_choices
        self._notify_changed = notify_changed
        self.bookmark_interval = bookmark_interval
        self.min_request_timeout = min_request_timeout
        self.watch_buffer = watch_buffer
        self.expired_reason = expired_reason
        self._watchers: dict[int, Watcher] = {}
        # The open watchers of each resource, in the order they opened: what a write offers
        # its event to (rebuilt when a watch opens or ends, read on every write).
        self._watchers_of: dict[ResourceType, tuple[Watcher, ...]] = {}
        # The followed logs among the watchers: told of every write, stalled cache or not.
        self._log_followers: tuple[LogFollower, ...] = ()
        self._watch_ids = itertools.count(1)
        self._stall: CacheStall | None = None
        # Watches silence_watches() made silent, until their connection is cut.
        self._silenced: list[Watcher] = []
        # Watches opened (refused ones included): with the server's lists_completed, how a
        # harness tells a store that listed once from one that watched and stopped.
        self.watches_opened = 0

    def start(self) -> None:
        """Schedule the periodic bookmarks (cacher.go's bookmark timer), if there are any."""
        if self.bookmark_interval is not None:
            self.clock.call_later(self.bookmark_interval, self._bookmark_tick)

    def watchers(self) -> list[Watcher]:
        """The open watches, in the order they opened (read with the lock held). Followed logs
        are left out: what a store watches is what the oracles judge it should hold."""
        if not self._log_followers:
            return list(self._watchers.values())
        return [w for w in self._watchers.values() if not isinstance(w, LogFollower)]

    # -- events ---------------------------------------------------------------------------
    def process_event(self, event: Event) -> None:
        """Take one committed event (cacher.go processEvent): each watcher of its resource is
        offered it, unless the cache is stalled, which holds it until it resumes. Called with
        the lock held, right after the event is stored."""
        for follower in self._log_followers:
            follower.offer(event)
        if self._stall is not None:
            self._stall.held.append(event)  # the watch cache has not seen it yet
        else:
            self._offer(event)

    def _offer(self, event: Any) -> None:
        # A tuple taken before the first offer: a watcher that ends on this event (its buffer
        # full) changes the index, not this loop.
        for watcher in self._watchers_of.get(event.resource, ()):
            watcher.offer(event)

    @property
    def resource_version(self) -> int:
        """The RV the watch cache is at: storage's, unless the cache is stalled."""
        return self._stall.rv if self._stall is not None else self.storage.rv

    # -- watch ----------------------------------------------------------------------------
    def watch(
        self,
        resource: ResourceType,
        *,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        resource_version: str,
        allow_bookmarks: bool,
        send_initial_events: bool | None,
        timeout_seconds: float | None,
        on_deliver: Callable[[Stored], None] | None,
    ) -> Watcher:
        """Open a watcher of ``resource`` from ``resource_version`` ("" or "0": from now, with
        the existing objects first); called with the lock held, the request parsed.

        Raises a 504 "Too large resource version" for an RV the cache has not reached (the
        watcher is counted and traced, then forgotten); errors after that reach the client as
        an ERROR event on the stream (cacher.go).
        """
        ident = next(self._watch_ids)
        watcher = Watcher(
            ident=ident,
            resource=resource,
            namespace=namespace if resource.namespaced else None,
            label_selector=labels,
            field_selector=fields,
            allow_bookmarks=allow_bookmarks,
            buffer_limit=self.watch_buffer,
            on_close=self._forget_watcher,
            on_deliver=on_deliver,
        )
        self._watchers[ident] = watcher
        self._index_watchers(resource)
        storage = self.storage
        rv_text = resource_version
        self.trace.record("watch", ident, resource.plural, namespace, rv_text, storage.rv)
        self.watches_opened += 1
        if timeout_seconds is None or timeout_seconds <= 0:
            # handlers/get.go: minRequestTimeout * (1 + rand) when the client sets none.
            timeout_seconds = uniform(
                self._timeout_choices, self.min_request_timeout, 2 * self.min_request_timeout
            )
        deadline = self.clock.now() + timeout_seconds
        watcher.timers.append(self.clock.call_at(deadline, lambda: self._timeout(watcher)))
        if allow_bookmarks and timeout_seconds > 2:
            # cache_watcher.go: a bookmark shortly before the deadline.
            watcher.timers.append(
                self.clock.call_at(deadline - 2, lambda: self._bookmark_one(watcher))
            )
        watch_list = send_initial_events is True
        if send_initial_events is None:
            # ListOptions.SendInitialEvents: defaults to true for RV "" and "0" (legacy).
            send_initial_events = rv_text in ("", "0")
        stall = self._stall
        if stall is not None:
            # Watches are served by the watch cache: nothing newer than where it stopped.
            watcher.after_rv = stall.rv
        if watch_list and rv_text not in ("", "0"):
            start = int(rv_text)
            cache_rv = self.resource_version
            if start > cache_rv:
                # cacher.go: the watch cache waits (3 s) to reach the requested RV, then
                # refuses. The wait is not modelled: nothing is written during a request.
                self._forget_watcher_quietly(watcher)
                raise too_large_resource_version(start, cache_rv)
        if send_initial_events:
            # The state at the watch's start RV: capture the (immutable) stored versions now,
            # since lines are encoded lazily and later writes must not show through them.
            existing = (
                list(storage.items(resource, namespace=watcher.namespace))
                if stall is None
                else list(storage.snapshot(resource, stall.rv, namespace=watcher.namespace))
            )
            lines = initial_lines(iter(existing), watcher)
            if watch_list and allow_bookmarks:
                # cacher.go setInitialEventsEndBookmarkIfRequested: only with bookmarks allowed.
                end_rv = self.resource_version
                lines = itertools.chain(lines, [initial_events_end_line(resource, end_rv)])
            watcher.set_initial(lines)
        elif rv_text not in ("", "0"):
            start = int(rv_text)
            if stall is not None and start > stall.rv:
                # cacher.go: a watch from an RV the cache has not reached waits, then fails.
                self._forget_watcher_quietly(watcher)
                raise too_large_resource_version(start, stall.rv)
            if start < storage.compacted_rv:
                # Past admission, errors are an ERROR event, then a clean close (cacher.go).
                watcher.push_line(self._expired_line(start))
                watcher.close_when_drained()
            else:
                watcher.after_rv = start
                # A stalled cache holds what came after it: delivered when it resumes.
                limit = stall.rv if stall is not None else storage.rv
                watcher.replay(
                    e
                    for e in storage.events_after(start)
                    if e.resource is resource and e.rv <= limit
                )
        return watcher

    def follow_log(self, resource: ResourceType, key: Key, container: str) -> LogFollower:
        """Open a followed log of ``container`` of the pod at ``key``, which runs now; called
        with the lock held. The watch faults reach it; it is no watch to anything else
        (:meth:`watchers`, :attr:`open_watches` and ``watches_opened`` leave it out)."""
        ident = next(self._watch_ids)
        follower = LogFollower(
            ident=ident,
            resource=resource,
            key=key,
            container=container,
            on_close=self._forget_watcher,
        )
        self._watchers[ident] = follower
        self._log_followers = (*self._log_followers, follower)
        self.trace.record("log-follow", ident, key[0], key[1], container)
        return follower

    def _expired_line(self, requested: int) -> bytes:
        status = st.failure(
            410,
            self.expired_reason,
            f"too old resource version: {requested} ({self.storage.compacted_rv})",
        )
        return b'{"type":"ERROR","object":' + dumps(status) + b"}\n"

    def _forget_watcher_quietly(self, watcher: Watcher) -> None:
        """Undo the registration of a watch refused before admission."""
        for timer in watcher.timers:
            timer.cancel()
        self._watchers.pop(watcher.ident, None)
        self._index_watchers(watcher.resource)

    def _index_watchers(self, resource: ResourceType) -> None:
        watchers = tuple(
            w
            for w in self._watchers.values()
            if w.resource is resource and not isinstance(w, LogFollower)
        )
        if watchers:
            self._watchers_of[resource] = watchers
        else:
            self._watchers_of.pop(resource, None)

    def _forget_watcher(self, watcher: Watcher) -> None:
        self._watchers.pop(watcher.ident, None)
        if isinstance(watcher, LogFollower):
            self._log_followers = tuple(f for f in self._log_followers if f is not watcher)
        else:
            self._index_watchers(watcher.resource)
        self.trace.record(
            "watch-end", watcher.ident, watcher.ended.value if watcher.ended else None
        )
        self._notify_changed()

    def _timeout(self, watcher: Watcher) -> None:
        with self.lock:
            watcher.end(WatchEnd.CLOSED)

    def _bookmark_one(self, watcher: Watcher) -> None:
        with self.lock:
            if watcher.ended is None and not watcher.has_ready():
                watcher.bookmark(self.resource_version)
                self._notify_changed()

    def _bookmark_tick(self) -> None:
        with self.lock:
            for watcher in list(self._watchers.values()):
                if watcher.allow_bookmarks and not watcher.has_ready():
                    watcher.bookmark(self.resource_version)
            self._notify_changed()
            if self.bookmark_interval is not None:
                self.clock.call_later(self.bookmark_interval, self._bookmark_tick)

    # -- faults ---------------------------------------------------------------------------
    @property
    def open_watches(self) -> int:
        """How many watches are open (followed logs are not counted)."""
        with self.lock:
            return len(self._watchers) - len(self._log_followers)

    def close_watches_of(self, resource: ResourceType) -> None:
        """End ``resource``'s watches cleanly once each has delivered what was queued (the
        resource is no longer served: a deleted CRD's). Called with the lock held; the caller
        notifies the change."""
        for watcher in list(self._watchers.values()):
            if watcher.resource is resource:
                watcher.close_when_drained()  # after the DELETED events already queued

    def expire_watches(self, *, with_error: bool = False) -> int:
        """End every open watch cleanly, as a server-side timeout would (F1). Returns how many.

        ``with_error=True``: each watch first gets an in-stream ``ERROR`` event carrying a 410
        ``Status`` (what the watch cache sends a watcher that fell out of its window, F4), then
        ends once the client has read what was queued before it.
        """
        if not with_error:
            return self._end_all(WatchEnd.CLOSED, "expire_watches")
        with self.lock:
            watchers = [w for w in self._watchers.values() if w.ended is None]
            self.trace.record("fault", "expire_watches_with_error", len(watchers))
            line = self._expired_line(self.storage.compacted_rv)
            for watcher in watchers:
                watcher.push_line(line)
                watcher.close_when_drained()
            self._notify_changed()
            return len(watchers)

    def drop_watches(self) -> int:
        """Cut every open watch abruptly (no terminating chunk). Returns how many."""
        return self._end_all(WatchEnd.DROPPED, "drop_watches")

    def _end_all(self, how: WatchEnd, verb: str) -> int:
        with self.lock:
            watchers = list(self._watchers.values())
            self.trace.record("fault", verb, len(watchers))
            for watcher in watchers:
                watcher.end(how)
            self._notify_changed()
            return len(watchers)

    def silence_watches(self, seconds: float) -> int:
        """Every open watch goes silent for ``seconds``, then its connection is cut.

        A half-open connection: a load balancer or a NAT forgot it, and nothing reaches the
        client any more (no event, no bookmark, not even the server's end of the watch) until
        the connection is reset. Only a client read timeout notices it sooner. Returns how many
        watches went silent.
        """
        if not (isinstance(seconds, int | float) and seconds > 0):
            raise ValueError(f"seconds must be a number > 0, got seconds={seconds!r}")
        with self.lock:
            watchers = [w for w in self._watchers.values() if w.ended is None and not w.silent]
            for watcher in watchers:
                watcher.silent = True
            self._silenced.extend(watchers)
            self.trace.record("fault", "silence_watches", f"{seconds:g}", len(watchers))

            def cut() -> None:
                self._cut(watchers)

            self.clock.call_at(self.clock.now() + seconds, cut)
            return len(watchers)

    @property
    def silent_watches(self) -> int:
        """How many watches are silent now (silence_watches), their connections not yet cut."""
        with self.lock:
            return sum(1 for w in self._silenced if w.silent)

    def end_silences(self) -> int:
        """Cut every silent watch's connection now. Returns how many."""
        with self.lock:
            self._silenced = [w for w in self._silenced if w.silent]
            return self._cut(tuple(self._silenced))

    def _cut(self, watchers: Sequence[Watcher]) -> int:
        with self.lock:
            cut = 0
            for watcher in watchers:
                if not watcher.silent:
                    continue
                watcher.silent = False
                cut += 1
                if watcher.ended is None:
                    watcher.end(WatchEnd.DROPPED)
                else:
                    # The server ended it meanwhile; the client never saw that end, only the cut.
                    watcher.ended = WatchEnd.DROPPED
            if cut:
                self.trace.record("fault", "cut_silent_watches", cut)
                self._notify_changed()
            return cut

    def send_bookmarks(self) -> int:
        """Queue a BOOKMARK now on every watch that allows them (F8). Returns how many."""
        with self.lock:
            sent = 0
            for watcher in list(self._watchers.values()):
                if watcher.allow_bookmarks and watcher.ended is None:
                    watcher.bookmark(self.resource_version)
                    sent += 1
            self.trace.record("fault", "send_bookmarks", sent)
            self._notify_changed()
            return sent

    def set_watch_buffer(self, events: int | None) -> int:
        """Limit how many unread events a watch may queue before the cache closes it (F12).

        Applies to open watches too; one already over the new limit is closed now, as the
        watch cache closes an unresponsive watcher. None removes the limit. Returns how many
        watches were closed.
        """
        if events is not None and (not isinstance(events, int) or events < 1):
            raise ValueError(f"events must be an int >= 1 or None, got events={events!r}")
        with self.lock:
            self.watch_buffer = events
            closed = 0
            for watcher in list(self._watchers.values()):
                watcher.buffer_limit = events
                if events is not None and watcher.backlog > events:
                    watcher.end(WatchEnd.CLOSED)
                    closed += 1
            self.trace.record("fault", "set_watch_buffer", events, closed)
            self._notify_changed()
            return closed

    # -- stall ----------------------------------------------------------------------------
    def stall(self) -> int:
        """Stop the cache at the current RV while storage moves on (F6, F7): events are held,
        not offered, until :meth:`resume`. Returns the RV it stopped at."""
        with self.lock:
            if self._stall is None:
                self._stall = CacheStall(self.storage.rv)
            self.trace.record("fault", "stall_watch_cache", self._stall.rv)
            return self._stall.rv

    def lag_behind(self, rv: int) -> None:
        """Put a cache that has no watchers yet back at ``rv`` (at least the oldest RV history
        holds): the state of a replica whose etcd watch is behind. The events since are held
        as a stall holds them, until :meth:`resume`. Called with the lock held."""
        if self._watchers:
            raise RuntimeError("only a cache with no watchers can be put back in time")
        rv = max(rv, self.storage.compacted_rv)
        self._stall = CacheStall(rv)
        self._stall.held.extend(self.storage.events_after(rv))

    def resume(self) -> int:
        """Let a stalled cache catch up: held events reach watches, in order. Returns how many
        events were held."""
        with self.lock:
            stall, self._stall = self._stall, None
            held = stall.held if stall is not None else []
            self.trace.record("fault", "resume_watch_cache", len(held))
            for event in held:
                self._offer(event)
            self._notify_changed()
            return len(held)

    @property
    def stalled_at(self) -> int | None:
        """The RV the cache stopped at (:meth:`stall`), None while it keeps up with storage."""
        return self._stall.rv if self._stall is not None else None


def too_large_resource_version(requested: int, current: int) -> st.StatusError:
    error = _too_large(requested, current)
    error.wait = TOO_LARGE_WAIT  # type: ignore[attr-defined]
    return error


def _too_large(requested: int, current: int) -> st.StatusError:
    return st.timeout(
        f"Too large resource version: {requested}, current: {current}",
        causes=[
            {
                "reason": "ResourceVersionTooLarge",
                "message": "Too large resource version",
            }
        ],
        retry_after=1,
    )
