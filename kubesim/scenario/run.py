"""Run one scenario against a store and record what happened.

:func:`run_scenario` is the engine under ``kubesim check``, the pytest plugin and ``kubesim
replay``: it builds a seeded :class:`~kubesim.sim.simulation.Simulation`, populates the server,
starts the store from its factory, applies the steps one at a time (the store's threads run
under the controlled scheduler between steps until every one of them waits), and records a
:class:`~kubesim.checks.recording.Round` at each quiescent point. The same arguments give the
same recording and the same trace hash.

Every scenario ends the same way, so that the oracles can judge it:

1. **quiesce**: faults are cleared (a stalled watch cache resumes, pending injected errors are
   dropped), watches expire and history is compacted past the store's resourceVersion, so the
   store must re-sync (a reflector relists after its 410; a raw watcher gets a synthetic ADDED
   per object);
2. **tail**: :attr:`Setup.tail_rounds` rounds in which the live set stays the same while
   history grows (every pod's annotation is rewritten, then watches expire). A bounded store's
   structures and retained bytes stay flat across them; a leaking one grows every round.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesim.checks.recording import (
    Observed,
    Read,
    Recording,
    Round,
    normalise_view,
    object_key,
    observe,
)
from kubesim.scenario.steps import Key, Step
from kubesim.server.apiserver import APIServer
from kubesim.workload.pods import make_pod

StoreFactory = Callable[[Any], Any]


class StoreStoppedWatching(RuntimeError):
    """The store's ``run()`` returned: it no longer keeps its cache fed."""


# Requests a store may make between two quiescent points before the run calls it a hot loop.
# A correct store makes a handful per fault (a relist is a few pages); a loop that re-requests
# without ever waiting would otherwise never give control back, and the run would hang.
HOT_LOOP_REQUESTS = 1_000
# Virtual seconds a store's threads may take to end after its stop() hook is called.
STOP_GRACE = 30.0


class HotRequestLoop(BaseException):
    """Raised into a store thread that made :data:`HOT_LOOP_REQUESTS` without waiting.

    A ``BaseException``: the store's ``except Exception: retry`` must not swallow it.
    """


HOOKS = ("view", "read", "sizes", "workers", "effects", "stop")


