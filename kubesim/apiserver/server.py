"""The fake API server: Kubernetes verbs over versioned storage, watchers and faults.

:class:`APIServer` knows nothing of HTTP or of the ``kubernetes`` package. Its verbs take and
return plain JSON-like dicts and raise :class:`~kubesim.apiserver.status.StatusError` with the
exact Status kube-apiserver would send. Where each job is done:

- :mod:`kubesim.apiserver.registry`: the verbs under the lock (defaulting, admission,
  validation, the commit), and :mod:`kubesim.apiserver.deletion` for deletes;
- :mod:`kubesim.apiserver.lists`: lists at a resourceVersion, and the selectors;
- :mod:`kubesim.apiserver.watch_cache`: the open watches and what they are sent;
- :mod:`kubesim.apiserver.faults`: request failures; the watch faults are the watch cache's;
- this module: the server's settings, its resource types, and the public verbs, which take
  the lock and hand out copies.

The wire (:mod:`kubesim.wire.routes`) maps requests onto these verbs; transports (in-process
adapters, the HTTP server) sit in front of that. A cluster around the server (admission
plugins, controllers, kubelets) plugs in through :mod:`kubesim.apiserver.extensions`.

Thread safety: every public method takes :attr:`APIServer.lock`; :attr:`APIServer.changed`
(a condition on that lock) is notified after every write, watch end and fault, so a transport
waiting for a watch line can wake up.

Determinism: uids, generated names and default watch timeouts are drawn from the server's
:class:`~kubesim._core.ChoiceSource`; timestamps come from its
:class:`~kubesim._core.VirtualClock`. Same seed and same requests give the same bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubesim._core import ChoiceSource, SeededChoices, Trace, VirtualClock
from kubesim.apiserver import deletion, lists, propagation, reviews
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import deep_copy, loads
from kubesim.apiserver.extensions import AggregatedAPI, Component
from kubesim.apiserver.fault_injection import FaultInjection
from kubesim.apiserver.faults import RequestFailures
from kubesim.apiserver.lists import (
    parse_field_selector,
    parse_label_selector,
    selected,
)
from kubesim.apiserver.live import LiveWait
from kubesim.apiserver.registry import Registry
from kubesim.apiserver.resource_types import ResourceTypes
from kubesim.apiserver.resources import ResourceType, builtin_resources
from kubesim.apiserver.selectors import FieldSelector, LabelSelector
from kubesim.apiserver.storage import Event, Storage, Stored
from kubesim.apiserver.watch import WaitPolicy, Watcher, WatchStream
from kubesim.apiserver.watch_cache import WatchCache

JSON = dict[str, Any]

DEFAULT_HISTORY_WINDOW = 10_000
DEFAULT_BOOKMARK_INTERVAL = 60.0  # apiserver cacher.go defaultBookmarkFrequency
DEFAULT_MIN_REQUEST_TIMEOUT = 1800.0  # kube-apiserver --min-request-timeout
DEFAULT_WATCH_BUFFER = 10_000
DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


class AutojumpWait:
    """Wait policy for single-threaded scripts: virtual time jumps instead of passing.

    Nothing else can happen while the only caller waits, so virtual time jumps to the next
    deadline (a watch timeout, a bookmark tick): trio's autojump with a single task. A watch
    with ``timeoutSeconds=3600`` ends at once, at virtual time 3600.

    Not the default: with a second thread, a jump races past whatever that thread was about to
    write, and a client that re-watches with no ``timeoutSeconds`` spins through watch after
    watch. Opt in with ``APIServer(wait_policy=AutojumpWait())`` when one thread does all the
    reading and writing. The simulation and the controlled scheduler use it only for callers
    outside the run they drive.
    """

    def wait(self, stream: WatchStream) -> None:
        server = stream.server
        with server.lock:
            if (
                stream.watcher.ended is None
                and not stream.watcher.has_ready()
                and not server.clock.jump_to_next_deadline()
            ):
                raise RuntimeError("watch would block forever: no timer is pending")


class APIServer(FaultInjection):
    """A kube-apiserver for list/watch-fed stores, fully deterministic for a seed.

    ``wait_policy`` decides what a watch read with nothing ready does (see
    :class:`~kubesim.apiserver.watch.WaitPolicy`). The default,
    :class:`~kubesim.apiserver.live.LiveWait`, behaves like a live server: the read waits for a
    change (a write from any thread wakes it) and virtual time follows the wall clock while it
    waits, so timeouts fire after real seconds. :class:`~kubesim.sim.Simulation` and the
    controlled scheduler install their own policies; single-threaded scripts that want instant
    time jumps pass ``wait_policy=AutojumpWait()``.

    The API server alone: what a cluster runs around it (admission plugins such as LimitRanger
    and ResourceQuota, the kubelets, the controllers, the control plane's objects) is
    :class:`kubesim.cluster.Cluster`, which ``kubesim serve`` runs. Simulations use the core
    alone: each of those is work on every write that stores under test rarely look at, and
    writes a scenario did not ask for. ``components`` are parts of a cluster to install
    (:class:`~kubesim.apiserver.extensions.Component`).

    ``pod_spec_defaults=True``: pods' and pod templates' defaults in full (containers' pull
    policy and termination message, probes, ports, volumes:
    :mod:`kubesim.apiserver.pod_spec_defaults`). ``field_managers_from_user_agent=True``:
    ``managedFields`` for every write over HTTP, the manager named by the request's
    ``fieldManager`` or else its User-Agent.
    """

    def __init__(
        self,
        *,
        seed: int | str = 0,
        choices: ChoiceSource | None = None,
        clock: VirtualClock | None = None,
        trace: Trace | None = None,
        history_window: int = DEFAULT_HISTORY_WINDOW,
        bookmark_interval: float | None = DEFAULT_BOOKMARK_INTERVAL,
        min_request_timeout: float = DEFAULT_MIN_REQUEST_TIMEOUT,
        watch_buffer: int | None = DEFAULT_WATCH_BUFFER,
        watch_list: bool = True,
        consistent_list_from_cache: bool = True,
        expired_reason: str = "Expired",
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        wait_policy: WaitPolicy | None = None,
        pod_spec_defaults: bool = False,
        field_managers_from_user_agent: bool = False,
        components: Iterable[Component] = (),
    ) -> None:
        if not isinstance(history_window, int) or history_window < 1:
            raise ValueError(
                f"history_window must be an int >= 1, got history_window={history_window!r}"
            )
        if bookmark_interval is not None and bookmark_interval <= 0:
            raise ValueError(
                "bookmark_interval must be > 0 seconds or None, "
                f"got bookmark_interval={bookmark_interval!r}"
            )
        if expired_reason not in ("Expired", "Gone"):
            raise ValueError(f"expired_reason must be 'Expired' or 'Gone', got {expired_reason!r}")
        if not min_request_timeout >= 0:  # also rejects NaN
            raise ValueError(
                "min_request_timeout must be >= 0 seconds, "
                f"got min_request_timeout={min_request_timeout!r}"
            )
        if watch_buffer is not None and (not isinstance(watch_buffer, int) or watch_buffer < 1):
            raise ValueError(
                f"watch_buffer must be an int >= 1 or None, got watch_buffer={watch_buffer!r}"
            )
        self._lock = threading.RLock()
        self.changed = threading.Condition(self._lock)
        # Called (with the lock held) after every change a blocked watch reader may care about:
        # how a controlled scheduler learns that a parked watch read can proceed.
        self.change_listeners: list[Callable[[], None]] = []
        # Called (with the lock held) with every committed write, right after it is stored:
        # how an oracle sees every version the server ever emitted, whatever compaction forgets.
        self.commit_listeners: list[Callable[[Event], None]] = []
        # Called (lock held) with every object version handed to a client: each item of a
        # list's page, each object event a watch's client reads (initial events included).
        # How an oracle knows what a store was shown (a delete it never saw the object of is
        # not one it can react to). Synthetic events of selector transitions are not reported.
        self.delivery_listeners: list[Callable[[Stored], None]] = []
        self.choices = choices if choices is not None else SeededChoices(seed, name="server")
        timeout_choices = self.choices.fork("watchTimeout")
        # Signs and checks service account tokens (TokenRequest, TokenReview).
        self.token_issuer = reviews.TokenIssuer(self.choices.fork("serviceAccountToken"))
        self.clock = clock if clock is not None else VirtualClock()
        self.trace = trace if trace is not None else Trace()
        self.storage = Storage(window=history_window)
        # The open watches and what they are sent (kubesim.apiserver.watch_cache).
        self.watch_cache = WatchCache(
            lock=self._lock,
            clock=self.clock,
            trace=self.trace,
            storage=self.storage,
            timeout_choices=timeout_choices,
            notify_changed=self.notify_changed,
            bookmark_interval=bookmark_interval,
            min_request_timeout=min_request_timeout,
            watch_buffer=watch_buffer,
            expired_reason=expired_reason,
        )
        # Every watch cache with watchers to serve: the primary's first, then a lagging
        # replica's (FaultInjection.lag_replica), and any that caught up while its watches last.
        self.watch_caches: list[WatchCache] = [self.watch_cache]
        self.lagging_replica: WatchCache | None = None
        self.replica_pinned = False  # every request the cache serves goes to the replica
        # The resourceVersion of each list or watch a lagging replica served, in order: how a
        # harness tells that a store was taken back in time by one (kubesim.checks.state).
        self.replica_served: list[int] = []
        self._replica_choice_source = self.choices.fork("replica")
        self.watch_list = watch_list
        # ConsistentListFromCache (beta and on from 1.31): a list with no resourceVersion is
        # served by the watch cache once it has caught up with storage; one that has not within
        # its 3 s wait falls back to storage. So a stalled or lagging cache makes a consistent
        # list slow, never stale (kubesim.apiserver.lists.list_page).
        self.consistent_list_from_cache = consistent_list_from_cache
        # Whether allowWatchBookmarks is honoured (servers before 1.15 send none): see
        # kubesim.apiserver.versions.
        self.bookmarks = True
        self.wait_policy: WaitPolicy = wait_policy if wait_policy is not None else LiveWait()
        self.resource_types = ResourceTypes()
        self.request_count = 0
        # Called (lock held) with (method, target: the path and its query string, as sent)
        # before each request is served. A harness may raise a BaseException here to stop a
        # client that loops on requests without ever waiting (kubesim.scenario's hot-loop
        # guard); nothing else should raise.
        self.request_listeners: list[Callable[[str, str], None]] = []
        # Called with each request before it is served, without the lock, in the caller's
        # thread: a harness may block there (a request in flight while something else
        # happens: kubesim.scenario's stop() during a list).
        self.in_flight_hooks: list[Callable[[Any], None]] = []
        # Called without the lock, in the reading client's thread, each time a watch read
        # hands it lines: a harness may block there (kubesim.scenario's stop() while a store
        # handles a watch event).
        self.read_hooks: list[Callable[[], None]] = []
        self.request_failures = RequestFailures()
        # Lists answered in full (their last page): a harness tells from it whether a store it
        # restarted has listed since (kubesim.scenario.run).
        self.lists_completed = 0
        # Read-only API groups served by an aggregated server, by group (metrics.k8s.io).
        self.aggregated_apis: dict[str, AggregatedAPI] = {}
        for resource in builtin_resources():
            self.register(resource)
        # The field manager of the write being served (set by the HTTP routes, under the lock,
        # for requests that name one): its writes are recorded in metadata.managedFields.
        self.field_manager: str | None = None
        self.namespace_resource = self.resource("namespaces")
        # The verbs under the lock, and the extension points of admission and controllers.
        self.registry = Registry(self)
        self.registry.pod_spec_defaults = pod_spec_defaults
        # Over HTTP, a write whose request names no fieldManager is managed by its User-Agent
        # (kubesim.wire.routes), as on a cluster: every object then has managedFields.
        self.field_managers_from_user_agent = field_managers_from_user_agent
        components = list(components)
        for component in components:
            component.install(self)
        for name in namespaces:
            self.create(self.namespace_resource, {"metadata": {"name": name}})
        for component in components:
            component.start(self)
        # The bookmark ticks, scheduled last: timers due together fire in the order scheduled.
        self.watch_cache.start()

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @lock.setter
    def lock(self, lock: threading.RLock) -> None:
        # kubesim.sim.threads.make_atomic swaps in a lock of its own: the watch cache's too.
        self._lock = lock
        for cache in self.watch_caches:
            cache.lock = lock

    # -- the watch cache's settings and state (kubesim.apiserver.watch_cache) -----------------
    @property
    def bookmark_interval(self) -> float | None:
        return self.watch_cache.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float | None) -> None:
        self.watch_cache.bookmark_interval = seconds

    @property
    def min_request_timeout(self) -> float:
        return self.watch_cache.min_request_timeout

    @min_request_timeout.setter
    def min_request_timeout(self, seconds: float) -> None:
        self.watch_cache.min_request_timeout = seconds

    @property
    def watch_buffer(self) -> int | None:
        return self.watch_cache.watch_buffer

    @watch_buffer.setter
    def watch_buffer(self, events: int | None) -> None:
        self.watch_cache.watch_buffer = events

    @property
    def expired_reason(self) -> str:
        return self.watch_cache.expired_reason

    @expired_reason.setter
    def expired_reason(self, reason: str) -> None:
        self.watch_cache.expired_reason = reason

    @property
    def watches_opened(self) -> int:
        """Watches opened (refused ones included): with lists_completed, how a harness tells a
        store that listed once from one that watched and stopped."""
        return sum(cache.watches_opened for cache in self.watch_caches)

    def watchers(self) -> list[Watcher]:
        """The open watchers of every watch cache, in the order their caches and they opened
        (read with the lock held)."""
        return [watcher for cache in self.watch_caches for watcher in cache.watchers()]

    def _new_replica(self) -> WatchCache:
        primary = self.watch_cache
        return WatchCache(
            lock=self._lock,
            clock=self.clock,
            trace=self.trace,
            storage=self.storage,
            timeout_choices=self.choices.fork("replicaWatchTimeout"),
            notify_changed=self.notify_changed,
            bookmark_interval=None,  # only the one before each watch's deadline
            min_request_timeout=primary.min_request_timeout,
            watch_buffer=primary.watch_buffer,
            expired_reason=primary.expired_reason,
        )

    @property
    def _replica_choices(self) -> ChoiceSource:
        return self._replica_choice_source

    def notify_changed(self) -> None:
        """Wake whoever waits for a change: blocked watch reads, a controlled scheduler."""
        self.changed.notify_all()
        for listener in self.change_listeners:
            listener()

    # -- resource types (kubesim.apiserver.resource_types) ------------------------------------
    def register(self, resource: ResourceType) -> ResourceType:
        """Serve a resource type (a custom resource, say). Idempotent for the same instance."""
        with self.lock:
            return self.resource_types.register(resource)

    def unregister(self, resource: ResourceType) -> None:
        """Stop serving ``resource`` (a deleted CRD's): its watches end cleanly once they have
        delivered what was queued."""
        with self.lock:
            self.resource_types.unregister(resource)
            for cache in self.watch_caches:
                cache.close_watches_of(resource)
            self.notify_changed()

    @property
    def resources(self) -> list[ResourceType]:
        return self.resource_types.all()

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.resource_types.lookup(group, version, plural)

    def resource(self, name: str | ResourceType) -> ResourceType:
        """Find a resource by plural, kind, singular or short name ("pods", "Pod", "po")."""
        if isinstance(name, ResourceType):
            return self.resource_types.check_served(name)
        # Every call by name (each verb of the Python API) used to scan all the resources.
        found = self.resource_types.by_name.get(name)
        if found is None:
            with self.lock:  # not cached across a register or unregister
                found = self.resource_types.find(name)
        return found

    # -- verbs ----------------------------------------------------------------------------
    def create(
        self,
        resource: str | ResourceType,
        obj: JSON,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> JSON:
        """POST: store a new object. Returns the stored object (a copy). ``dry_run``: validate
        and answer as a create would, store nothing (``?dryRun=All``). ``copy=False``: the
        stored object itself, which must not be changed (for a caller that writes by the
        thousand and reads nothing back, as the scenario's steps do)."""
        with self.lock:
            stored = self.registry.create(self.resource(resource), obj, namespace, dry_run=dry_run)
        if not copy:
            return stored.obj
        created: JSON = loads(stored.json())  # the caller's own copy, from the stored bytes
        return created

    def get(self, resource: str | ResourceType, name: str, *, namespace: str | None = None) -> JSON:
        with self.lock:
            stored = self.registry.get(self.resource(resource), namespace, name)
        got: JSON = loads(stored.json())
        return got

    def update(
        self,
        resource: str | ResourceType,
        obj: JSON,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """PUT with optimistic concurrency on ``metadata.resourceVersion`` (when set and not
        "0": store.go treats both an empty and a zero resourceVersion as unconditional)."""
        with self.lock:
            res = self.resource(resource)
            name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
            if not name:
                raise st.bad_request("name is required in metadata for an update")
            return deep_copy(
                self.registry.update(
                    res, namespace, str(name), obj, subresource, dry_run=dry_run
                ).obj
            )

    # -- pods/binding (kubesim.cluster.kubelet) -----------------------------------------------
    def bind(self, pod: str, node: str, *, namespace: str, dry_run: bool = False) -> JSON:
        """POST pods/{pod}/binding: assign a pod to ``node``, as the scheduler does. Returns the
        bound pod. 409 when the pod already has a node or is being deleted."""
        with self.lock:
            return deep_copy(
                self.registry.bind(self.resource("pods"), namespace, pod, node, dry_run=dry_run).obj
            )

    def patch(
        self,
        resource: str | ResourceType,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: str = "application/merge-patch+json",
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> JSON:
        """PATCH. Returns the patched object (a copy; ``copy=False``: the stored one, which must
        not be changed, as for :meth:`create`)."""
        with self.lock:
            res = self.resource(resource)
            stored = self.registry.patch(
                res, namespace, name, patch, patch_type, subresource, dry_run=dry_run
            )
        return deep_copy(stored.obj) if copy else stored.obj

    def server_side_apply(
        self,
        resource: str | ResourceType,
        name: str,
        applied: JSON,
        *,
        field_manager: str,
        namespace: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> tuple[JSON, bool]:
        """PATCH with ``application/apply-patch+yaml``: ``field_manager`` applies ``applied``
        (see :mod:`kubesim.apiserver.managed_fields`). Returns the object and whether it was
        created."""
        with self.lock:
            res = self.resource(resource)
            stored, created = self.registry.apply(
                res, namespace, name, applied, field_manager, force=force, dry_run=dry_run
            )
            return deep_copy(stored.obj), created

    def delete(
        self,
        resource: str | ResourceType,
        name: str,
        *,
        namespace: str | None = None,
        preconditions: JSON | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> JSON:
        """DELETE: immediate, as with a zero grace period, unless finalizers hold the object
        (a namespace is held by its ``kubernetes`` finalizer until what it holds is gone), or
        it is a pod on a node this server's kubelets run: that one is marked with its grace
        period (``grace_period_seconds``, else its ``terminationGracePeriodSeconds``) and its
        kubelet deletes it once its containers stop (:mod:`kubesim.cluster.kubelet`).

        ``propagation_policy``: ``"Background"``, ``"Foreground"`` or ``"Orphan"``, how the
        garbage collector treats the object's dependents (:mod:`kubesim.apiserver.propagation`);
        None for the kind's default."""
        _check_policy(propagation_policy)
        with self.lock:
            res = self.resource(resource)
            return self.registry.delete(
                res,
                namespace,
                name,
                preconditions or {},
                dry_run=dry_run,
                grace=grace_period_seconds,
                policy=propagation_policy,
            )

    def delete_collection(
        self,
        resource: str | ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        dry_run: bool = False,
        propagation_policy: str | None = None,
    ) -> JSON:
        """DELETE on a collection: every selected object deleted one by one (one DELETED event
        each, at its own resourceVersion, as store.go DeleteCollection), finalizers honoured,
        each with ``propagation_policy`` (see :meth:`delete`). Returns the list of what was
        deleted (or marked for deletion)."""
        _check_policy(propagation_policy)
        with self.lock:
            res = self.resource(resource)
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(res, field_selector)
            return deletion.delete_collection(
                self.registry, res, namespace, labels, fields, dry_run, propagation_policy
            )

    def list(
        self,
        resource: str | ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> list[JSON]:
        """The current objects (copies), in key order. The HTTP list path is :meth:`list_page`."""
        with self.lock:
            res = self.resource(resource)
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(res, field_selector)
            return [
                loads(stored.json())  # a copy: decoding the stored bytes is the cheapest one
                for _, stored in self.storage.items(res, namespace=namespace)
                if selected(res, stored, labels, fields)
            ]

    # One page of a list at a resourceVersion, from a key (kubesim.apiserver.lists).
    list_page = lists.list_page

    def _deliver(self, stored: Stored) -> None:
        for listener in self.delivery_listeners:
            listener(stored)

    # -- watch ----------------------------------------------------------------------------
    def watch(
        self,
        resource: ResourceType,
        *,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        resource_version: str | None = None,
        allow_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        timeout_seconds: float | None = None,
    ) -> WatchStream:
        """Open a watch. Errors after admission are as an ERROR event on the stream (cacher.go)."""
        resource = self.resource(resource)  # not a version served by conversion
        with self.lock:
            watcher = self.serving_cache().watch(
                resource,
                namespace=namespace,
                labels=labels or LabelSelector.parse(""),
                fields=fields or FieldSelector.parse(""),
                resource_version=resource_version or "",
                allow_bookmarks=allow_bookmarks and self.bookmarks,
                send_initial_events=send_initial_events,
                timeout_seconds=timeout_seconds,
                on_deliver=self._deliver if self.delivery_listeners else None,
            )
            return WatchStream(self, watcher)

    def follow_log(self, namespace: str, name: str, container: str) -> WatchStream:
        """Stream the log of ``container`` of a pod whose container runs now (a followed
        ``pods/log``, see kubesim.apiserver.log_follow): the watch faults reach it too."""
        pods = self.resource("pods")
        with self.lock:
            follower = self.serving_cache().follow_log(pods, (namespace, name), container)
            return WatchStream(self, follower)

    # -- time -----------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        with self.lock:
            self.clock.advance(seconds)
            self.notify_changed()

    def advance_to(self, when: float) -> None:
        with self.lock:
            self.clock.advance_to(when)
            self.notify_changed()


def _check_policy(policy: str | None) -> None:
    if policy is not None and policy not in propagation.POLICIES:
        raise ValueError(
            f"propagation_policy must be one of {', '.join(propagation.POLICIES)} or None, "
            f"got propagation_policy={policy!r}"
        )
