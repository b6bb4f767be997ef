"""Run one scenario against a store and record what happened.

:func:`run_scenario` is the engine under ``kubesim check``, the pytest plugin and ``kubesim
replay``: it builds a seeded :class:`~kubesim.sim.simulation.Simulation`, populates the server,
starts the store from its factory, applies the steps one at a time (the store's threads run
under the controlled scheduler between steps until every one of them waits), and records a
:class:`~kubesim.checks.recording.Round` at each quiescent point. The same arguments give the
same recording and the same trace hash.

Every scenario ends the same way, so that the oracles can judge it:

1. **quiesce**: the last step's faults last :data:`FAULTS_LINGER` more seconds, then are
   cleared (a stalled watch cache resumes, pending injected errors are dropped), watches expire,
   every pod is rewritten while the store is away (the last in key order first; in a world of
   more than :data:`REWRITTEN_OBJECTS` objects, that many spread over it) and history is
   compacted past the store's resourceVersion, so the store must re-sync (a reflector relists
   after its 410; a raw watcher gets a synthetic ADDED per object);
2. **tail**: :attr:`Setup.tail_rounds` rounds in which the live set stays the same while
   history grows (every pod's annotation is rewritten and its labels get a new value, then
   watches expire; the same sample in a larger world). A bounded store's structures and
   retained bytes stay flat across them; a leaking one grows every round.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import sys
import threading
import time
import traceback
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kubesim._core.untraced import untraced
from kubesim.apiserver.server import APIServer
from kubesim.checks._objects import namespace_of
from kubesim.checks.recording import (
    Observed,
    Read,
    ReadScope,
    Recording,
    Round,
    normalise_view,
    object_key,
    observe,
    of_several_kinds,
    qualified_key,
)
from kubesim.checks.state import compare
from kubesim.scenario.steps import LABEL_KEYS, Key, Step
from kubesim.sched.strategies import Preemptions
from kubesim.sim.store import FactoryFailed
from kubesim.wire.routes import Query
from kubesim.workload.manifests import resource_name

StoreFactory = Callable[[Any], Any]


class StoreStoppedWatching(RuntimeError):
    """The store's ``run()`` returned: it no longer keeps its cache fed."""

    breaks = "stopped-watching"  # the store property it breaks (kubesim.checks.store reads it)


class StoreNeverRestarted(RuntimeError):
    """A new instance of the store does not come up: after a crash or a stop its factory kept
    raising once the faults had ended, or the history oracle's fresh instance (which meets no
    fault) could not start. The last error is ``__cause__``."""

    breaks = "restart"


# Requests a store may make between two quiescent points before the run calls it a hot loop.
# A correct store makes a handful per fault (a relist is a few pages); a loop that re-requests
# without ever waiting would otherwise never give control back, and the run would hang.
HOT_LOOP_REQUESTS = 1_000
# Nodes (node-0, node-1, node-2: the ones the workload's pods name) when the cluster's
# controllers run in the simulation (Setup.controllers).
CONTROLLER_NODES = 3
# Objects the ending rewrites per round at most (see ScenarioRun._rewritten_objects): every
# object of a default world (6 pods, and those the steps create), a sample of a larger one.
REWRITTEN_OBJECTS = 64
# Virtual seconds a store's threads may take to end after its stop() hook is called.
STOP_GRACE = 30.0
# A process whose start fails (its factory raises) after the first start is started again as
# the kubelet restarts a crashed container: after 10 s, doubling, at most every 5 minutes
# (kubelet's CrashLoopBackOff, pkg/kubelet/kubelet.go backOffPeriod and MaxContainerBackOff).
CRASH_LOOP_BACKOFF = 10.0
CRASH_LOOP_MAX_BACKOFF = 300.0


def hot_loop_reason(server: APIServer, requests: Counter[tuple[str, str]]) -> str:
    """What a hot request loop repeats: its most made request, how often, and what the server
    answers it when that is decided by the request alone (a resourceVersion compacted away)."""
    (method, target), count = requests.most_common(1)[0]
    said = f"{count:,} of them {method} {target}"
    query = urllib.parse.parse_qs(target.partition("?")[2])
    version = (query.get("resourceVersion") or [""])[0]
    watch = (query.get("watch") or [""])[0] in ("1", "true", "True")
    if version.isdigit() and int(version) < server.storage.compacted_rv:
        answer = (
            "each answered with a 410 Gone ERROR event ('too old resource version')"
            if watch
            else "each answered 410 Gone ('too old resource version')"
        )
        oldest = server.storage.compacted_rv
        said += (
            f": a {'watch' if watch else 'list'} from resourceVersion {version}, which the server "
            f"has compacted away (the oldest it serves is {oldest}), {answer}, and the store asks "
            "again from the same resourceVersion"
        )
    elif (lasting := server.request_failures.lasting(server.clock.now())) is not None:
        said += f", each {lasting}"
    return said


class HotRequestLoop(BaseException):
    """Raised into a store thread that made :data:`HOT_LOOP_REQUESTS` without waiting.

    A ``BaseException``: the store's ``except Exception: retry`` must not swallow it.
    """

    breaks = "progress"  # as the cause of the crash it ends the store's thread with


HOOKS = ("view", "read", "sizes", "workers", "effects", "expects", "stop", "history_dependent")
# Virtual seconds the last step's faults last before the run clears them (see quiesce).
FAULTS_LINGER = 10.0
# Virtual seconds a fresh store (the history oracle's) may take to sync with the server.
FRESH_SYNC = 60.0
# The thread group of the history oracle's fresh store (and the threads it starts).
FRESH = "fresh-store"
# Virtual seconds a store's thread that just read a watch event waits for a stop() begun then
# (the stop step's during_event), before it goes on to handle the event.
STOP_IN_HANDLER = 1.0
# Virtual seconds a store shown every change gets to apply them before the history oracle's
# comparison before the final relist.
APPLY_WAIT = 5.0


@dataclass(frozen=True)
class Setup:
    """The world a scenario starts from, and how it ends."""

    pods: int = 6
    namespaces: int = 2
    tail_rounds: int = 3
    # Measure what the store retains (bytes reachable from it, kubesim.checks.retained) at
    # the quiesce round and each tail round, where the bounded oracle judges it (every round
    # when a report draws it). The walk is exact and deterministic, and it costs: off for
    # campaigns that only look for races, say.
    memory: bool = True
    # The history oracle: at the end, start a fresh store from the factory against the same
    # server and compare it with the long-running one (kubesim.checks.history).
    fresh: bool = True
    # The resources the workload writes ("jobs.batch", "pods"); empty: the ones the store
    # watches (kubesim.scenario.workload).
    kinds: tuple[str, ...] = ()
    # The starting world: manifests as `kubectl apply -f` takes them (wire JSON dicts; CRDs
    # among them are served), created before the store starts. New objects of their kinds are
    # clones of the first of each (kubesim.workload.templates).
    objects: tuple[dict[str, Any], ...] = ()
    # The cluster's controllers and kubelets run in the simulation (kubesim.cluster.Cluster:
    # three nodes, the workload controllers, the garbage collector), on the virtual clock:
    # pods go Pending, then Running, a Job makes its pods and completes when they succeed.
    controllers: bool = False
    # The API server release the run starts as (kubesim.apiserver.versions: "1.14", "1.17",
    # "1.27", "1.33"); None: the newest. A server-version step may still change it.
    server_version: str | None = None
    # Objects the workload's steps never delete or terminate: references RESOURCE/NAMESPACE/NAME
    # (RESOURCE/NAME when cluster-scoped), such as "pods/default/ray-head" (the pod the store's
    # own process runs in). Starting objects annotated kubesim/pinned: "true" are pinned too.
    pinned: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.pods < 0 or self.namespaces < 1 or self.tail_rounds < 2:
            raise ValueError(
                "Setup needs pods >= 0, namespaces >= 1, tail_rounds >= 2; got "
                f"pods={self.pods}, namespaces={self.namespaces}, tail_rounds={self.tail_rounds}"
            )
        kinds: Any = self.kinds  # a str is a sequence of names too: refused, not split
        if isinstance(kinds, str) or not all(isinstance(kind, str) and kind for kind in kinds):
            raise ValueError(
                "Setup(kinds=...) takes resource names such as ('jobs.batch', 'pods'); got "
                f"kinds={self.kinds!r}"
            )
        if self.server_version is not None:
            from kubesim.apiserver.versions import server_version

            server_version(self.server_version)  # a ValueError names the known ones
        from kubesim.workload.manifests import checked, parse_pinned

        pinned: Any = self.pinned
        if isinstance(pinned, str):
            raise ValueError(f"Setup(pinned=...) takes a tuple of references; got {pinned!r}")
        for reference in pinned:
            parse_pinned(reference)  # a ValueError names a malformed one
        # Tuples, as a replay token's JSON lists come back; checked, so a bad object is named.
        object.__setattr__(self, "kinds", tuple(self.kinds))
        object.__setattr__(self, "objects", tuple(checked(self.objects)))
        object.__setattr__(self, "pinned", tuple(pinned))

    def world_json(self) -> dict[str, Any]:
        """The starting world beyond pods and namespaces, for a replay token: ``kinds``,
        ``objects``, ``controllers``, ``server_version`` and ``pinned`` where they are not the
        defaults (so the tokens of a pod store stay what they were)."""
        out: dict[str, Any] = {}
        if self.kinds:
            out["kinds"] = list(self.kinds)
        if self.objects:
            out["objects"] = list(self.objects)
        if self.controllers:
            out["controllers"] = True
        if self.server_version is not None:
            out["server_version"] = self.server_version
        if self.pinned:
            out["pinned"] = list(self.pinned)
        return out