@dataclass(frozen=True)
class Setup:
    """The world a scenario starts from, and how it ends."""

    pods: int = 6
    namespaces: int = 2
    tail_rounds: int = 3
    # Measure what the store retains (bytes reachable from it, kubesim.checks.retained) at
    # every quiescent point. The walk is exact and deterministic, and it costs: off for
    # campaigns that only look for races, say.
    memory: bool = True

    def __post_init__(self) -> None:
        if self.pods < 0 or self.namespaces < 1 or self.tail_rounds < 2:
            raise ValueError(
                "Setup needs pods >= 0, namespaces >= 1, tail_rounds >= 2; got "
                f"pods={self.pods}, namespaces={self.namespaces}, tail_rounds={self.tail_rounds}"
            )


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
        self._readers = itertools.count(1)
        self.lines: list[str] = []
        self.store: Any = None
        # An async store's loop (kubesim.sim.async_store), None for a threaded store. The
        # schedule's points reorder its ready callbacks as they preempt threads.
        self._async: Any = None
        self._loop_order = LoopOrder(schedule)
        self.recording = Recording(hooks=frozenset())
        self._round = 0
        self._instant = -1.0
        self._requests_at_instant = 0
        self._monitor: Any = None
        self._readers_waiting: list[threading.Event] = []
        self._store_started_rv = 0
        self._lists_at_start = 0
        # (resource, namespace, labels, fields) -> a watch with that scope: see watched_objects.
        self._scopes: dict[tuple[str, str | None, str, str], Any] = {}
        self.server.request_listeners.append(self._count_request)

    def _count_request(self, method: str, path: str) -> None:
        # Requests at one instant of virtual time: a store that waits (a sleep, a watch that
        # stays open) lets time move and starts a new count.
        now = self.server.clock.now()
        if now != self._instant:
            self._instant = now
            self._requests_at_instant = self.server.request_count - 1
        made = self.server.request_count - self._requests_at_instant
        if made > HOT_LOOP_REQUESTS:
            raise HotRequestLoop(
                f"the store made {made:,} API requests at virtual time {now:g} s without "
                f"waiting for anything (last: {method} {path}): a hot request loop (no backoff "
                "after an error, or a re-watch that ends at once)"
            )

    # -- World -------------------------------------------------------------------------------
    def live_pods(self) -> list[Key]:
        pods = self.server.resource("pods")
        return [key for key, _ in self.server.storage.items(pods)]

    def new_pod_key(self) -> Key:
        number = next(self._names)
        return (f"team-{number % self.setup.namespaces}", f"web-{number:03d}")

    def start_reader(self) -> str | None:
        if "read" not in self.recording.hooks:
            return None
        name = f"reader-{next(self._readers)}"

        def reader() -> None:
            # A consumer that keeps reading (a scraper): once per step from the next one on,
            # each read overlapping the store's reaction to that step. The Event is created
            # here, inside the run, so it is a simulated one the driver can set.
            while True:
                go = threading.Event()
                self._readers_waiting.append(go)
                go.wait()
                self._read(name, self._round)

        self.sim.spawn(reader, name=name)
        return name

    def crash_and_restart_store(self) -> None:
        self.sim.crash_store()
        self._readers_waiting.clear()
        self._start_store()

    def advance(self, seconds: float) -> None:
        self._rebase_schedule()
        self.sim.advance(seconds)

    # -- running -----------------------------------------------------------------------------
    def _start_store(self) -> None:
        from kubesim.sim.async_store import AsyncStoreHost, is_async_factory, is_async_store
        from kubesim.sim.store import StoreContractError, check_store_contract

        problems: list[StoreContractError] = []

        def accept(store: Any) -> bool:
            try:
                check_store_contract(store, factory=self.spec)
            except StoreContractError as problem:
                problems.append(problem)
                return False
            self.store = store
            return True

        def store_main() -> None:
            # The factory runs in the store's own controlled thread: the locks, conditions and
            # events a store creates in __init__ are then simulated ones, as its threads'.
            if is_async_factory(self.factory):
                self._async = AsyncStoreHost(self.sim, self._loop_order)
                self._async.serve_factory(self.factory, accept)
                return
            store = self.factory(self.sim.kubernetes_client())
            if not accept(store):
                return
            if is_async_store(store):
                self._async = AsyncStoreHost(self.sim, self._loop_order)
                self._async.serve_store(store)
                return
            workers = getattr(store, "workers", None)
            for number, work in enumerate(workers() if callable(workers) else (), 1):
                threading.Thread(target=work, name=f"worker-{number}", daemon=True).start()
            store.run()

        self.store = None
        self._async = None
        self._store_started_rv = self.server.resource_version
        self._lists_at_start = self.server.lists_completed
        self.sim.start(store_main, name="store")
        if problems:
            raise problems[0]  # a contract error is the user's setup, not a finding

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

    def _read(self, reader: str, round_: int) -> None:
        from kubesim.checks.races import SnapshotRead, check_reads_match_server

        before = self.server.resource_version
        result = self._call("read")
        after = self.server.resource_version
        # Harness work: no scheduling point may interleave it with the store's threads.
        with self.sim.scheduler.atomic():
            objects = list(result.values()) if isinstance(result, Mapping) else list(result)
            recording = self.recording
            recording.reads.append(Read(reader, round_, _entries(result), before, after))
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
                        listed=self.server.lists_completed > self._lists_at_start,
                    )
                )
                # Content is compared only for objects the store still holds: a private copy is
                # the consumer's to change; the cache's own objects are not.
                # And only for the wire's objects (a dict or a client model with metadata): a
                # store's own projection is not what the server emitted, by design.
                held = self._held_ids()
                shared = [
                    o for o in objects if (held is None or id(o) in held) and _is_wire_object(o)
                ]
                recording.race_violations.extend(
                    check_reads_match_server(
                        [(reader, o, round_) for o in shared], recording.versions
                    )
                )

    def _held_ids(self) -> set[int] | None:
        """Identities of what the store holds now (its view), or None without a view()."""
        if "view" not in self.recording.hooks or self._async_hook("view"):
            return None
        return {id(value) for value in self.store.view().values()}

    def _async_hook(self, hook: str) -> bool:
        """An ``async def`` hook: it cannot be called from a reader thread in passing."""
        import inspect

        return inspect.iscoroutinefunction(getattr(self.store, hook, None))

    def _watch_reads(self) -> None:
        """With a read() hook: record the server's versions and watch what reads hand out."""
        from kubesim.checks.races import IsolationMonitor, ServerVersions

        if "read" not in self.recording.hooks:
            return
        self.recording.versions = ServerVersions(self.server)
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
            self.server.create("namespaces", {"metadata": {"name": f"team-{n}"}})
        for _ in range(self.setup.pods):
            namespace, name = self.new_pod_key()
            self.server.create("pods", _pod(namespace, name), namespace=namespace)

    def observe(self, step: str, phase: str) -> Round:
        self._requests_at_instant = self.server.request_count
        self._verify_isolation()
        store = self.store
        hooks = self.recording.hooks
        if "effects" in hooks and store is not None:
            # The contract: effects() hands over (and forgets) what was done since last time,
            # so the store's own record of them never grows.
            self.recording.effects.extend(self._call("effects"))
        view = normalise_view(self._call("view")) if "view" in hooks else None
        sizes = dict(self._call("sizes")) if "sizes" in hooks else {}
        retained = None
        if self.setup.memory and store is not None:
            from kubesim.checks.retained import measure_retained
            from kubesim.sim.store import store_roots

            retained = measure_retained(store_roots(store, self.factory))
        round_ = Round(
            index=self._round,
            step=step,
            phase=phase,
            time=self.server.clock.now(),
            requests=self.server.request_count,
            server=self.watched_objects(),
            view=view,
            sizes=sizes,
            retained_bytes=retained.retained_bytes if retained is not None else None,
            containers=retained.containers if retained is not None else None,
        )
        self.recording.rounds.append(round_)
        return round_

    def watched_objects(self) -> dict[str, Observed]:
        """What the server holds within the scope of the watches the store has opened in this
        run (pods if none yet).

        Every scope seen open at a quiescent point is remembered, not only the watches open
        now: a store with several watches (one reflector per namespace) may have one of them
        closed at a given moment (backing off after an error, or not yet re-listed after a
        restart), and the objects of that scope are no less the store's to hold.
        """
        server = self.server
        out: dict[str, Observed] = {}
        with server.lock:
            for watcher in server._watchers.values():
                if watcher.ended is None:
                    scope = (
                        watcher.resource.plural,
                        watcher.namespace,
                        str(watcher.label_selector),
                        str(watcher.field_selector),
                    )
                    self._scopes[scope] = watcher
            if not self._scopes:
                pods = server.resource("pods")
                for key, stored in server.storage.items(pods):
                    out[object_key(key)] = observe(stored.obj)
                return out
            for watcher in self._scopes.values():
                for key, stored in server.storage.items(watcher.resource):
                    if watcher.matches(key, stored):
                        out[object_key(key)] = observe(stored.obj)
        return out

    def pod_scope(self) -> Callable[[Any], bool] | None:
        """What the store watched of pods (see :attr:`Recording.scope`); None for all pods."""
        watchers = [w for (plural, *_), w in self._scopes.items() if plural == "pods"]
        if not watchers or any(
            w.namespace is None and w.label_selector.empty() and w.field_selector.empty()
            for w in watchers
        ):
            return None

        def in_scope(stored: Any) -> bool:
            meta = stored.obj["metadata"]
            key = (meta.get("namespace") or "", meta.get("name") or "")
            return any(w.matches(key, stored) for w in watchers)

        return in_scope

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

    def _rebase_schedule(self) -> None:
        self._loop_order.rebase()
        rebase = getattr(self.sim.scheduler.strategy, "rebase", None)
        if rebase is not None:
            rebase(self.sim.scheduler.steps)

    def settle(self) -> None:
        self._rebase_schedule()
        self.sim.settle()
        if self.sim.store_finished:
            raise StoreStoppedWatching(
                f"the store's run() returned at round {self._round} after "
                f"{self.server.request_count} requests: a store must keep its cache fed until "
                "kubesim stops it (a list-once store is not watching)"
            )

    def stop_store(self) -> None:
        """With a ``stop()`` hook: call it (from a thread of its own, as a shutdown handler
        would), let everything run, and record the store's threads that are still running."""
        if "stop" not in self.recording.hooks or self.store is None:
            return
        known = {id(t) for t in self.sim.scheduler.threads}
        self.sim.spawn(lambda: self._call("stop"), name="kubesim-stop")
        # Not self.settle(): run() returning is what stop() is for. "Promptly" is in virtual
        # time: a backoff sleep or a join with a timeout may end within STOP_GRACE seconds.
        self.sim.settle()
        self.sim.advance(STOP_GRACE)
        self.recording.still_running = [
            f"{t.name!r} waits for {t.waiting_on.describe() if t.waiting_on else 'nothing'}"
            for t in self.sim.scheduler.threads
            if id(t) in known and t.state.value != "finished" and not t.name.startswith("reader-")
        ]
        self.recording.stopped = True

    def quiesce(self) -> None:
        server = self.server
        server.resume_watch_cache()
        server.request_failures.clear()
        server.set_watch_buffer(None)
        server.expire_watches()
        # One write the store does not watch, then compaction: a store that tracks its
        # resourceVersion now re-watches from an RV the server no longer has, gets 410 and
        # relists (a raw watcher gets a synthetic ADDED per object instead).
        server.create(
            "configmaps",
            {"metadata": {"name": f"kubesim-quiesce-{self._round}"}, "data": {}},
            namespace="default",
        )
        server.compact()
        self._round += 1
        self._release_readers()
        self.settle()
        # A store that backs off after an error may be sleeping: let its timers run.
        self.sim.advance(60)
        self.observe("quiesce: faults cleared, history compacted, watches expired", "quiesce")
        for tail in range(1, self.setup.tail_rounds + 1):
            for namespace, name in self.live_pods():
                server.patch(
                    "pods",
                    name,
                    {"metadata": {"annotations": {"kubesim/tail": f"round-{tail:03d}"}}},
                    namespace=namespace,
                )
            server.expire_watches()
            self._round += 1
            self._release_readers()
            self.settle()
            self.sim.advance(60)
            self.observe(f"tail {tail}: every pod re-annotated, watches expired", "tail")


