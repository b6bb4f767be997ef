"""The fake API server: Kubernetes verbs over versioned storage, watchers and faults.

:class:`APIServer` knows nothing of HTTP or of the ``kubernetes`` package. Its verbs take and
return plain JSON-like dicts and raise :class:`~kubesim.server.status.StatusError` with the
exact Status kube-apiserver would send. :mod:`kubesim.server.routes` maps requests onto these
verbs; transports (in-process adapters, the HTTP server) sit in front of that. Watches are served
by the server's :class:`~kubesim.server.watch_cache.WatchCache`, which owns the open watchers.

Thread safety: every public method takes :attr:`APIServer.lock`; :attr:`APIServer.changed`
(a condition on that lock) is notified after every write, watch end and fault, so a transport
waiting for a watch line can wake up.

Determinism: uids, generated names and default watch timeouts are drawn from the server's
:class:`~kubesim._core.ChoiceSource`; timestamps come from its
:class:`~kubesim._core.VirtualClock`. Same seed and same requests give the same bytes.
"""

from __future__ import annotations

import collections
import threading
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesim._core import ChoiceSource, SeededChoices, Trace, VirtualClock, uuid4_drawer
from kubesim.server import (
    api_services,
    conversion,
    crd_schema,
    crds,
    defaults,
    events,
    kubelet,
    lifecycle,
    limit_ranges,
    managed_fields,
    metrics,
    narrow_subresources,
    pod_spec_defaults,
    propagation,
    resource_quotas,
    reviews,
    root_ca,
    service_accounts,
    services,
    struct_decoding,
    tolerations,
    workloads,
)
from kubesim.server import control_plane as control_plane_objects
from kubesim.server import node_lifecycle as node_lifecycle_controller
from kubesim.server import status as st
from kubesim.server.encoding import canonical_metadata, canonical_object, deep_copy, dumps, loads
from kubesim.server.faults import FAILABLE_VERBS, FAILURE_REASONS, RequestFailures
from kubesim.server.live import LiveWait
from kubesim.server.patch import apply_patch
from kubesim.server.resources import ResourceType, builtin_resources, generation_changed
from kubesim.server.scale import apply_scale, scale_of
from kubesim.server.selectors import FieldSelector, LabelSelector
from kubesim.server.storage import ADDED, DELETED, MODIFIED, Event, Key, Storage, Stored
from kubesim.server.validation import validate_object
from kubesim.server.watch import WaitPolicy, WatchStream
from kubesim.server.watch_cache import WatchCache, too_large_resource_version

JSON = dict[str, Any]

DEFAULT_HISTORY_WINDOW = 10_000
DEFAULT_BOOKMARK_INTERVAL = 60.0  # apiserver cacher.go defaultBookmarkFrequency
DEFAULT_MIN_REQUEST_TIMEOUT = 1800.0  # kube-apiserver --min-request-timeout
DEFAULT_WATCH_BUFFER = 10_000
DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand


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


@dataclass(frozen=True)
class ListResult:
    """One page of a list: the items (as stored) and the list metadata."""

    resource: ResourceType
    items: list[Stored]
    resource_version: int
    continue_token: str | None
    remaining: int | None