def check_world(setup: Setup) -> None:
    """Build ``setup``'s starting world once on a scratch server, so that an object the server
    refuses or a kind kubesim cannot build is a usage error before any example runs
    (:class:`~kubesim.workload.manifests.InvalidObjects`, a ValueError naming it)."""
    if not setup.objects and not setup.kinds and not setup.pinned:
        return
    from kubesim.scenario.workload import Workload
    from kubesim.workload.manifests import apply_manifests

    server = APIServer(seed=0)
    apply_manifests(server, setup.objects)
    Workload(
        server,
        namespaces=setup.namespaces,
        declared=setup.kinds,
        models=setup.objects,
        pinned=setup.pinned,
    )


# The rounds whose retained bytes an oracle judges: the tail's (kubesim.checks.bounded.window;
# the quiesce round before it re-synced the store and is no baseline). At 1,000 pods one walk
# is a tenth of an example: the quiesce round's, shown and never judged, is not taken, and
# neither is the middle one of a first tail of three rounds (see ScenarioRun._walked).
_JUDGED_PHASES = frozenset({"tail"})


class ScenarioRun:
    """One run: the simulation, the store, and the recording. Implements the steps' World."""

    def __init__(
        self,
        factory: StoreFactory,
        *,
        seed: int | str,
        setup: Setup,
        simulation: Any,
        spec: str = "the factory",
        schedule: Sequence[int] = (),
    ) -> None:
        from kubesim.sched.aio_thread import LoopOrder

        self.factory = factory
        self.spec = spec
        self.seed = seed
        self.setup = setup
        self.sim = simulation
        self.server: APIServer = simulation.server
        self._names = itertools.count()
        self._instances = 0  # stores started so far (the first, then one per crash or stop)
        self._handed_out = False
        # This instance's view has held the server's whole state at a quiescent point.
        self._instance_synced = False
        self._values = itertools.count(1)
        self._readers = itertools.count(1)
        self.lines: list[str] = []
        # The store process running now (its instance, once its factory returned: ``store``
        # and, for an async store, its loop ``_async``); a restart replaces it.
        self._instance = _Instance()
        # An async store's loop reorders ready callbacks at the schedule's points (a hot
        # preemption -(k + 1) is the k-th: a loop has no threads to preempt).
        self._loop_order = LoopOrder(sorted({p if p >= 0 else -p - 1 for p in schedule}))
        self.recording = Recording(hooks=frozenset())
        self._round = 0
        self._instant = -1.0
        self._requests_at_instant = 0
        self._targets_at_instant: Counter[tuple[str, str]] = Counter()
        # The store's view is keyed by (resource, namespace, name): see _view.
        self._several_kinds = False
        # How many of the server's replica_served the rounds have recorded so far.
        self._replica_seen = 0
        self._monitor: Any = None
        self._readers_waiting: list[threading.Event] = []
        # Readers whose read waits for the store's next relist (see start_reader): registered
        # for the next step, then armed when it starts (released at a list or after it).
        self._readers_deferred: list[threading.Event] = []
        self._readers_armed: list[threading.Event] = []
        self._lister: int | None = None  # the store thread whose list released them
        self._step_readers: set[str] = set()  # the readers that read at each step's start
        self._store_started_rv = 0
        self._lists_at_start = 0
        # The namespaces of the objects this instance of the store has shown (read, or held in
        # its view at a quiescent point) since it started: the ones it has synced.
        self._shown_namespaces: set[str | None] = set()
        self._instance_shown = False
        self._watches_at_start = 0
        # (resource, namespace, labels, fields) -> a watch with that scope: see watched_objects.
        self._scopes: dict[tuple[str, str | None, str, str], Any] = {}
        # The same for the store's lists: its scope while it has never watched (a poller).
        self._list_scopes: dict[tuple[str, str | None, str, str], Any] = {}
        self.server.request_listeners.append(self._count_request)
        self._stop_armed = False
        # A stop step waiting for the store to read a watch event (see _delivered).
        self._stop_on_event = False
        self.server.in_flight_hooks.append(self._in_flight)
        # The history oracle's fresh store is an instrument: no injected failure reaches it.
        self.server.request_failures.exempt = lambda: self.sim.group_of_current() == FRESH
        # What the server hands the store (each object version's rv): the missed-effect oracle
        # expects a reaction only to the deletion of an object the store was shown.
        self._shown: set[int] = set()
        # The server's resourceVersion when a store thread last asked for a list: a deletion
        # before it is one that list told the store of.
        self._listed_from = 0
        self.server.delivery_listeners.append(self._delivered)
        self.server.read_hooks.append(self._read_watch)
        from kubesim.scenario.workload import Workload

        self.workload = Workload(
            self.server, namespaces=setup.namespaces, models=setup.objects, pinned=setup.pinned
        )
        # Measure retained memory at every round, not only where bounded judges it (a report).
        self.memory_every_round = False

    @property
    def store(self) -> Any:
        """The running store, or None while its process is not up (starting, restarting)."""
        return self._instance.store

    @property
    def _async(self) -> Any:
        """An async store's loop (kubesim.sim.async_store), None for a threaded store. The
        schedule's points reorder its ready callbacks as they preempt threads."""
        return self._instance.host

    def _delivered(self, stored: Any) -> None:
        """Each object version the server hands the store (lock held), recorded."""
        self._shown.add(stored.rv)

    def _read_watch(self) -> None:
        """Each watch read of a client thread, outside the server's lock: for a stop step that
        waits for one, a store thread that has just read an event calls stop() from a thread
        of its own and waits for it (:data:`STOP_IN_HANDLER` virtual seconds at most), then
        goes on to handle the event beside a stop() in progress."""
        if not self._stop_on_event:
            return
        scheduler = self.sim.scheduler
        current = scheduler.current_thread() if scheduler is _active_scheduler() else None
        if (
            current is None
            or current.group == FRESH
            or current.name.startswith(("reader-", "kubesim-"))
        ):
            return
        self._stop_on_event = False
        # Created in a controlled thread: a simulated one, whose join waits in virtual time.
        stopper = threading.Thread(target=lambda: self._call("stop"), name="kubesim-stop")
        stopper.daemon = True
        stopper.start()
        stopper.join(STOP_IN_HANDLER)

    def _count_request(self, method: str, target: str) -> None:
        # Requests at one instant of virtual time: a store that waits (a sleep, a watch that
        # stays open) lets time move and starts a new count.
        now = self.server.clock.now()
        if now != self._instant:
            self._instant = now
            self._requests_at_instant = self.server.request_count - 1
            self._targets_at_instant.clear()
        self._targets_at_instant[method, target] += 1
        made = self.server.request_count - self._requests_at_instant
        if made > HOT_LOOP_REQUESTS:
            raise HotRequestLoop(
                f"the store made {made:,} API requests at virtual time {now:g} s without "
                f"waiting for anything: {hot_loop_reason(self.server, self._targets_at_instant)}"
                "; a hot request loop (no backoff after an error, or a re-watch that ends at once)"
            )

    # -- World -------------------------------------------------------------------------------
    def live_pods(self) -> list[Key]:
        return self.workload.live("pods")

    def new_pod_key(self) -> Key:
        return self.workload.new_key("pods", next(self._names))

    def resources(self) -> list[str]:
        return self.workload.resources()

    def live(self, resource: str) -> list[Key]:
        return self.workload.live(resource)

    def deletable(self, resource: str) -> list[Key]:
        return self.workload.deletable(resource)

    def new_key(self, resource: str) -> Key:
        if resource == "pods":
            return self.new_pod_key()
        return self.workload.new_key(resource)

    def new_object(self, resource: str, key: Key) -> Any:
        return self.workload.new_object(resource, key)

    def _workload_objects(self) -> list[tuple[str, Key]]:
        """Every live object of the workload, resource by resource, each in key order."""
        return [(name, key) for name in self.resources() for key in self.live(name)]

    def _rewritten_objects(
        self, objects: list[tuple[str, Key]] | None = None
    ) -> list[tuple[str, Key]]:
        """The objects the ending rewrites (before the forced relist, and in each tail round):
        all of them up to :data:`REWRITTEN_OBJECTS`, else that many spread evenly over the
        workload's order (every resource and namespace among them). A leak grows with each
        rewrite and each re-sync, not with how many objects one round rewrites, so the ending
        costs what its oracles need, not what the world holds. ``objects``: the workload's,
        when the caller has them already."""
        if objects is None:
            objects = self._workload_objects()
        count = len(objects)
        if count <= REWRITTEN_OBJECTS:
            return objects
        return [objects[i * count // REWRITTEN_OBJECTS] for i in range(REWRITTEN_OBJECTS)]

    def fresh_value(self) -> int:
        return next(self._values)

    def start_reader(self) -> str | None:
        if "read" not in self.recording.hooks or self.store is None:
            return None  # no read() hook, or no process up to read from (restarting)
        name = f"reader-{next(self._readers)}"

        def reader(waiting: str, thread: str) -> Callable[[], None]:
            def read_again() -> None:
                # The Event is created here, inside the run, so it is a simulated one the
                # driver (or the store's request) can set. ``waiting`` names the list it
                # waits in (the lists are swapped when released, so looked up each time).
                strategy = self.sim.scheduler.strategy
                me = self.sim.scheduler.current_thread()
                if (
                    waiting == "_readers_deferred"
                    and isinstance(strategy, Preemptions)
                    and me is not None
                    and self._async is None  # (see _sample_relist)
                ):
                    # A relist reader takes turns at the sampled points of a relist: only
                    # while released (runnable), so registered once, as it first runs.
                    strategy.sample(me.id)
                while True:
                    go = threading.Event()
                    getattr(self, waiting).append(go)
                    go.wait()
                    if waiting == "_readers_deferred":
                        self._sample_relist(thread)
                    else:
                        self._read(thread, self._round)

            return read_again

        # A consumer that keeps reading (a scraper): once per step from the next one on,
        # overlapping the store's reaction to it; and a second one that reads whenever the
        # store asks for a list, so that it is runnable exactly while a relist is applied and
        # a preemption there lets it read a relist half done.
        self._step_readers.add(name)
        self.sim.spawn(reader("_readers_waiting", name), name=name)
        self.sim.spawn(reader("_readers_deferred", f"{name}-relist"), name=f"{name}-relist")
        return name

    def _sample_relist(self, thread: str) -> None:
        """A relist reader, released by the store's list: it reads wherever it first runs,
        then at every sampled point of the relist (kubesim.sched.Preemptions.sample) until the
        listing thread's region ends, handing the turn back after each read."""
        scheduler = self.sim.scheduler
        strategy = scheduler.strategy
        lister = self._lister
        # The first read's content is compared once the relist is over (the store's view()
        # may wait for the lock the relist holds); the sampled ones are judged as snapshots.
        later: list[tuple[int, list[tuple[int, Any]]]] = []
        self._read(thread, self._round, later=later)
        # An async store's read() runs on its own loop, between two of its callbacks: never
        # inside the synchronous code that applies a list, so there is nothing to sample (and
        # each read would be a callback of the very region it samples).
        while (
            self._async is None
            and isinstance(strategy, Preemptions)
            and lister is not None
            and strategy.listing(lister)
            and scheduler.yield_to(lister)
            and strategy.listing(lister)  # not over (the lister blocked, or asked for more)
        ):
            self._read(thread, self._round, compare_content=False)
        for round_, objects in later:
            self._compare_content(thread, round_, objects)

    def crash_and_restart_store(self) -> None:
        self.sim.crash_store()
        self._readers_waiting.clear()
        self._readers_deferred.clear()
        self._readers_armed.clear()
        self._start_store()

    def advance(self, seconds: float) -> None:
        self._rebase_schedule()
        # What the step did so far (a cut connection, a new fault) is reacted to now, before
        # time moves: an outage must meet the store's retries, not its first one at the end.
        self.sim.settle()
        self.sim.advance(seconds)

    # -- running -----------------------------------------------------------------------------
    def _launch(self, instance: _Instance, order: Any) -> Callable[[], None]:
        """The body of a store's main thread: build the store from the factory, run it.

        The factory runs in the store's own controlled thread: the locks, conditions and events
        a store creates in ``__init__`` are then simulated ones, as its threads'. At the first
        start, a factory that raises, or returns something that is not a store, ends the thread
        quietly with the problem recorded in ``instance``: a usage error, not a finding. At a
        restart (``instance.restarts``) a factory that raises is the process failing to start,
        which a cluster meets whenever the API answers its constructor with an error: it is
        started again after CrashLoopBackOff's delays, in virtual time, each failure recorded.
        """
        from kubesim.sim.async_store import AsyncStoreHost, is_async_factory, is_async_store
        from kubesim.sim.store import StoreContractError, check_store_contract

        def accept(store: Any) -> bool:
            try:
                check_store_contract(store, factory=self.spec)
            except StoreContractError as problem:
                instance.problems.append(problem)
                return False
            instance.store = store
            return True

        def store_main() -> None:
            if is_async_factory(self.factory):
                instance.host = AsyncStoreHost(self.sim, order)
                built = _guarded(self.factory, self.spec, instance, self._failed_start)
                instance.host.serve_factory(built, accept)
                return
            delay = CRASH_LOOP_BACKOFF
            while True:
                try:
                    # The client is kubesim's to build: untraced (it has no point of the
                    # store's, and a traced Configuration() cost a millisecond an example).
                    store = self.factory(untraced(self.sim.kubernetes_client))
                    break
                except Exception as error:
                    if not instance.restarts:
                        instance.problems.append(_factory_failed(self.spec, error))
                        return
                    self._failed_start(instance, error)
                time.sleep(delay)  # virtual: the thread is a controlled one
                delay = min(2 * delay, CRASH_LOOP_MAX_BACKOFF)
            if not accept(store):
                return
            if is_async_store(store):
                instance.host = AsyncStoreHost(self.sim, order)
                instance.host.serve_store(store)
                return
            workers = getattr(store, "workers", None)
            for number, work in enumerate(workers() if callable(workers) else (), 1):
                threading.Thread(target=work, name=f"worker-{number}", daemon=True).start()
            store.run()

        return store_main

    def _start_store(self) -> None:
        self._instances += 1  # a new process: its effects are its own (effects-once)
        self._handed_out = False  # nothing handed out yet by this instance
        self._instance_synced = False
        # The first start is the user's setup; every later one is a restart (see _launch).
        instance = self._instance = _Instance(restarts=self._instances > 1)
        self._store_started_rv = self.server.resource_version
        self._lists_at_start = self.server.lists_completed
        self._shown_namespaces = set()
        self._instance_shown = False  # this instance's view has held an object
        # What the server showed an earlier instance is not this one's to react to: a
        # restarted process knows only what its own lists and watches told it.
        self._shown = set()
        self._watches_at_start = self.server.watches_opened
        self.sim.start(self._launch(instance, self._loop_order), name="store")
        if instance.problems:
            raise instance.problems[0]  # the user's setup, not a finding

    def _failed_start(self, instance: _Instance, error: Exception) -> None:
        """A restart whose factory raised: recorded, and retried after the back-off."""
        now = self.server.clock.now()
        instance.failed_starts.append((now, error))
        self.recording.failed_starts.append((now, f"{type(error).__name__}: {_first_line(error)}"))
        self.sim.trace.record("store-start-failed", type(error).__name__)

    def _wait_for_restart(self) -> None:
        """With the faults ended, give a store that is restarting one more CrashLoopBackOff
        period to come up; one that does not is a finding, not a setup error."""
        instance = self._instance
        waited = 0.0
        while (
            instance.store is None and instance.failed_starts and waited <= (CRASH_LOOP_MAX_BACKOFF)
        ):
            self.sim.advance(CRASH_LOOP_BACKOFF)
            waited += CRASH_LOOP_BACKOFF
        if instance.store is None and instance.failed_starts:
            when, error = instance.failed_starts[-1]
            failure = StoreNeverRestarted(
                f"the store did not start again after the faults ended: its factory "
                f"{self.spec} raised at each of {len(instance.failed_starts)} start(s) since "
                f"its restart, the last at {when:g} s: {type(error).__name__}: "
                f"{_first_line(error)}\n{_user_frames(error)}"
            )
            failure.__cause__ = error
            raise failure

    def _call(self, hook: str) -> Any:
        """Call one of the store's hooks. An async store's ``read()`` and ``stop()`` run on its
        loop (from the calling controlled thread); its other hooks are called by the driver at
        quiescent points (see :mod:`kubesim.sim.async_store`)."""
        function = getattr(self.store, hook)
        if self._async is None:
            return function()
        if hook in ("read", "stop"):
            return self._async.on_loop(function, name=hook)
        return self._async.from_driver(function, name=hook)

    def _read(
        self,
        reader: str,
        round_: int,
        *,
        later: list[tuple[int, list[tuple[int, Any]]]] | None = None,
        compare_content: bool = True,
    ) -> None:
        """One read() by ``reader``, recorded and judged. Its objects' content is compared
        with what the server emitted, among those the store still holds (its view() says):
        now, or, with ``later``, from copies taken now, by the caller once the store is done
        (a relist reader must not wait for the lock a relist holds, nor take the view
        between sampled reads); not at all without ``compare_content``."""
        from kubesim.checks.races import SnapshotRead

        before = self.server.resource_version
        # The reader's points inside read() are hot (kubesim.sched.Preemptions): a hot
        # preemption switches to the store in the middle of a read.
        strategy = self.sim.scheduler.strategy
        reader_thread = self.sim.scheduler.current_thread()
        hot = isinstance(strategy, Preemptions) and reader_thread is not None
        if hot:
            strategy.heat(reader_thread.id)
        try:
            result = self._call("read")
        finally:
            if hot:
                strategy.cool(reader_thread.id)
        after = self.server.resource_version
        # Harness work: no scheduling point may interleave it with the store's threads.
        with self.sim.scheduler.atomic():
            objects = list(result.values()) if isinstance(result, Mapping) else list(result)
            recording = self.recording
            recording.reads.append(Read(reader, round_, _entries(result), before, after))
            if objects:
                self._handed_out = True
            shown_before = frozenset(self._shown_namespaces)
            self._shown_namespaces.update(namespace_of(o) for o in objects)
            if self._monitor is not None:
                self._monitor.handed_out(objects, reader=reader, step=round_)
            if recording.versions is not None and all(_has_identity(o) for o in objects):
                recording.snapshot_reads.append(
                    # Any one state since the store started will do (a cache may lag behind the
                    # server); never a mix of states, nor one from before it ever listed.
                    SnapshotRead(
                        reader,
                        [_identity(o) for o in objects],
                        round_,
                        self._store_started_rv,
                        after,
                        # Synced: it has handed out (or its view held) objects since it
                        # started; an empty read before then is a cache not synced yet.
                        listed=self._handed_out or bool(objects),
                        # Per namespace the same: one whose objects the store had shown
                        # before this read is synced (a list its server answered may not be
                        # applied yet when the reader runs: that is not synced either).
                        listed_namespaces=shown_before,
                        # A store with no view cannot say: its reads are judged whole.
                        synced=self._instance_synced or "view" not in recording.hooks,
                    )
                )
                if later is not None and compare_content:
                    later.append(
                        (round_, [(id(o), copy.deepcopy(o)) for o in objects if _is_wire_object(o)])
                    )
                elif compare_content:
                    self._compare_content(reader, round_, [(id(o), o) for o in objects])

    def _compare_content(self, reader: str, round_: int, objects: list[tuple[int, Any]]) -> None:
        """Content compared only for objects the store still holds: a private copy is the
        consumer's to change; the cache's own objects are not. And only for the wire's objects
        (a dict or a client model with metadata): a store's own projection is not what the
        server emitted, by design."""
        from kubesim.checks.races import check_reads_match_server

        versions = self.recording.versions
        if versions is None:
            return
        held = self._held_ids()
        shared = [
            o for ident, o in objects if (held is None or ident in held) and _is_wire_object(o)
        ]
        self.recording.race_violations.extend(
            check_reads_match_server([(reader, o, round_) for o in shared], versions)
        )

    def _held_ids(self) -> set[int] | None:
        """Identities of what the store holds now (its view), or None without a view()."""
        if "view" not in self.recording.hooks or self.store is None or self._async_hook("view"):
            return None
        return {id(value) for value in self.store.view().values()}

    def _async_hook(self, hook: str) -> bool:
        """An ``async def`` hook: it cannot be called from a reader thread in passing."""
        import inspect

        return inspect.iscoroutinefunction(getattr(self.store, hook, None))

    def _watch_reads(self) -> None:
        """Record every version the server emits (what reads, effects and the history oracle
        are judged against); with a read() hook, watch what reads hand out."""
        from kubesim.checks.races import IsolationMonitor, ServerVersions

        self.recording.versions = ServerVersions(self.server)
        if "read" not in self.recording.hooks:
            return
        store_view = (
            self.store.view
            if "view" in self.recording.hooks and not self._async_hook("view")
            else None
        )
        self._monitor = IsolationMonitor(
            held_by_store=(lambda: list(store_view().values())) if store_view else None
        )

    def _verify_isolation(self) -> None:
        if self._monitor is not None:
            self.recording.race_violations.extend(self._monitor.verify(step=self._round))

    def populate(self) -> None:
        for n in range(self.setup.namespaces):
            self.server.create("namespaces", {"metadata": {"name": f"team-{n}"}}, copy=False)
        if self.setup.objects:
            from kubesim.workload.manifests import apply_manifests

            apply_manifests(self.server, self.setup.objects)
        # Declared after the objects: a custom resource's CRD may be among them.
        self.workload.declare(self.setup.kinds)
        for _ in range(self.setup.pods):
            key = self.new_pod_key()
            self.server.create("pods", self.new_object("pods", key), namespace=key[0], copy=False)
        for name in self.workload.resources():
            if name != "pods" and not self.workload.live(name):
                for _ in range(self.setup.pods):
                    self.workload.create(name, self.workload.new_key(name))

    def shape_workload(self) -> None:
        """Once the store has opened its watches: the resources it watches join the workload,
        and where its watches see none of their objects, a starting set is made in their
        scope (:mod:`kubesim.scenario.workload`), which the store then takes in."""
        self.watched_objects()
        before = self.server.storage.rv
        for name in self.workload.shaped():
            for _ in range(self.setup.pods):
                key = self.new_key(name)
                self.server.create(
                    name, self.new_object(name, key), namespace=key[0] or None, copy=False
                )
        if self.server.storage.rv != before:
            self.settle()

    def observe(self, step: str, phase: str, *, walk: bool = True) -> Round:
        """Record a round. ``walk=False`` leaves the retained-memory walk out of a round an
        oracle would otherwise judge (a round whose figure the verdict does not need)."""
        self._requests_at_instant = self.server.request_count
        self._targets_at_instant.clear()
        self._verify_isolation()
        store = self.store
        hooks = self.recording.hooks
        if "effects" in hooks and store is not None:
            # The contract: effects() hands over (and forgets) what was done since last time,
            # so the store's own record of them never grows.
            performed = list(self._call("effects"))
            self.recording.effects.extend(performed)
            self.recording.effect_rounds.extend([self._round] * len(performed))
            self.recording.effect_instances.extend([self._instances] * len(performed))
        # A store whose process is restarting has no view and no sizes at this point.
        up = store is not None
        view = self._view(self._call("view")) if "view" in hooks and up else None
        if view:
            self._handed_out = True
            # "namespace/name", or "resource:namespace/name" for a store of several kinds.
            self._shown_namespaces.update(
                key.rpartition(":")[2].partition("/")[0] for key in view if "/" in key
            )
        sizes = dict(self._call("sizes")) if "sizes" in hooks and up else {}
        server = self.watched_objects()
        self._instance_shown = self._instance_shown or bool(view)
        if view is not None and not self._instance_synced and not compare(view, server):
            self._instance_synced = True
        if "read" in hooks and store is not None and self.recording.partial_reads is None:
            self._calibrate_reads(server)
        retained = None
        # The walk where an oracle judges it (bounded: the tail rounds), or at
        # every round for a report's memory chart: it is the dearest part of a round.
        walk = (walk and phase in _JUDGED_PHASES) or self.memory_every_round
        if self.setup.memory and store is not None and walk:
            from kubesim.checks.retained import measure_retained
            from kubesim.sim.store import store_roots

            retained = measure_retained(store_roots(store, self.factory))
        round_ = Round(
            index=self._round,
            step=step,
            phase=phase,
            time=self.server.clock.now(),
            requests=self.server.request_count,
            lists=self.server.lists_completed,
            refused=self.server.request_failures.injected,
            refused_writes=self.server.request_failures.injected_writes,
            replica_served=self._replica_served_since(),
            server=server,
            view=view,
            sizes=sizes,
            retained_bytes=retained.retained_bytes if retained is not None else None,
            containers=retained.containers if retained is not None else None,
            synced=self._instance_shown or not server,
        )
        self.recording.rounds.append(round_)
        return round_

    def _calibrate_reads(self, server: Mapping[str, Observed]) -> None:
        """Does read() hand out the whole cache? Asked at a quiescent point, where nothing is
        half done: a read that then lacks objects the server has in the store's scope is
        filtered by design, and snapshot reads are judged as parts of a state."""
        if self.server.lists_completed <= self._lists_at_start:
            return  # not synced yet (a restart whose list failed): proves nothing
        entries = _entries(self._call_from_driver("read"))
        held = {entry.uid for entry in entries.values()}
        if None in held:
            return  # projections without uids: not judged as snapshots anyway
        lacking = sorted(key for key, observed in server.items() if observed.uid not in held)
        if lacking:
            self.recording.partial_reads = (
                f"read() at round {self._round} ({self._step_line()}) lacked "
                f"{_sample(lacking)} with nothing half done"
            )

    def _step_line(self) -> str:
        return self.lines[-1] if self.lines else "setup"

    def _replica_served_since(self) -> tuple[int, ...]:
        served = self.server.replica_served
        new = tuple(served[self._replica_seen :])
        self._replica_seen = len(served)
        return new

    def _view(self, view: Any) -> dict[str, Observed]:
        """A view as the oracles compare it. A store of several kinds keys its view by
        (resource, namespace, name): from the first such view on, the server's objects are keyed
        by their resource too (``services:default/web``), so a Service and a pod of one name are
        two objects, as they are to the store."""
        if not self._several_kinds and isinstance(view, Mapping) and of_several_kinds(view):
            self._several_kinds = True
        if not self._several_kinds:
            return normalise_view(view)
        return normalise_view(view, self._resource_name)

    def _resource_name(self, name: str) -> str:
        try:
            return resource_name(self.server.resource(name))
        except KeyError:
            raise TypeError(
                f"view() key names the resource {name!r}, which the server does not serve "
                "(keys of a store of several kinds are (resource, namespace, name) tuples: "
                "'pods', 'services', 'jobs.batch')"
            ) from None

    def watched_objects(self) -> dict[str, Observed]:
        """What the server holds within the scope of the watches the store has opened in this
        run (of its lists, if it never watched; pods if it did neither yet).

        Every scope seen open at a quiescent point is remembered, not only the watches open
        now: a store with several watches (one reflector per namespace) may have one of them
        closed at a given moment (backing off after an error, or not yet re-listed after a
        restart), and the objects of that scope are no less the store's to hold.
        """
        server = self.server
        out: dict[str, Observed] = {}
        with server.lock:
            for watcher in server.watchers():
                if watcher.ended is None:
                    scope = (
                        watcher.resource.plural,
                        watcher.namespace,
                        str(watcher.label_selector),
                        str(watcher.field_selector),
                    )
                    self._scopes[scope] = watcher
            self.workload.learn(self._scopes.values())
            if not self._scopes and self._list_scopes:
                # A store that only lists (it polls): what it lists is what it holds.
                for scope in self._list_scopes.values():
                    qualified = resource_name(scope.resource) if self._several_kinds else None
                    for key, stored in server.storage.items(scope.resource):
                        if scope.matches(key, stored):
                            name = qualified_key(qualified, key) if qualified else object_key(key)
                            out[name] = observe(stored.obj)
                return out
            if not self._scopes:
                pods = server.resource("pods")
                for key, stored in server.storage.items(pods):
                    name = qualified_key("pods", key) if self._several_kinds else object_key(key)
                    out[name] = observe(stored.obj)
                return out
            for watcher in self._judged_scopes():
                qualified = resource_name(watcher.resource) if self._several_kinds else None
                for key, stored in server.storage.items(watcher.resource):
                    if watcher.matches(key, stored):
                        name = qualified_key(qualified, key) if qualified else object_key(key)
                        out[name] = observe(stored.obj)
        return out

    def _judged_scopes(self) -> list[Any]:
        """The watch scopes whose objects the store's view is judged against: all of them, but
        the cluster's machinery (CRDs, Namespaces, APIServices: kopf watches CRDs to follow
        its resources' definitions) when the store also watches a resource of its own."""
        from kubesim.scenario.workload import INFRASTRUCTURE

        scopes = list(self._scopes.values())
        own = [w for w in scopes if resource_name(w.resource) not in INFRASTRUCTURE]
        return own or scopes

    def read_scopes(self) -> list[ReadScope]:
        """What the store's reads are judged against: per resource of its watches (its lists,
        if it never watched; pods if it did neither), the union of their scopes and each one."""
        watchers = self._judged_scopes() if self._scopes else list(self._list_scopes.values())
        if not watchers:
            return [ReadScope("pods")]
        by_resource: dict[str, list[Any]] = {}
        for watcher in watchers:
            by_resource.setdefault(watcher.resource.plural, []).append(watcher)
        return [
            ReadScope(plural, _union_scope(group), tuple(_scope_of(w) for w in group))
            for plural, group in by_resource.items()
        ]

    def apply(self, steps: Sequence[Step]) -> None:
        for step in steps:
            self._round += 1
            if self.recording.stops is not None:
                self.recording.step_starts.append(
                    (self._round, str(step), self.sim.scheduler.steps, self.server.clock.now())
                )
            try:
                line = step.apply(self)
            except BaseException:
                # The store failed while the step ran (a crash-restart settles inside it): the
                # report still lists the step.
                self.lines.append(f"{step} (the run failed during this step)")
                raise
            self.lines.append(line)
            if step.kind in ("outage", "refused"):  # the progress oracle's outage budget
                self.recording.outage_rounds.append(self._round)
            self._release_readers()
            self.settle()
            self.observe(line, "step")

    def _release_readers(self) -> None:
        """Readers started by an earlier step read now, while the store reacts to this one.

        (A reader registers when it first runs, in the settle after its own step, so what
        waits here was started by an earlier step.)
        """
        ready, self._readers_waiting = self._readers_waiting, []
        for go in ready:
            go.set()
        strategy = self.sim.scheduler.strategy
        if ready and isinstance(strategy, Preemptions):
            strategy.go_first(
                [t.id for t in self.sim.scheduler.threads if t.name in self._step_readers]
            )
        # The relist readers registered since the last step now wait for the store's next
        # list (those armed earlier wait on: the store has not listed since).
        self._readers_armed.extend(self._readers_deferred)
        self._readers_deferred.clear()

    def _release_deferred(self) -> None:
        ready, self._readers_armed = self._readers_armed, []
        for go in ready:
            go.set()

    def _rebase_schedule(self) -> None:
        self._loop_order.rebase()
        rebase = getattr(self.sim.scheduler.strategy, "rebase", None)
        if rebase is not None:
            rebase(self.sim.scheduler.steps)

    def settle(self) -> None:
        self._rebase_schedule()
        self.sim.settle()
        if self.sim.store_finished and not self._store_threads_running():
            raise StoreStoppedWatching(self._why_run_returned())

    def _store_threads_running(self) -> bool:
        """Threads the store started that still run: a run() that starts its informer's thread
        and returns is a store that runs in that thread."""
        return any(
            t.state.value != "finished"
            and t.name != "store"
            and not t.name.startswith(("reader-", "kubesim-", "fresh-store"))
            for t in self.sim.scheduler.threads
        )

    def _why_run_returned(self) -> str:
        lists = self.server.lists_completed - self._lists_at_start
        watches = self.server.watches_opened - self._watches_at_start
        where = f"the store's run() returned at round {self._round}, and no thread of it runs"
        if not lists and not watches:
            return (
                f"{where}, without a list or a watch: run() is the store's main loop; it lists "
                "and/or watches until kubesim stops it (or starts threads that do)"
            )
        if not watches:
            return (
                f"{where}, after {lists} list(s) and no watch: a list-once store is not "
                "watching; a store must watch from its list's resourceVersion to stay current"
            )
        return (
            f"{where}, after {watches} watch(es): a watch ends (a server timeout, a 410, a cut "
            "connection) and the store must watch again (relisting on a 410)"
        )

    def compare_before_the_relist(self) -> None:
        """The history oracle's first capture, after the steps and before the forced relist of
        the quiesce round: state a store rebuilds at every relist but lets pile up in between
        (an index rebuilt by ``Replace``, kept by the handlers) shows only here. Taken only
        when nothing excuses a difference: no fault is on, a list or a watch showed the store
        every change it needs (the last version of every live object, and every deletion of
        an object it was shown, or a list since), and its view then had :data:`APPLY_WAIT`
        seconds to hold what the server has. A view that still differs is compared all the
        same: the store knows all it needs and still holds something else (a store without
        ``view()`` is compared at the end only)."""
        server = self.server
        if (
            not self.setup.fresh
            or self.store is None
            or "view" not in self.recording.hooks
            or server.watch_cache_stalled
            or server.replica_lagging
            or server.request_failures.active
            or server.silent_watches
        ):
            return

        if not self._shown_every_change():
            return  # still catching up after a cut: a lag, not history

        def behind() -> bool:
            return bool(compare(self._view(self._call("view")), self.watched_objects()))

        if behind():
            # Time is let pass: a reader the last step armed reads first, as the store stands
            # after the steps.
            self._release_readers()
            self.sim.settle()
            waited = 0.0
            while waited < APPLY_WAIT and behind():
                self.sim.advance(1.0)
                waited += 1.0
        self.compare_with_fresh(before_relist=True)

    def _last_events(self) -> dict[str, Any]:
        """The last event of every object the store watches, by uid (oldest first)."""
        versions = self.recording.versions
        if versions is None:
            return {}
        plurals = self._store_plurals()
        last: dict[str, Any] = {}
        for event in versions.events:
            if event.resource.plural in plurals:
                last[event.new.obj["metadata"]["uid"]] = event
        return last

    def _shown_every_change(self) -> bool:
        """Whether lists and watches showed the store the current version of every live
        object in its scope, and the deletion of every object it was shown (or a list begun
        after the deletion)."""
        shown = self._shown_uids()
        for uid, event in self._last_events().items():
            if event.type == "DELETED":
                if uid in shown and event.rv not in self._shown and event.rv > self._listed_from:
                    return False
            elif event.new.rv not in self._shown and self._in_scope(
                event.resource.plural, event.key, event.new
            ):
                return False
        return True

    def _shown_uids(self) -> set[str]:
        """The uids of the objects a list or a watch showed the store, in any version."""
        versions = self.recording.versions
        if versions is None:
            return set()
        shown = self._shown
        return {
            event.new.obj["metadata"]["uid"]
            for event in versions.events
            if event.new.rv in shown or (event.old is not None and event.old.rv in shown)
        }

    def compare_with_fresh(self, *, before_relist: bool = False) -> None:
        """The history oracle's capture: start a fresh store from the factory against the same
        server, let it sync, and snapshot both stores (:mod:`kubesim.checks.history`).

        Runs at the end, after the tail rounds: the long-running store has settled on the
        server's final state (and, ``before_relist``, once before the quiesce round too: see
        :meth:`compare_before_the_relist`). The fresh store runs beside it in the same
        simulation (its effects are not collected: a fresh store doing its first sync's work is
        not a duplicate), and is ended, as a crash ends a store, once both are captured.
        """
        if not self.setup.fresh or self.store is None:
            return
        scheduler = self.sim.scheduler
        known = {id(t) for t in scheduler.threads}
        # The timeline is the scenario's: the fresh store is the oracle's instrument.
        observer, scheduler.observer = scheduler.observer, None
        try:
            self._compare_with_fresh(before_relist=before_relist)
        finally:
            ended = [t for t in scheduler.threads if id(t) not in known]
            scheduler.abort_threads(ended)
            scheduler.observer = observer
        if scheduler.failure is not None:
            self.sim._end_with_failure()

    def _compare_with_fresh(self, *, before_relist: bool) -> None:
        from kubesim.checks.backlog import backlog
        from kubesim.checks.history import FreshComparison
        from kubesim.checks.provenance import Provenance
        from kubesim.checks.structure import snapshot
        from kubesim.sched.aio_thread import LoopOrder

        fresh = _Instance()
        self.sim.spawn(self._launch(fresh, LoopOrder()), name="fresh-store", group=FRESH)
        self.sim.settle()
        if fresh.problems:
            # It met no fault (its requests are exempt) and its factory worked at the first
            # start: a store that cannot start against the cluster as the scenario left it.
            problem = fresh.problems[0]
            error = problem.__cause__ if isinstance(problem, FactoryFailed) else problem
            assert error is not None
            failure = StoreNeverRestarted(
                f"a fresh instance of the store (the history oracle's, started at round "
                f"{self._round} with no fault pending) did not start: "
                f"{type(error).__name__}: {_first_line(error)}\n{_user_frames(error)}"
            )
            failure.__cause__ = error
            raise failure
        if fresh.store is None:
            return  # the factory is still building it: nothing to compare with
        waited, pause = 0.0, 1.0
        while waited < FRESH_SYNC and not self._synced(fresh):
            self.sim.advance(pause)
            waited += pause
            pause = min(pause * 2, FRESH_SYNC - waited) or 1.0
        note = "" if self._synced(fresh) else f"the fresh store did not sync in {FRESH_SYNC:g} s"
        declared = (
            self._call("history_dependent") if "history_dependent" in self.recording.hooks else ()
        )
        skip = frozenset(f"store.{name}" for name in declared)
        if "effects" in self.recording.hooks:
            # Both records of effects drained, as at every quiescent point: the old store's
            # are its own (recorded), the fresh store's first sync's are not the run's.
            performed = list(self._call("effects"))
            self.recording.effects.extend(performed)
            self.recording.effect_rounds.extend([self._round] * len(performed))
            self.recording.effect_instances.extend([self._instances] * len(performed))
            self._hook(fresh, "effects")
        old_sizes = dict(self._call("sizes")) if "sizes" in self.recording.hooks else {}
        fresh_sizes = dict(self._hook(fresh, "sizes")) if "sizes" in self.recording.hooks else {}
        # read() first: a structure a read refreshes (endpoints computed on demand) is then
        # as current in both stores.
        reads: tuple[Any, Any] | None = None
        if "read" in self.recording.hooks and not self._async_hook("read"):
            reads = (self._call_from_driver("read"), self._hook(fresh, "read"))
        old = snapshot(self.store, skip=skip)
        new = snapshot(fresh.store, skip=skip)
        if reads is not None:
            old.update(snapshot(reads[0], name="read()"))
            new.update(snapshot(reads[1], name="read()"))
        versions = self.recording.versions
        plurals = self._store_plurals()
        # Indexed only if a difference is to be judged; what the server wrote until now.
        if versions is None:
            provenance = Provenance((), (), resources=plurals)
        else:
            upto = len(versions.events)
            provenance = Provenance(
                versions.events[:upto],
                partial(versions.base_objects, plurals, upto=upto),
                resources=plurals,
            )
        comparison = FreshComparison(
            old,
            new,
            provenance,
            old_sizes,
            fresh_sizes,
            round=self._round,
            note=note,
            backlog=backlog(self.store),
        )
        if before_relist:
            self.recording.fresh_before = comparison
        else:
            self.recording.fresh = comparison

    def _synced(self, instance: _Instance) -> bool:
        """A fresh store holds what the server has, as far as its view tells (no view: yes)."""

        if "view" not in self.recording.hooks or instance.store is None:
            return instance.store is not None
        view = self._view(self._hook(instance, "view"))
        return not compare(view, self.watched_objects())

    def _hook(self, instance: _Instance, hook: str) -> Any:
        """Call a hook of another instance of the store (the fresh one) from the driver."""
        function = getattr(instance.store, hook)
        if instance.host is None:
            return function()
        return instance.host.from_driver(function, name=hook)

    def _call_from_driver(self, hook: str) -> Any:
        function = getattr(self.store, hook)
        if self._async is None:
            return function()
        return self._async.from_driver(function, name=hook)

    def collect_expectations(self) -> None:
        """With an ``expects(event)`` hook: the effect keys the store must have performed.

        The store is asked about the changes no correct store can miss: the last state of every
        object in its scope, and the deletion of every object it was shown (a list item or a
        watch event it read). Intermediate states may legitimately be skipped (a watch that
        resumes after a gap sees the latest version only) and are not asked about.
        """
        if "expects" not in self.recording.hooks or self.store is None:
            return
        from kubesim.apiserver.encoding import loads
        from kubesim.checks.effects import Expected

        versions = self.recording.versions
        if versions is None:
            return
        last = self._last_events()
        shown = self._shown_uids()
        expected: list[Any] = []
        for uid, event in last.items():
            if event.type == "DELETED":
                before = event.old or event.new
                if uid not in shown or not self._in_scope(event.resource.plural, event.key, before):
                    continue
            elif not self._in_scope(event.resource.plural, event.key, event.new):
                continue
            change = {"type": event.type, "object": loads(event.new.json())}
            try:
                key = self._call_from_driver_with("expects", change)
            except Exception as error:
                raise FactoryFailed(
                    f"the store's expects() raised {type(error).__name__}: {error} (for a "
                    f"{event.type} of {event.key[0]}/{event.key[1]})"
                ) from error
            if key is None:
                continue
            try:
                hash(key)
            except TypeError:
                raise FactoryFailed(
                    f"the store's expects() returned {key!r}, which is not hashable; expected "
                    "the effect key as effects() reports it, e.g. (uid, resourceVersion)"
                ) from None
            what = "deletion" if event.type == "DELETED" else "last state"
            expected.append(
                Expected(key, f"{what} of {event.key[0]}/{event.key[1]} (rv {event.rv})")
            )
        self.recording.expected = expected

    def _store_scopes(self) -> dict[tuple[str, str | None, str, str], Any]:
        """The scopes of the store's watches; of its lists, if it never watched (it polls)."""
        return self._scopes or self._list_scopes

    def _store_plurals(self) -> set[str]:
        """The resources the store watches (lists, if it polls); pods if it did neither."""
        return {plural for plural, *_ in self._store_scopes()} or {"pods"}

    def _in_scope(self, plural: str, key: Any, stored: Any) -> bool:
        """Whether a watch (a list, for a store that polls) the store made of ``plural`` sees
        this object (any, if none)."""
        scopes = [w for (watched, *_), w in self._store_scopes().items() if watched == plural]
        return not scopes or any(w.matches(key, stored) for w in scopes)

    def _call_from_driver_with(self, hook: str, argument: Any) -> Any:
        function = getattr(self.store, hook)
        if self._async is None:
            return function(argument)
        return self._async.from_driver(lambda: function(argument), name=hook)

    def stop_store(self) -> None:
        """With a ``stop()`` hook: call it (from a thread of its own, as a shutdown handler
        would), let everything run, and record the store's threads that are still running."""
        if "stop" not in self.recording.hooks or self.store is None:
            return
        known = {id(t) for t in self.sim.scheduler.threads}
        self.sim.spawn(lambda: self._call("stop"), name="kubesim-stop")
        self._judge_stop(known, "at the end of the run")

    def _judge_stop(self, known: set[int], when: str) -> None:
        # Not self.settle(): run() returning is what stop() is for. "Promptly" is in virtual
        # time: a backoff sleep or a join with a timeout may end within STOP_GRACE seconds.
        self.sim.settle()
        self.sim.advance(STOP_GRACE)
        threads = self.sim.scheduler.threads
        running = [
            f"{t.name!r} waits for {t.waiting_on.describe() if t.waiting_on else 'nothing'} "
            f"(stop() {when})"
            for t in threads
            if id(t) in known
            and t.state.value != "finished"
            and not t.name.startswith(("reader-", "kubesim-"))
        ]
        if running:
            running += [
                f"stop() itself has not returned: it waits for "
                f"{t.waiting_on.describe() if t.waiting_on else 'nothing'}"
                for t in threads
                if id(t) not in known and t.name == "kubesim-stop" and t.state.value != "finished"
            ]
        self.recording.still_running.extend(running)
        self.recording.stopped = True

    def stop_and_restart_store(self, *, during_list: bool, during_event: bool = False) -> str:
        """The ``stop`` step: stop() now, while the store's next list is in flight (a relist
        is provoked: watches end with a 410), or as it reads its next watch event (a pod is
        annotated: stop() then runs beside the store's handling of it), judge that its threads
        end, then restart it."""
        if "stop" not in self.recording.hooks:
            return "stop(): skipped (the store has no stop() hook)"
        if self.store is None:
            return "stop(): skipped (the store's process is not up: it is being restarted)"
        known = {id(t) for t in self.sim.scheduler.threads}
        when = f"at round {self._round}"
        objects = self._workload_objects()
        if during_event and not during_list and self._async is None and objects:
            self._stop_on_event = True
            resource, (namespace, name) = objects[0]
            self.server.patch(
                resource,
                name,
                {"metadata": {"annotations": {"kubesim/stop": f"round-{self._round}"}}},
                namespace=namespace,
                copy=False,
            )
            self._release_readers()
            self._rebase_schedule()
            self.sim.settle()
            if not self._stop_on_event:
                self._judge_stop(known, when + " while it handled a watch event")
                self.sim.crash_store()
                self._readers_waiting.clear()
                self._readers_deferred.clear()
                self._readers_armed.clear()
                self._start_store()
                return "stop() while the store handled a watch event, then started again"
            self._stop_on_event = False  # it read no event: stopped between steps instead
        if during_list and self._async is None:
            self._stop_armed = True
            self._force_relist(with_error=True)
            self._release_readers()
            self._rebase_schedule()
            self.sim.settle()
            waited, pause = 0.0, 1.0
            while self._stop_armed and waited < STOP_GRACE:
                self.sim.advance(pause)  # a store backing off before it relists
                waited += pause
                pause *= 2
        if self._stop_armed or not during_list or self._async is not None:
            self._stop_armed = False
            during_list = False
            self.sim.spawn(lambda: self._call("stop"), name="kubesim-stop")
        else:
            when += " during a list"
        self._judge_stop(known, when)
        # Whatever still runs is unwound, as the process ends; a new one starts.
        self.sim.crash_store()
        self._readers_waiting.clear()
        self._readers_deferred.clear()
        self._readers_armed.clear()
        self._start_store()
        where = "during a list" if during_list else "between steps"
        return f"stop() {where}, then started again"

    def _in_flight(self, request: Any) -> None:
        """Each request of a store thread, before it is served: a list makes the thread *hot*
        until its next request (its points are where a relist prunes and refills: the
        schedule's hot preemptions land there), and a ``stop`` step waiting for a list calls
        stop() now."""
        scheduler = self.sim.scheduler
        current = scheduler.current_thread() if scheduler is _active_scheduler() else None
        if current is None or current.name.startswith(("reader-", "kubesim-", "fresh-store")):
            return
        query = request.query
        # The flag as the server reads it: ``watch=True`` (requests sends a bool so) watches too.
        listing = request.method == "GET" and not Query(query).flag("watch")
        strategy = scheduler.strategy
        if isinstance(strategy, Preemptions):
            if listing:
                strategy.heat(current.id, listing=True)
            else:
                strategy.cool(current.id)
        if listing:
            self._listed_from = self.server.storage.rv
            from kubesim.scenario.workload import ListScope

            scope = ListScope.of(self.server, request.path, query)
            if scope is not None:
                key = (
                    scope.resource.plural,
                    scope.namespace,
                    str(scope.label_selector),
                    str(scope.field_selector),
                )
                with self.server.lock:
                    self._list_scopes[key] = scope
                    self.workload.learn([scope])
        if listing and self._readers_armed:
            self._lister = current.id
            self._release_deferred()
        if self._stop_armed and listing:
            self._stop_during_list()

    def _stop_during_list(self) -> None:
        """While the store's list request is in flight, a thread of its own calls stop(); the
        list answers once stop() has begun."""
        self._stop_armed = False
        begun = threading.Event()  # created in a controlled thread: a simulated one

        def stopper() -> None:
            begun.set()
            self._call("stop")

        threading.Thread(target=stopper, name="kubesim-stop", daemon=True).start()
        begun.wait()

    def _force_relist(self, *, with_error: bool) -> None:
        """End every watch, then write one object the store does not watch and compact: a store
        that tracks its resourceVersion re-watches from an RV the server no longer has, gets
        410 and relists (a raw watcher gets a synthetic ADDED per object instead)."""
        server = self.server
        if not with_error:
            server.expire_watches()
            # While the store is away, its pods change, the last in key order first: a relist
            # that applies the list one object at a time in place shows a reader states that
            # never existed (the order of a list is not the order of the changes).
            for resource, (namespace, name) in reversed(self._rewritten_objects()):
                server.patch(
                    resource,
                    name,
                    {"metadata": {"annotations": {"kubesim/relist": f"round-{self._round}"}}},
                    namespace=namespace or None,
                    copy=False,
                )
        server.create(
            "configmaps",
            {
                "metadata": {
                    "name": f"kubesim-{'relist' if with_error else 'quiesce'}-{self._round}"
                },
                "data": {},
            },
            namespace="default",
            copy=False,
        )
        server.compact()
        if with_error:
            server.expire_watches(with_error=True)

    def quiesce(self) -> None:
        server = self.server
        # The last step's faults last a little longer before they clear: a store waiting out
        # one (a watch cache's 3 s before "Too large resource version", a backoff) meets it
        # again, as it would on a cluster, instead of finding the fault gone when it wakes.
        self._round += 1
        self._release_readers()
        self._rebase_schedule()
        self.sim.advance(FAULTS_LINGER)
        self.observe(f"the faults last {FAULTS_LINGER:g} s more", "step")
        server.resume_watch_cache()
        server.catch_up_replica()
        server.request_failures.clear()
        server.set_watch_buffer(None)
        self._wait_for_restart()
        self._force_relist(with_error=False)
        self._round += 1
        self._release_readers()
        self.settle()
        # A store that backs off after an error may be sleeping: let its timers run.
        self.sim.advance(60)
        self.observe("quiesce: faults cleared, history compacted, watches expired", "quiesce")
        self.recording.tail_rounds = self.setup.tail_rounds
        self._tail(1, self.setup.tail_rounds)
        from kubesim.checks.bounded import check_bounded

        if check_bounded(self.recording) is not None:
            # Growth so far: as many rounds again, to tell a leak (it goes on) from a store
            # that stepped up once and settled (kubesim.checks.bounded.window).
            self._tail(self.setup.tail_rounds + 1, 2 * self.setup.tail_rounds)

    def _tail(self, first: int, last: int) -> None:
        server = self.server
        rotated = self._rotated_label_keys()
        for tail in range(first, last + 1):
            value = f"tail-{tail:03d}"
            objects = self._workload_objects()
            for resource, (namespace, name) in self._rewritten_objects(objects):
                server.patch(
                    resource,
                    name,
                    {
                        "metadata": {
                            "annotations": {"kubesim/tail": f"round-{tail:03d}"},
                            "labels": dict.fromkeys(rotated, value),
                        }
                    },
                    namespace=namespace or None,
                    copy=False,
                )
            server.expire_watches()
            self._round += 1
            self._release_readers()
            self.settle()
            self.sim.advance(60)
            noun = "pod" if self.resources() == ["pods"] else "object"
            total = len(objects)
            what = (
                f"every {noun}"
                if total <= REWRITTEN_OBJECTS
                else (f"{REWRITTEN_OBJECTS} of the {total:,} {noun}s")
            )
            labels = f", labels {', '.join(rotated)}={value}" if rotated else ""
            self.observe(
                f"tail {tail}: {what} re-annotated{labels}, watches expired",
                "tail",
                walk=self._walked(tail, first, last),
            )

    @staticmethod
    def _walked(tail: int, first: int, last: int) -> bool:
        """Whether tail round ``tail`` of the pass ``first``..``last`` needs the memory walk.

        The bounded oracle judges the median of the per-round growths. Over the first pass of
        three rounds that is the median of two growths, their mean: half of what the third
        round holds more than the first, which the two ends alone give
        (kubesim.checks.bounded.per_round_growth spreads a gap evenly over its rounds).
        So the middle walk, a third of the tail's cost, is not taken. A longer pass has a true
        median, and the extension after growth is judged from the first pass's last round on:
        every one of their rounds is walked."""
        return not (first == 1 and last == 3 and tail == 2)

    def _rotated_label_keys(self) -> list[str]:
        """The label keys the tail sets to a new value each round: the scenario's own
        (:data:`~kubesim.scenario.steps.LABEL_KEYS`) but those any of the store's watches or
        lists selects on, so that the live set it holds stays the same. A value the tail sets
        is gone the round after, as a rollout's pod-template-hash is: an index, an intern table
        or a per-value table that keeps what no object carries any more grows every round, and
        holds what a fresh store does not."""
        selected = {
            requirement.key
            for scope in self._store_scopes().values()
            for requirement in scope.label_selector.requirements()
        }
        return [key for key in LABEL_KEYS if key not in selected]


@dataclass
class _Instance:
    """One instance (a process) of the store built from the factory: the store, its asyncio
    host, any problem the factory had at the first start (a usage error), and, for a restart,
    when and how each failed start failed."""

    store: Any = None
    host: Any = None
    problems: list[Exception] = field(default_factory=list)
    restarts: bool = False
    failed_starts: list[tuple[float, Exception]] = field(default_factory=list)


def _factory_failed(spec: str, error: Exception) -> FactoryFailed:
    hint = ""
    if isinstance(error, TypeError) and "argument" in str(error):
        hint = (
            "; a factory is called with one argument, the ApiClient (for a class whose "
            "constructor takes none: def factory(api_client): return MyStore())"
        )
    problem = FactoryFailed(f"the factory {spec} raised {type(error).__name__}: {error}{hint}")
    problem.__cause__ = error
    return problem


def _guarded(
    factory: Any, spec: str, instance: _Instance, failed: Callable[[_Instance, Exception], None]
) -> Any:
    """An async factory whose failure is recorded, not raised into the run: a usage error at
    the first start, a failed start retried after CrashLoopBackOff's delays at a restart."""
    import asyncio

    async def build(client: Any) -> Any:
        delay = CRASH_LOOP_BACKOFF
        while True:
            try:
                return await factory(client)
            except Exception as error:
                if not instance.restarts:
                    instance.problems.append(_factory_failed(spec, error))
                    return None
                failed(instance, error)
            await asyncio.sleep(delay)  # the store's loop runs in virtual time
            delay = min(2 * delay, CRASH_LOOP_MAX_BACKOFF)

    return build


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


def _user_frames(error: BaseException, limit: int = 6) -> str:
    """Where ``error`` was raised, in the store's code and its libraries' (kubesim's own frames
    left out): the innermost ``limit`` frames, each with its line."""
    kubesim_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith(kubesim_dir)
    ][-limit:]
    return "".join(traceback.format_list(frames)).rstrip()


def _active_scheduler() -> Any:
    from kubesim.sched import scheduler

    return scheduler.active()


def _stored_key(stored: Any) -> tuple[str, str]:
    meta = stored.obj["metadata"]
    return (meta.get("namespace") or "", meta.get("name") or "")


def _sample(keys: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _is_wire_object(obj: Any) -> bool:
    """An object as the server sent it (a dict or a client model), not a store's projection.

    Every object on the wire has ``metadata.name``; a projection that carries only
    ``metadata.uid`` and ``metadata.resourceVersion`` (the store contract's way to have
    versions checked) is compared by identity, never by content.
    """
    if isinstance(obj, Mapping):
        metadata = obj.get("metadata")
        return isinstance(metadata, Mapping) and "name" in metadata
    return hasattr(obj, "metadata") and hasattr(obj, "attribute_map")


def _has_identity(obj: Any) -> bool:
    from kubesim.checks._objects import resource_version_of, uid_of

    return uid_of(obj) is not None and resource_version_of(obj) is not None


def _identity(obj: Any) -> dict[str, Any]:
    """Just what the snapshot oracle compares, frozen now: the store may reuse the object."""
    from kubesim.checks._objects import resource_version_of, uid_of

    return {"metadata": {"uid": str(uid_of(obj)), "resourceVersion": str(resource_version_of(obj))}}


def _entries(result: Any) -> dict[str, Observed]:
    if isinstance(result, Mapping):
        return normalise_view(result)
    entries: dict[str, Observed] = {}
    for item in result:
        metadata = (
            item.get("metadata") if isinstance(item, Mapping) else getattr(item, "metadata", None)
        )
        if metadata is None:
            # A store's own record (a frozen flyweight): named by its namespace and name
            # attributes when it has them, else by position. It takes part by key only.
            namespace = str(getattr(item, "namespace", "") or "")
            name = str(getattr(item, "name", "") or f"#{len(entries)}")
            entries[object_key((namespace, name))] = Observed(None, None)
            continue
        if isinstance(metadata, Mapping):
            namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
        else:
            namespace, name = metadata.namespace or "", metadata.name or ""
        entries[object_key((namespace, name))] = observe(item)
    return entries


@dataclass
class ScenarioResult:
    """A run's recording, the steps as they resolved, and the verdicts."""

    steps: list[Step]
    lines: list[str]
    recording: Recording
    seed: int | str
    schedule: tuple[int, ...]

    @property
    def trace_hash(self) -> str:
        return self.recording.trace_hash


def hooks_of(store: Any) -> frozenset[str]:
    """Which optional hooks of the store contract this store has."""
    return frozenset(name for name in HOOKS if callable(getattr(store, name, None)))


def run_scenario(
    factory: StoreFactory,
    steps: Sequence[Step],
    *,
    seed: int | str = 0,
    setup: Setup | None = None,
    schedule: Sequence[int] = (),
    traced: Sequence[Any] = (),
    spec: str = "the factory",
    timeline: bool = False,
) -> ScenarioResult:
    """Run ``steps`` against the store ``factory`` builds; record every quiescent point.

    ``schedule``: preemption points for the store's threads, counted from the start of each
    step's settle (the scheduler switches to the next runnable thread there, in every step),
    drawn and shrunk by Hypothesis in ``kubesim check``. ``traced``: modules (or paths) whose
    code gets scheduling points. The run's own failures (the store crashed, deadlocked, spun)
    are recorded, not raised. ``timeline``: also record who ran when, and at which line of
    the store's code each thread stopped (``recording.stops``; for the campaign report).
    """
    from kubesim.sim.simulation import Simulation

    setup = setup if setup is not None else Setup()
    options = _schedule_options(schedule, traced)
    if setup.controllers:
        from kubesim.cluster import Cluster

        options.update(server_type=Cluster, nodes=CONTROLLER_NODES, controllers=True)
    sim = Simulation(seed=seed, **options)
    run = ScenarioRun(factory, seed=seed, setup=setup, simulation=sim, spec=spec, schedule=schedule)
    recording = run.recording
    if timeline:
        run.memory_every_round = True  # the report draws memory over every round
        stops: list[Any] = []
        recording.stops = stops
        sim.scheduler.observer = stops.append
    if setup.server_version is not None:
        from kubesim.apiserver.versions import server_version

        server_version(setup.server_version).apply(sim.server)
    patches = contextlib.ExitStack()
    try:
        patches.enter_context(_default_clients(sim.server))
        run.populate()
        run._start_store()
        recording.hooks = hooks_of(run.store)
        run.shape_workload()
        run._watch_reads()
        run.observe("setup", "setup")
        run.apply(steps)
        run.compare_before_the_relist()
        run.quiesce()
        run.compare_with_fresh()
        run.collect_expectations()
        run.stop_store()
    except run_failures() as failure:
        # The store's own failure is a finding: recorded for the oracles, not raised. Anything
        # else (a bug in kubesim, a bad step) propagates as a harness error.
        recording.failure = failure
    finally:
        sim.stop()
        patches.close()
        recording.trace_hash = sim.trace.hexdigest()
        recording.read_scopes = run.read_scopes()
    return ScenarioResult(list(steps), run.lines, recording, seed, tuple(schedule))


def run_failures() -> tuple[type[BaseException], ...]:
    """The ways a run ends with the store at fault: each is recorded as the example's failure
    and judged (:func:`kubesim.checks.store.judge`), never raised to the user. Contract:
    tests/unit/test_every_run_failure.py drives each of them through a run to its verdict."""
    from kubesim.sched.errors import ScheduleFailure
    from kubesim.sim.simulation import StoreBlockedOutsideSimulation, StoreCrashed

    return (
        StoreCrashed,
        StoreBlockedOutsideSimulation,
        StoreStoppedWatching,
        StoreNeverRestarted,
        ScheduleFailure,
    )


def _scope_of(watcher: Any) -> tuple[str | None, Callable[[Any], bool]]:
    """(namespace, predicate on a stored object) of one watch or list."""
    return watcher.namespace, lambda stored: bool(watcher.matches(_stored_key(stored), stored))


def _union_scope(watchers: Sequence[Any]) -> Callable[[Any], bool] | None:
    """What these watches of one resource see together; None when one of them sees it all."""
    if any(
        w.namespace is None and w.label_selector.empty() and w.field_selector.empty()
        for w in watchers
    ):
        return None

    def in_scope(stored: Any) -> bool:
        key = _stored_key(stored)
        return any(w.matches(key, stored) for w in watchers)

    return in_scope


@contextlib.contextmanager
def _default_clients(server: APIServer) -> Iterator[None]:
    """Stores that build their own client (``load_kube_config()``, ``CoreV1Api()``, the same on
    ``kubernetes_asyncio``, a kopf operator's login, lightkube's ``Client()``, ``kr8s.api()``,
    pykube-ng's ``KubeConfig.from_env()``) reach the simulation too; a client package that is
    not installed has nothing to point."""
    import importlib.util

    with contextlib.ExitStack() as patches:
        if importlib.util.find_spec("kubernetes") is not None:
            from kubesim.transport.kubernetes_client import patch_kubernetes

            patches.enter_context(patch_kubernetes(server))
        if importlib.util.find_spec("kubernetes_asyncio") is not None:
            from kubesim.transport.kubernetes_asyncio_client import patch_kubernetes_asyncio

            patches.enter_context(patch_kubernetes_asyncio(server))
        if "kopf" in sys.modules:  # a kopf operator's store imported it; importing costs ~0.5 s
            from kubesim.transport.kopf_sessions import patch_kopf

            patches.enter_context(patch_kopf(server))
        # lightkube, kr8s, pykube-ng and plain httpx/requests/aiohttp calls: KUBECONFIG points at
        # the simulation and each library already imported routes it in-process.
        from kubesim.transport.http_clients import patch_http_clients

        patches.enter_context(patch_http_clients(server))
        # Their decoding and encoding run untraced: the store's code keeps every point.
        from kubesim.transport.client_leaves import untraced_leaves

        patches.enter_context(untraced_leaves())
        yield


def _schedule_options(schedule: Sequence[int], traced: Sequence[Any]) -> dict[str, Any]:
    if not schedule and not traced:
        return {}
    from kubesim.sched.strategies import Preemptions

    return {"strategy": Preemptions(list(schedule)), "traced": tuple(traced)}