def _pod(namespace: str, name: str) -> Any:
    number = int(name.rsplit("-", 1)[1])
    return make_pod(
        name,
        namespace,
        labels={"app": "web", "tier": ("frontend", "backend")[number % 2]},
        node=f"node-{number % 3}",
        pod_ip=f"10.1.{number // 256 % 256}.{number % 256}",
    )


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
    from kubesim.sched.errors import ScheduleFailure
    from kubesim.sim.simulation import (
        Simulation,
        StoreBlockedOutsideSimulation,
        StoreCrashed,
    )

    setup = setup if setup is not None else Setup()
    sim = Simulation(seed=seed, **_schedule_options(schedule, traced))
    run = ScenarioRun(factory, seed=seed, setup=setup, simulation=sim, spec=spec, schedule=schedule)
    recording = run.recording
    if timeline:
        stops: list[Any] = []
        recording.stops = stops
        sim.scheduler.observer = stops.append
    patches = contextlib.ExitStack()
    try:
        patches.enter_context(_default_clients(sim.server))
        run.populate()
        run._start_store()
        recording.hooks = hooks_of(run.store)
        run._watch_reads()
        run.observe("setup", "setup")
        run.apply(steps)
        run.quiesce()
        run.stop_store()
    except (
        StoreCrashed,
        StoreBlockedOutsideSimulation,
        StoreStoppedWatching,
        ScheduleFailure,
    ) as failure:
        # The store's own failure is a finding: recorded for the oracles, not raised. Anything
        # else (a bug in kubesim, a bad step) propagates as a harness error.
        recording.failure = failure
    finally:
        sim.stop()
        patches.close()
        recording.trace_hash = sim.trace.hexdigest()
        recording.scope = run.pod_scope()
    return ScenarioResult(list(steps), run.lines, recording, seed, tuple(schedule))


@contextlib.contextmanager
def _default_clients(server: APIServer) -> Iterator[None]:
    """Stores that build their own client (``load_kube_config()``, ``CoreV1Api()``, the same on
    ``kubernetes_asyncio``, a kopf operator's login) reach the simulation too; a client package
    that is not installed has nothing to point."""
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
        yield


def _schedule_options(schedule: Sequence[int], traced: Sequence[Any]) -> dict[str, Any]:
    if not schedule and not traced:
        return {}
    from kubesim.sched.strategies import Preemptions

    return {"strategy": Preemptions(list(schedule)), "traced": tuple(traced)}