class APIServer:
    """A kube-apiserver for list/watch-fed stores, fully deterministic for a seed.

    ``wait_policy`` decides what a watch read with nothing ready does (see
    :class:`~kubesim.server.watch.WaitPolicy`). The default, :class:`~kubesim.server.live.LiveWait`,
    behaves like a live server: the read waits for a change (a write from any thread wakes it)
    and virtual time follows the wall clock while it waits, so timeouts fire after real seconds.
    :class:`~kubesim.sim.Simulation` and the controlled scheduler install their own policies;
    single-threaded scripts that want instant time jumps pass ``wait_policy=AutojumpWait()``.

    What a cluster does around its API server, off by default, each turned on by an argument
    (``kubesim serve`` turns all of them on, for clients and test suites written for a real
    cluster; simulations leave them off: each is work on every write that stores under test
    rarely look at, and writes a scenario did not ask for):

    - ``service_accounts=True``: the ServiceAccount controller and admission (a ``default``
      ServiceAccount in every namespace; a pod runs as an account that exists:
      :mod:`kubesim.server.service_accounts`).
    - ``root_ca_bundle=PEM``: the root CA certificate publisher (a ``kube-root-ca.crt``
      ConfigMap holding ``PEM`` in every namespace: :mod:`kubesim.server.root_ca`).
    - ``default_tolerations=True``: the DefaultTolerationSeconds admission (every pod tolerates
      an unready or unreachable node for 300 s: :mod:`kubesim.server.tolerations`).
    - ``pod_spec_defaults=True``: pods' and pod templates' defaults in full (containers' pull
      policy and termination message, probes, ports, volumes:
      :mod:`kubesim.server.pod_spec_defaults`).
    - ``field_managers_from_user_agent=True``: ``managedFields`` for every write over HTTP, the
      manager named by the request's ``fieldManager`` or else its User-Agent.
    - ``nodes=N``: N nodes, the scheduler and their kubelets, which bind each new pod and start
      it (``Pending``, then ``Running``), and delete pods gracefully
      (:mod:`kubesim.server.kubelet`).
    - ``controllers=True``: the Deployment, ReplicaSet, StatefulSet, DaemonSet, Endpoints and
      EndpointSlice controllers and the garbage collector (:mod:`kubesim.server.workloads`).
    - ``node_lifecycle=True``: the node lifecycle and taint eviction controllers: a node a
      client created that stops reporting goes ``Unknown``, is tainted ``unreachable`` and loses
      its pods (:mod:`kubesim.server.node_lifecycle`).
    - ``control_plane=True``: what a control plane writes at start-up (the ``kubernetes``
      Service, the system PriorityClasses), and with ``system_pods=True`` (which needs nodes and
      controllers) ``kube-system``'s pods (:mod:`kubesim.server.control_plane`).
    - ``metrics_server=True``: the resource metrics API, ``metrics.k8s.io`` (``kubectl top``:
      :mod:`kubesim.server.metrics`), and with ``system_pods`` a metrics-server pod.
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
        expired_reason: str = "Expired",
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        wait_policy: WaitPolicy | None = None,
        service_accounts: bool = False,
        root_ca_bundle: str | None = None,
        default_tolerations: bool = False,
        pod_spec_defaults: bool = False,
        field_managers_from_user_agent: bool = False,
        nodes: int = 0,
        controllers: bool = False,
        node_lifecycle: bool = False,
        control_plane: bool = False,
        system_pods: bool = False,
        metrics_server: bool = False,
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
        if system_pods and not (nodes and controllers and control_plane):
            raise ValueError(
                "system_pods=True runs kube-system's pods on the nodes' kubelets through the "
                "controllers: it needs control_plane=True, nodes >= 1 and controllers=True, got "
                f"control_plane={control_plane!r}, nodes={nodes!r}, controllers={controllers!r}"
            )
        if root_ca_bundle is not None and not (
            isinstance(root_ca_bundle, str) and root_ca_bundle.startswith("-----BEGIN ")
        ):
            raise ValueError(
                "root_ca_bundle must be None or PEM text (str, '-----BEGIN CERTIFICATE-----...'), "
                f"got root_ca_bundle={root_ca_bundle!r:.60}"
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
        # Every create draws a uid: bound once, to the source's fastest way of drawing one.
        self._new_uid = uuid4_drawer(self.choices.fork("uid"))
        self._name_choices = self.choices.fork("generateName")
        self._token_volume_choices = self.choices.fork("serviceAccountTokenVolume")
        timeout_choices = self.choices.fork("watchTimeout")
        # Signs and checks service account tokens (TokenRequest, TokenReview).
        self.token_issuer = reviews.TokenIssuer(self.choices.fork("serviceAccountToken"))
        self.clock = clock if clock is not None else VirtualClock()
        self.trace = trace if trace is not None else Trace()
        self.storage = Storage(window=history_window)
        # The open watches and what they are sent (kubesim.server.watch_cache).
        self.watch_cache = WatchCache(
            lock=self._lock,
            clock=self.clock,
            trace=self.trace,
            storage=self.storage,
            timeout_choices=timeout_choices,
            notify_changed=self._notify_changed,
            bookmark_interval=bookmark_interval,
            min_request_timeout=min_request_timeout,
            watch_buffer=watch_buffer,
            expired_reason=expired_reason,
        )
        self.watch_list = watch_list
        # Whether allowWatchBookmarks is honoured (servers before 1.15 send none): see
        # kubesim.server.versions.
        self.bookmarks = True
        self.wait_policy: WaitPolicy = wait_policy if wait_policy is not None else LiveWait()
        self._resources: dict[tuple[str, str, str], ResourceType] = {}
        # resource() by name, cleared whenever a resource is registered or unregistered.
        self._by_name: dict[str, ResourceType] = {}
        self.request_count = 0
        # Called (lock held) with (method, path) before each request is served. A harness may
        # raise a BaseException here to stop a client that loops on requests without ever
        # waiting (kubesim.scenario's hot-loop guard); nothing else should raise.
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
        # The same, by the namespace listed (None for a list across all namespaces).
        self.lists_by_namespace: collections.Counter[str | None] = collections.Counter()
        for resource in builtin_resources():
            self.register(resource)
        self._cluster_ips = defaults.cluster_ips()
        # The field manager of the write being served (set by the HTTP routes, under the lock,
        # for requests that name one): its writes are recorded in metadata.managedFields.
        self.field_manager: str | None = None
        self.namespace_resource = self.resource("namespaces")
        self._service_accounts = service_accounts
        self._root_ca_bundle = root_ca_bundle
        self._api_services = False  # kubesim.server.api_services, with the control plane
        self._default_tolerations = default_tolerations
        self._pod_spec_defaults = pod_spec_defaults
        self._pod_admission = service_accounts or default_tolerations  # skipped on most writes
        # The admission plugins of LimitRanges and quotas act only where there are some: live
        # views of both collections make that one truth test per write.
        self._limit_ranges = self.resource("limitranges")
        self._any_limit_range = self.storage.live_objects(self._limit_ranges)
        self._any_quota = self.storage.live_objects(self.resource("resourcequotas"))
        self._nodes: kubelet.Nodes | None = None
        # The Events the components record (kubesim.server.events), one sequence for all.
        self.recorder = events.Recorder(self)
        self._controllers = workloads.Controllers(self) if controllers else None
        self._node_lifecycle = (
            node_lifecycle_controller.NodeLifecycleController(self) if node_lifecycle else None
        )
        # Over HTTP, a write whose request names no fieldManager is managed by its User-Agent
        # (kubesim.server.routes), as on a cluster: every object then has managedFields.
        self.field_managers_from_user_agent = field_managers_from_user_agent
        for name in namespaces:
            self.create(self.namespace_resource, {"metadata": {"name": name}})
        if nodes:
            self._nodes = kubelet.Nodes(self, nodes)  # which checks the count
            with self.lock:
                self._nodes.register()
        if metrics_server:
            for metrics_resource in metrics.resources():
                self.register(metrics_resource)
        if control_plane:
            with self.lock:
                # The aggregator's APIServices (and, from now on, the CRDs' ones).
                self._api_services = True
                api_services.install(self)
                control_plane_objects.install(
                    self, workloads=system_pods, metrics_server=metrics_server
                )
        # The bookmark ticks, scheduled last: timers due together fire in the order scheduled.
        self.watch_cache.start()

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @lock.setter
    def lock(self, lock: threading.RLock) -> None:
        # kubesim.sim.threads.make_atomic swaps in a lock of its own: the watch cache's too.
        self._lock = self.watch_cache.lock = lock

    # -- the watch cache's settings and state (kubesim.server.watch_cache) -----------------
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
        return self.watch_cache.watches_opened

    def _notify_changed(self) -> None:
        self.changed.notify_all()
        for listener in self.change_listeners:
            listener()

    # -- resource registry ----------------------------------------------------------------
    def register(self, resource: ResourceType) -> ResourceType:
        """Serve a resource type (a custom resource, say). Idempotent for the same instance."""
        key = (resource.group, resource.version, resource.plural)
        with self.lock:
            existing = self._resources.get(key)
            if existing is not None and existing is not resource:
                raise ValueError(f"a different resource is already registered as {key}")
            self._resources[key] = resource
            self._by_name.clear()
        return resource

    def unregister(self, resource: ResourceType) -> None:
        """Stop serving ``resource`` (a deleted CRD's): its watches end cleanly once they have
        delivered what was queued."""
        with self.lock:
            self._resources.pop((resource.group, resource.version, resource.plural), None)
            self._by_name.clear()
            self.watch_cache.close_watches_of(resource)
            self._notify_changed()

    @property
    def resources(self) -> list[ResourceType]:
        return list(self._resources.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._resources.get((group, version, plural))

    def resource(self, name: str | ResourceType) -> ResourceType:
        """Find a resource by plural, kind, singular or short name ("pods", "Pod", "po")."""
        if isinstance(name, ResourceType):
            if name.stored_as is not None:
                raise ValueError(
                    f"resource {name.api_version} {name.plural} is served over HTTP by converting "
                    f"{name.stored_as.api_version} objects; the Python API takes that resource"
                )
            return name
        # Every call by name (each verb of the Python API) used to scan all the resources.
        found = self._by_name.get(name)
        if found is None:
            with self.lock:  # not cached across a register or unregister
                found = self._by_name[name] = self._find_resource(name)
        return found

    def _find_resource(self, name: str) -> ResourceType:
        group = ""
        if "." in name:
            name, _, group = name.partition(".")
        matches = [
            r
            for r in self._resources.values()
            if r.stored_as is None  # a version served by conversion: see kubesim.server.conversion
            and (not group or r.group == group)
            and name in (r.plural, r.kind, r.singular_name, *r.short_names)
        ]
        if len(matches) > 1:
            # kubectl's RESTMapper puts the core group first: "events" is core/v1 events.
            core = [r for r in matches if r.group == ""]
            matches = core if len(core) == 1 else matches
        if len(matches) == 1:
            return matches[0]
        known = sorted(
            {r.plural + (f".{r.group}" if r.group else "") for r in self._resources.values()}
        )
        if not matches:
            raise KeyError(f"no resource named {name!r}; known resources: {', '.join(known)}")
        raise KeyError(f"resource name {name!r} is ambiguous; qualify it with its group ({known})")

    # -- helpers --------------------------------------------------------------------------
    def _key(self, resource: ResourceType, namespace: str | None, name: str) -> Key:
        return ((namespace or "") if resource.namespaced else "", name)

    def _generate_name(self, prefix: str, source: ChoiceSource | None = None) -> str:
        """``prefix`` and five characters, as apiserver's SimpleNameGenerator makes them."""
        choices = self._name_choices if source is None else source
        n = len(_GENERATE_NAME_ALPHABET) - 1
        return prefix + "".join(_GENERATE_NAME_ALPHABET[choices.integer(0, n)] for _ in range(5))

    def generate_token_volume_name(self, prefix: str) -> str:
        """A name for a pod's service account token volume (ServiceAccount admission), from a
        stream of its own: the names the server generates for objects do not move."""
        return self._generate_name(prefix, self._token_volume_choices)

    def _require_namespace(self, resource: ResourceType, namespace: str | None) -> str:
        if not resource.namespaced:
            return ""
        if not namespace:
            raise st.bad_request(
                "the server could not find the requested resource: a namespace is required"
            )
        if self.storage.get(self.namespace_resource, ("", namespace)) is None:
            raise st.not_found("namespaces", "", namespace)
        return namespace

    def _commit(
        self,
        resource: ResourceType,
        key: Key,
        event_type: str,
        obj: JSON,
        old: Stored | None,
        *,
        dry_run: bool = False,
        shared: bool = False,
    ) -> Stored:
        """Store ``obj`` as the next version of ``key`` and tell the watchers.

        ``shared``: ``obj`` is new only at its top level and in ``metadata``, and shares nested
        values with a caller's body (a create); then only its encoding is kept, so the stored
        version cannot change when the caller later mutates what it sent.
        """
        # The handlers run the field manager before storage, dry run or not.
        if self.field_manager is not None and event_type != DELETED:
            managed_fields.record_update(
                None if old is None else old.obj, obj, self.field_manager, self.clock.timestamp()
            )
        elif "managedFields" in obj["metadata"] and event_type != DELETED:
            managed_fields.normalize(obj)  # a client's own entries: [{}] clears them
        if dry_run:
            # dryRun=All: validated and answered as the write would be, never stored, no event,
            # no resourceVersion spent. A created object is answered as it was sent (the dry-run
            # storage copies it out without etcd's stamp): no resourceVersion, which Go's
            # omitempty leaves out, unless the client sent one. An update keeps the stored one.
            meta = obj["metadata"]
            if old is not None:
                meta["resourceVersion"] = str(old.rv)
            elif not meta.get("resourceVersion"):
                meta.pop("resourceVersion", None)
            rv = 0 if old is None else old.rv
            return Stored.encoded(_encode_body(obj), rv) if shared else Stored(obj, rv)
        rv = self.storage.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        # Encoded before anything changes: a body orjson cannot encode leaves no trace.
        stored = Stored.encoded(_encode_body(obj), rv) if shared else Stored(obj, rv)
        event = self.storage.write(resource, key, event_type, stored, old)
        if self.commit_listeners:  # no allocation per write when nobody listens
            for commit_listener in list(self.commit_listeners):
                commit_listener(event)
        # The checksum pins the content (uids, labels, timestamps), not just the shape of a write.
        self.trace.record(
            "write", event_type, resource.plural, key[0], key[1], rv, zlib.crc32(stored.json())
        )
        self.watch_cache.process_event(event)
        self._notify_changed()
        if crds.is_crd_resource(resource):
            crds.sync(self, event)
            if self._api_services:
                api_services.sync_custom(self)
        if self._service_accounts:
            service_accounts.sync(self, event)
        if self._root_ca_bundle is not None:
            root_ca.sync(self, event, self._root_ca_bundle)
        if self._nodes is not None:
            self._nodes.sync(event)
        if self._controllers is not None:
            self._controllers.sync(event)
        if self._node_lifecycle is not None:
            self._node_lifecycle.sync(event)
        return stored

    def kubelet_runs(self, node_uid: str) -> bool:
        """One of this server's kubelets registered the node with this uid (and reports on it)."""
        return self._nodes is not None and node_uid in self._nodes.node_uids

    @property
    def cache_resource_version(self) -> int:
        """The RV the watch cache is at: storage's, unless the cache is stalled."""
        return self.watch_cache.resource_version

    def _check_body(self, resource: ResourceType, obj: Any, namespace: str | None) -> JSON:
        if not isinstance(obj, dict):
            raise st.bad_request(
                f"the body of the request must be a {resource.kind} object, "
                f"got {type(obj).__name__}"
            )
        kind = obj.get("kind")
        if kind not in (None, "", resource.kind):
            raise st.bad_request(
                f"the kind of the provided object ({kind}) does not match the resource "
                f"({resource.kind})"
            )
        api_version = obj.get("apiVersion")
        if api_version not in (None, "", resource.api_version):
            raise st.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({resource.api_version})"
            )
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        body_namespace = (meta or {}).get("namespace")
        if resource.namespaced and body_namespace and namespace and body_namespace != namespace:
            raise st.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        return obj

    def _invalid_if(self, resource: ResourceType, obj: JSON) -> None:
        causes = validate_object(resource, obj)
        if resource.openapi_schema is not None:
            causes += crd_schema.validate(obj, dict(resource.openapi_schema))
        if causes:
            name = obj.get("metadata", {}).get("name") or ""
            raise st.invalid(resource.kind, resource.group, str(name), causes)

    # -- verbs ----------------------------------------------------------------------------
    def create(
        self,
        resource: str | ResourceType,
        obj: JSON,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """POST: store a new object. Returns the stored object (a copy). ``dry_run``: validate
        and answer as a create would, store nothing (``?dryRun=All``)."""
        with self.lock:
            stored = self._create(self.resource(resource), obj, namespace, dry_run=dry_run)
        created: JSON = loads(stored.json())  # the caller's own copy, from the stored bytes
        return created

    def _create(
        self, resource: ResourceType, obj: Any, namespace: str | None, *, dry_run: bool = False
    ) -> Stored:
        kind = (resource.group, resource.kind)
        on_write = defaults.ON_WRITE.get(kind)
        on_create = defaults.ON_CREATE.get(kind)
        # No deep copy of the body: its top level and metadata are copied here, every nested
        # value is read, never written (pods' defaults copy what they change), and the commit
        # keeps only the encoding. Kinds whose defaults write in place get a private copy.
        schema = resource.openapi_schema
        templates = defaults.TEMPLATE_METADATA.get(kind)
        private = (
            on_create is not None
            or (on_write is not None and kind not in defaults.COPY_ON_WRITE)
            or schema is not None  # a custom resource is pruned and defaulted in place
            or templates is not None
        )
        body = self._check_body(resource, deep_copy(obj) if private else obj, namespace)
        meta: JSON = dict(body.get("metadata") or {})
        # Built in canonical order (encoding.canonical_object) from the start: kind, apiVersion
        # and metadata first, the rest in the order sent; metadata is ordered last, below.
        obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        obj.update(body)
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        obj["metadata"] = meta
        if schema is not None:
            crd_schema.coerce(obj, dict(schema))  # as the request is decoded
        if resource.namespaced:
            if namespace is None:
                namespace = meta.get("namespace") or None
            namespace = self._require_namespace(resource, namespace)
        else:
            namespace = None
        # Admission refuses an object by the name it was sent with: a generateName prefix
        # when the server is to make the name (admission runs before the name is generated,
        # so a refused pod of a ReplicaSet is `pods "web-6d4cf56db6-" is forbidden`).
        sent_name = str(meta.get("name") or meta.get("generateName") or "")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(str(meta["generateName"]))
        self._invalid_if(resource, obj)
        key = self._key(resource, namespace, meta["name"])
        sent_rv = meta.get("resourceVersion")
        if not dry_run and _nonzero_resource_version(sent_rv):
            # etcd3 store.Create, before it looks for the key; not an API error, so a bare 500.
            raise st.unknown(500, "resourceVersion should not be set on objects to be created")
        if self.storage.get(resource, key) is not None:
            raise st.already_exists(resource.plural, resource.group, meta["name"])
        if namespace is not None:
            lifecycle.admit_create(self, resource, namespace, sent_name)
        if not _SERVER_OWNED_METADATA.isdisjoint(meta):
            for owned in _SERVER_OWNED_METADATA:  # the server's, whatever the client sent
                meta.pop(owned, None)
        if namespace is not None:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = self._new_uid()
        # Stamped when committed; set now so that it takes its place in ObjectMeta's order.
        meta["resourceVersion"] = sent_rv if dry_run and isinstance(sent_rv, str) else ""
        meta["creationTimestamp"] = self.clock.timestamp()
        if resource.generation_fields:
            meta["generation"] = 1
        if on_write is not None:
            on_write(obj)
        if templates is not None:
            defaults.template_creation_timestamps(obj, templates)
        if self._pod_spec_defaults:
            pod_spec_defaults.apply(kind, obj)
        if on_create is not None:
            on_create(obj, self._cluster_ips)
        if self._any_limit_range and kind == ("", "Pod") and namespace is not None:
            limit_ranges.admit_pod(self, self._limit_ranges, obj, namespace, sent_name)
        if self._pod_admission and namespace is not None and kind == ("", "Pod"):
            if self._service_accounts:
                service_accounts.admit_pod(self, obj, namespace, sent_name)  # pod_defaults' spec
            if self._default_tolerations:
                tolerations.admit_pod(obj)
        if self._any_quota and namespace is not None:
            resource_quotas.admit(self, resource, obj, namespace, sent_name)
        lifecycle.prepare_for_create(resource, obj)
        obj["metadata"] = canonical_metadata(obj["metadata"])
        return self._commit(resource, key, ADDED, obj, None, dry_run=dry_run, shared=True)

    def get(self, resource: str | ResourceType, name: str, *, namespace: str | None = None) -> JSON:
        with self.lock:
            stored = self._get(self.resource(resource), namespace, name)
        got: JSON = loads(stored.json())
        return got

    def _get(self, resource: ResourceType, namespace: str | None, name: str) -> Stored:
        stored = self.storage.get(resource, self._key(resource, namespace, name))
        if stored is None:
            raise st.not_found(resource.plural, resource.group, name)
        return stored

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
                self._update(res, namespace, str(name), obj, subresource, dry_run=dry_run).obj
            )

    # -- /scale (kubesim.server.scale) ------------------------------------------------------
    def _get_scale(self, resource: ResourceType, namespace: str | None, name: str) -> JSON:
        return scale_of(resource, self._get(resource, namespace, name).obj)

    def _update_scale(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        scale: Any,
        *,
        dry_run: bool = False,
    ) -> JSON:
        current = self._get(resource, namespace, name)
        wanted = apply_scale(resource, current.obj, scale, name)
        stored = self._update(resource, namespace, name, wanted, None, dry_run=dry_run)
        return scale_of(resource, stored.obj)

    def _patch_scale(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str,
        *,
        dry_run: bool = False,
    ) -> JSON:
        from kubesim.server.patch import PatchError

        current = self._get_scale(resource, namespace, name)
        try:
            patched = apply_patch(current, patch, patch_type)
        except PatchError as exc:
            raise st.bad_request(str(exc)) from exc
        return self._update_scale(resource, namespace, name, patched, dry_run=dry_run)

    # -- pods/binding (kubesim.server.kubelet) -----------------------------------------------
    def bind(self, pod: str, node: str, *, namespace: str, dry_run: bool = False) -> JSON:
        """POST pods/{pod}/binding: assign a pod to ``node``, as the scheduler does. Returns the
        bound pod. 409 when the pod already has a node or is being deleted."""
        with self.lock:
            return deep_copy(
                self._bind(self.resource("pods"), namespace, pod, node, dry_run=dry_run).obj
            )

    def _bind(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        node: str,
        *,
        dry_run: bool = False,
    ) -> Stored:
        if resource.group != "" or resource.kind != "Pod":
            raise st.not_found_path()
        if not node:
            raise st.bad_request("a binding must name a node")
        current = self._get(resource, namespace, name)
        pod = current.obj
        # assignPod (pkg/registry/core/pod/storage/storage.go): only a pod with no node, and
        # not one being deleted.
        if pod["metadata"].get("deletionTimestamp"):
            why = f"pod {name} is being deleted, cannot be assigned to a host"
            raise st.conflict("pods/binding", "", name, why)
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise st.conflict(
                "pods/binding", "", name, f'pod {name} is already assigned to node "{assigned}"'
            )
        bound = kubelet.bind(deep_copy(pod), node, self.clock.timestamp())
        key = self._key(resource, namespace, name)
        bound = canonical_object(bound)
        return self._commit(resource, key, MODIFIED, bound, current, dry_run=dry_run)

    def _update(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        obj: Any,
        subresource: str | None,
        *,
        dry_run: bool = False,
    ) -> Stored:
        obj = self._check_body(resource, deep_copy(obj), namespace)
        meta: JSON = obj.setdefault("metadata", {})
        if meta.get("name") not in (None, name):
            raise st.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        meta["name"] = name
        key = self._key(resource, namespace, name)
        current = self.storage.get(resource, key)
        if current is None:
            raise st.not_found(resource.plural, resource.group, name)
        wanted_rv = meta.get("resourceVersion")
        # store.go Update: a resourceVersion of 0 (or none) is an unconditional update.
        if wanted_rv not in (None, "", "0", 0) and str(wanted_rv) != str(current.rv):
            raise st.conflict(resource.plural, resource.group, name, st.OPTIMISTIC_LOCK_ERROR)
        wanted_uid = meta.get("uid")
        if wanted_uid not in (None, "") and wanted_uid != current.obj["metadata"]["uid"]:
            raise st.conflict(
                resource.plural,
                resource.group,
                name,
                f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: "
                f"{current.obj['metadata']['uid']}",
            )
        return self._replace(resource, key, current, obj, subresource, dry_run=dry_run)

    def _replace(
        self,
        resource: ResourceType,
        key: Key,
        current: Stored,
        obj: JSON,
        subresource: str | None,
        *,
        dry_run: bool = False,
    ) -> Stored:
        old = current.obj
        meta = obj["metadata"]
        # Server-owned metadata survives any update.
        if "managedFields" in old["metadata"] and "managedFields" not in meta:
            meta["managedFields"] = old["metadata"]["managedFields"]  # kept when not sent
        for owned in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if owned in old["metadata"]:
                meta[owned] = old["metadata"][owned]
            else:
                meta.pop(owned, None)
        if resource.namespaced:
            meta["namespace"] = key[0]
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        narrow = narrow_subresources.writes(resource.group, resource.kind, subresource)
        if subresource == "status":
            # PUT .../status changes only status (registry strategies PrepareForUpdate).
            obj = {**old, "status": obj.get("status", {})}
            obj["metadata"] = dict(old["metadata"])
        elif narrow is not None:
            obj = narrow_subresources.prepare_for_update(narrow, old, obj, self.clock.timestamp())
        elif "status" in old and resource.status_subresource:
            obj["status"] = old["status"]
        if resource.openapi_schema is not None:
            # Pruned and defaulted as the request is decoded; as a copy, since the object may
            # share values (its status, a status write's spec) with the stored one.
            obj = deep_copy(obj)
            crd_schema.coerce(obj, dict(resource.openapi_schema))
        meta = obj["metadata"]  # a subresource's write starts from the stored metadata
        kind = (resource.group, resource.kind)
        on_write = defaults.ON_WRITE.get(kind)
        # A status write keeps the stored spec, defaulted when it was written; it shares nested
        # values with the stored object, so only copy-on-write defaults may run on it.
        if on_write is not None and (subresource != "status" or kind in defaults.COPY_ON_WRITE):
            on_write(obj)
        templates = defaults.TEMPLATE_METADATA.get(kind)
        if templates is not None and subresource is None:
            defaults.template_creation_timestamps(obj, templates)
        if self._pod_spec_defaults and subresource != "status":
            pod_spec_defaults.apply(kind, obj)
        if self._default_tolerations and kind == ("", "Pod") and subresource is None:
            tolerations.admit_pod(obj)  # admission runs on updates too
        if resource.generation_fields and generation_changed(resource, old, obj):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        self._invalid_if(resource, obj)
        if kind == ("", "Service") and subresource is None:
            causes = services.update_cluster_ips(old, obj)
            if causes:
                raise st.invalid(resource.kind, resource.group, meta["name"], causes)
        if narrow is not None:
            causes = narrow_subresources.validate_update(narrow, old, obj)
            if causes:
                raise st.invalid(resource.kind, resource.group, meta["name"], causes)
        lifecycle.check_no_new_finalizers(resource, old, obj)
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        new = canonical_object(obj)
        if new == old:
            return current  # etcd GuaranteedUpdate writes nothing for a no-op update
        if lifecycle.finalized(resource, new):
            # store.go deleteWithoutFinalizers: the update that empties the finalizers is not
            # written; the key is deleted, and DELETED carries the last state that was stored.
            return self._commit_delete(resource, key, current, deep_copy(old), dry_run=dry_run)
        return self._commit(resource, key, MODIFIED, new, current, dry_run=dry_run)

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
    ) -> JSON:
        with self.lock:
            res = self.resource(resource)
            return deep_copy(
                self._patch(
                    res, namespace, name, patch, patch_type, subresource, dry_run=dry_run
                ).obj
            )

    def _patch(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str,
        subresource: str | None,
        *,
        dry_run: bool = False,
        view: ResourceType | None = None,
    ) -> Stored:
        """``view``: the version the patch is written against, when kubesim serves it by
        converting ``resource``'s objects (kubesim.server.conversion): the patch applies to the
        object in that version, and the result is converted back."""
        from kubesim.server.patch import PatchError, PatchTestFailed

        key = self._key(resource, namespace, name)
        current = self.storage.get(resource, key)
        if current is None:
            raise st.not_found(resource.plural, resource.group, name)
        base = current.obj if view is None else conversion.for_view(view)[0](current.obj)
        try:
            patched = apply_patch(base, patch, patch_type)
        except PatchError as exc:
            if isinstance(exc, PatchTestFailed) or (
                patch_type == "application/json-patch+json" and _json_patch_decodes(patch)
            ):
                # handlers/patch.go: any error from patchObj.Apply (a failed "test" included) is
                # NewGenericServerResponse(422, ...): reason Invalid, a generic message, no causes.
                message = "the server rejected our request due to an error in our request"
                raise st.StatusError(st.failure(422, "Invalid", message, {})) from exc
            raise st.bad_request(str(exc)) from exc
        if not isinstance(patched, dict):
            raise st.bad_request("the patched object is not a JSON object")
        struct_decoding.check_patched(view or resource, patched, patch, patch_type)
        meta = patched.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv not in (None, "") and str(wanted_rv) != str(current.rv):
            raise st.conflict(resource.plural, resource.group, name, st.OPTIMISTIC_LOCK_ERROR)
        if meta.get("name") != name:
            raise st.bad_request("metadata.name cannot be changed by a patch")
        if view is not None:
            try:
                patched = conversion.for_view(view)[1](self._check_body(view, patched, namespace))
            except conversion.ConversionError as exc:
                raise st.bad_request(str(exc)) from None
        return self._replace(
            resource,
            key,
            current,
            self._check_body(resource, patched, namespace),
            subresource,
            dry_run=dry_run,
        )

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
        (see :mod:`kubesim.server.managed_fields`). Returns the object and whether it was
        created."""
        with self.lock:
            res = self.resource(resource)
            stored, created = self._server_side_apply(
                res, namespace, name, applied, field_manager, force=force, dry_run=dry_run
            )
            return deep_copy(stored.obj), created

    def _server_side_apply(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        applied: Any,
        field_manager: str,
        *,
        force: bool,
        dry_run: bool,
    ) -> tuple[Stored, bool]:
        applied = self._check_body(resource, deep_copy(applied), namespace)
        meta = applied.setdefault("metadata", {})
        if not isinstance(meta, dict) or meta.get("name") not in (None, name):
            raise st.bad_request("metadata.name in the applied object must match the URL")
        meta["name"] = name
        key = self._key(resource, namespace, name)
        current = self.storage.get(resource, key)
        result = managed_fields.apply(
            None if current is None else current.obj,
            applied,
            field_manager,
            force=force,
            time=self.clock.timestamp(),
            kind=resource.plural,
            name=name,
        )
        # The apply wrote its own managedFields entry: no Update entry on top of it.
        manager, self.field_manager = self.field_manager, None
        try:
            if current is None:
                # A create through an update (store.go Update) is not checked for a sent
                # resourceVersion as a POST is: etcd3's GuaranteedUpdate clears it.
                result["metadata"].pop("resourceVersion", None)
                return self._create(resource, result, namespace, dry_run=dry_run), True
            return self._replace(resource, key, current, result, None, dry_run=dry_run), False
        finally:
            self.field_manager = manager

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
        kubelet deletes it once its containers stop (:mod:`kubesim.server.kubelet`).

        ``propagation_policy``: ``"Background"``, ``"Foreground"`` or ``"Orphan"``, how the
        garbage collector treats the object's dependents (:mod:`kubesim.server.propagation`);
        None for the kind's default."""
        _check_policy(propagation_policy)
        with self.lock:
            res = self.resource(resource)
            return self._delete(
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
            labels = _parse_label_selector(label_selector)
            fields = _parse_field_selector(res, field_selector)
            if res.namespaced and namespace is not None:
                self._require_namespace(res, namespace)
            selected = [
                stored
                for _, stored in self.storage.items(res, namespace=namespace)
                if _selected(res, stored, labels, fields)
            ]
            items = []
            for stored in selected:
                meta = stored.obj["metadata"]
                deleted = self._delete(
                    res,
                    meta.get("namespace"),
                    meta["name"],
                    {},
                    dry_run=dry_run,
                    whole=True,
                    policy=propagation_policy,
                )
                items.append(deleted)
            return {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(self.storage.rv)},
                "items": items,
            }

    def _delete(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        preconditions: JSON,
        *,
        dry_run: bool = False,
        whole: bool = False,
        grace: int | None = None,
        policy: str | None = None,
    ) -> JSON:
        """``whole``: answer with the object even for kinds whose DELETE answers a Status;
        ``grace``: DeleteOptions' ``gracePeriodSeconds`` (pods on this server's nodes);
        ``policy``: DeleteOptions' ``propagationPolicy`` (kubesim.server.propagation)."""
        key = self._key(resource, namespace, name)
        current = self.storage.get(resource, key)
        if current is None:
            raise st.not_found(resource.plural, resource.group, name)
        meta = current.obj["metadata"]
        if preconditions.get("resourceVersion") not in (None, "") and str(
            preconditions["resourceVersion"]
        ) != str(current.rv):
            raise st.conflict(
                resource.plural,
                resource.group,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{preconditions['resourceVersion']}, "
                f"ResourceVersion in object meta: {current.rv}",
            )
        if preconditions.get("uid") not in (None, "") and preconditions["uid"] != meta["uid"]:
            raise st.conflict(
                resource.plural,
                resource.group,
                name,
                f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                f"UID in object meta: {meta['uid']}",
            )
        lifecycle.admit_delete(resource, name)
        if self._nodes is not None and resource is self._nodes.pods:
            period = self._nodes.grace_period(current.obj, grace)
            if period:
                marked = self._nodes.mark_terminating(deep_copy(current.obj), period)
                if marked is None:
                    return deep_copy(current.obj)  # already terminating, as soon or sooner
                stored = self._commit(
                    resource, key, MODIFIED, canonical_object(marked), current, dry_run=dry_run
                )
                return deep_copy(stored.obj)
        if self._controllers is not None and resource is not self.namespace_resource:
            # The garbage collector runs: the policy may leave it a finalizer to act on.
            before = list(meta.get("finalizers") or [])
            after = propagation.finalizers_after_delete(resource, before, policy)
            if set(after) != set(before):
                marked = deep_copy(current.obj)
                marked["metadata"]["finalizers"] = after
                if not meta.get("deletionTimestamp"):
                    marked = lifecycle.mark_deleted(resource, marked, self.clock)
                stored = self._commit(
                    resource, key, MODIFIED, canonical_object(marked), current, dry_run=dry_run
                )
                return deep_copy(stored.obj)
        if meta.get("finalizers") or lifecycle.held_by_spec_finalizers(resource, current.obj):
            if meta.get("deletionTimestamp"):
                if not meta.get("deletionGracePeriodSeconds"):
                    return deep_copy(current.obj)  # already terminating: nothing more to do
                # A pod in its grace period deleted at once (its kubelet's final DELETE): the
                # grace period drops to zero, and the finalizers still hold it.
                shortened = deep_copy(current.obj)
                shortened["metadata"]["deletionGracePeriodSeconds"] = 0
                stored = self._commit(
                    resource, key, MODIFIED, canonical_object(shortened), current, dry_run=dry_run
                )
                return deep_copy(stored.obj)
            marked = lifecycle.mark_deleted(resource, deep_copy(current.obj), self.clock)
            stored = self._commit(
                resource, key, MODIFIED, canonical_object(marked), current, dry_run=dry_run
            )
            if resource is self.namespace_resource and not dry_run:
                lifecycle.terminate_namespace_later(self, name)
            return deep_copy(stored.obj)
        deleted = self._commit_delete(
            resource, key, current, deep_copy(current.obj), dry_run=dry_run
        )
        if resource.return_deleted_object or whole:
            return deep_copy(deleted.obj)
        return st.success(
            {"name": name, "group": resource.group, "kind": resource.plural, "uid": meta["uid"]}
            if resource.group
            else {"name": name, "kind": resource.plural, "uid": meta["uid"]}
        )

    def _commit_delete(
        self,
        resource: ResourceType,
        key: Key,
        current: Stored,
        last: JSON,
        *,
        dry_run: bool = False,
    ) -> Stored:
        # DELETED carries the last state stamped with the deletion RV (etcd3 watcher.go).
        return self._commit(resource, key, DELETED, last, current, dry_run=dry_run)

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
            labels = _parse_label_selector(label_selector)
            fields = _parse_field_selector(res, field_selector)
            return [
                loads(stored.json())  # a copy: decoding the stored bytes is the cheapest one
                for _, stored in self.storage.items(res, namespace=namespace)
                if _selected(res, stored, labels, fields)
            ]

    def list_page(
        self,
        resource: ResourceType,
        *,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        rv: int | None,
        exact: bool,
        limit: int | None,
        start: Key | None,
    ) -> ListResult:
        """One page of a list at ``rv``, from key ``start``.

        ``rv`` None is "most recent" (a consistent read of storage); 0 ("any") and any RV that is
        not ``exact`` (NotOlderThan) are served from the watch cache, which is storage itself
        unless :meth:`stall_watch_cache` stopped it at an older RV.
        """
        with self.lock:
            storage = self.storage
            stalled_at = self.watch_cache.stalled_at
            if stalled_at is not None and rv is not None and (rv == 0 or not exact):
                if rv > stalled_at:
                    raise too_large_resource_version(rv, stalled_at)
                list_rv = stalled_at
                source = storage.snapshot(resource, stalled_at, namespace=namespace, start=start)
            elif rv is None or rv == 0 or (not exact and rv <= storage.rv):
                list_rv = storage.rv
                source = storage.items(resource, namespace=namespace, start=start)
            else:
                if rv > storage.rv:
                    raise too_large_resource_version(rv, storage.rv)
                if rv < storage.compacted_rv:
                    raise st.expired("The resourceVersion for the provided list is too old.")
                list_rv = rv
                source = storage.snapshot(resource, rv, namespace=namespace, start=start)
            items: list[Stored] = []
            next_key: Key | None = None
            remaining = 0
            for key, stored in source:
                if not _selected(resource, stored, labels, fields):
                    continue
                if limit is not None and len(items) >= limit:
                    next_key = key
                    if labels.empty() and fields.empty():
                        # remainingItemCount: with no selector every later item counts. Count
                        # them without the per-item checks, which used to run over the whole
                        # rest of the list on every page (bench/README.md: 1.4-1.6x faster).
                        remaining = 1 + sum(1 for _ in source)
                    break  # with selectors remainingItemCount is not reported
                items.append(stored)
            token = None
            remaining_count: int | None = None
            if next_key is not None:
                from kubesim.server.continuation import encode_continue

                token = encode_continue(list_rv, next_key)
                if labels.empty() and fields.empty():
                    remaining_count = remaining
            else:
                self.lists_completed += 1
                self.lists_by_namespace[namespace] += 1
            if self.delivery_listeners:
                for stored in items:
                    self._deliver(stored)
            return ListResult(resource, items, list_rv, token, remaining_count)

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
            watcher = self.watch_cache.watch(
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

    # -- faults ---------------------------------------------------------------------------
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
            self._notify_changed()
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

    # -- time -----------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        with self.lock:
            self.clock.advance(seconds)
            self._notify_changed()

    def advance_to(self, when: float) -> None:
        with self.lock:
            self.clock.advance_to(when)
            self._notify_changed()


def _json_patch_decodes(patch: Any) -> bool:
    """True when jsonpatch.DecodePatch accepts the body, so a failure came from Apply (422)."""
    return patch is None or (
        isinstance(patch, list) and all(op is None or isinstance(op, dict) for op in patch)
    )


# ObjectMeta fields a create never takes from the client.
_SERVER_OWNED_METADATA = frozenset(
    ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "selfLink", "generation")
)


def _nonzero_resource_version(value: Any) -> bool:
    """etcd3 ``store.Create`` refuses an object whose resourceVersion parses as a revision other
    than 0 (``strconv.ParseUint``, 64 bits); "", "0" and what does not parse are let through
    (and cleared)."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        return False
    return 0 < int(value) < 2**64


def _check_policy(policy: str | None) -> None:
    if policy is not None and policy not in propagation.POLICIES:
        raise ValueError(
            f"propagation_policy must be one of {', '.join(propagation.POLICIES)} or None, "
            f"got propagation_policy={policy!r}"
        )


def _encode_body(obj: JSON) -> bytes:
    try:
        return dumps(obj)
    except TypeError as exc:  # only the Python API can hand over what JSON cannot hold
        raise TypeError(
            f"obj must be a JSON object (dict, list, str, int, float, bool, None): {exc}"
        ) from None


def _parse_label_selector(text: str) -> LabelSelector:
    from kubesim.server.selectors import SelectorError

    try:
        return LabelSelector.parse(text)
    except SelectorError as exc:
        raise st.bad_request(str(exc)) from exc


def _parse_field_selector(resource: ResourceType, text: str) -> FieldSelector:
    from kubesim.server.selectors import SelectorError

    try:
        selector = FieldSelector.parse(text)
    except SelectorError as exc:
        raise st.bad_request(str(exc)) from exc
    for field_name, _, _ in selector.requirements():
        name = resource.field_aliases.get(field_name, field_name)
        if name not in resource.selectable_fields:
            raise st.bad_request(f"field label not supported: {field_name}")
    if resource.field_aliases and any(
        f in resource.field_aliases for f, _, _ in selector.requirements()
    ):
        selector = FieldSelector.parse(
            ",".join(
                f"{resource.field_aliases.get(f, f)}{'=' if op == '=' else '!='}{_escape(v)}"
                for f, op, v in selector.requirements()
            )
        )
    return selector


def _escape(value: str) -> str:
    from kubesim.server.selectors import escape_field_value

    return escape_field_value(value)


def _selected(
    resource: ResourceType, stored: Stored, labels: LabelSelector, fields: FieldSelector
) -> bool:
    if not labels.empty() and not labels.matches(stored.obj["metadata"].get("labels")):
        return False
    return fields.empty() or fields.matches(resource.fields_of(stored.obj))
