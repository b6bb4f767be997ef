"""What a scenario run records, for the oracles to judge afterwards.

The runner fills a :class:`Recording` as it goes: one :class:`Round` per quiescent point (after
setup and after every step: the store has reacted and waits), the reads reader threads made,
the effects the store reports, and how the run ended. Oracles are pure functions of a
recording; none of them drives the run, so the same recording can be judged again (in a
report, after a replay) and give the same verdicts.

A store's *view* (its ``view()`` hook) is normalised here into :class:`Observed` entries:
``namespace/name`` keys (``(namespace, name)`` tuples are accepted), and for each the uid and
resourceVersion when the value carries them (a dict with ``metadata``, or an official-client
model object). A projection that carries neither (a set of endpoint names, say) still takes
part by its keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Observed:
    """One entry of a store's view: which object and which version of it, when known."""

    uid: str | None
    resource_version: int | None


@dataclass(frozen=True)
class Round:
    """The state of things at one quiescent point."""

    index: int  # 0: after setup; n: after step n
    step: str  # the resolved line of the step that led here ("setup" for round 0)
    phase: str  # "setup", "step", "quiesce" or "tail" (see kubesim.scenario.run)
    time: float  # virtual seconds
    requests: int  # API requests the store made so far
    server: Mapping[str, Observed]  # the objects the store watches, as the server has them
    view: Mapping[str, Observed] | None  # None when the store has no view() hook
    sizes: Mapping[str, int]
    retained_bytes: int | None = None
    # The containers near the store's roots, by path (kubesim.checks.retained.Container):
    # how the bounded oracle names what grows.
    containers: Mapping[str, Any] | None = None
    lists: int = 0  # lists the server answered in full so far (a store's relists among them)
    refused: int = 0  # requests answered with an injected error so far (fail_requests, outages)
    refused_writes: int = 0  # of those, writes (create, update, patch, delete)
    # False while a store (re)started since the last round has shown nothing of a world that is
    # not empty: its empty view is a store still syncing, not one that let objects go.
    synced: bool = True
    # The resourceVersions a lagging replica answered the store's lists and watches at since
    # the round before (what can take a store back in time: kubesim.checks.state).
    replica_served: tuple[int, ...] = ()


@dataclass(frozen=True)
class Read:
    """One ``read()`` a reader thread made, with the server's resourceVersion around it."""

    reader: str
    round: int
    entries: Mapping[str, Observed]
    server_rv_before: int
    server_rv_after: int


@dataclass(frozen=True)
class ReadScope:
    """What a store watched of one resource, for judging its reads.

    ``scope``: a predicate on a stored object, the union of its watches' namespace, label and
    field selectors, or None for every object of the resource. ``scopes``: (namespace,
    predicate) per watch when it has several (a reflector per namespace), each consistent at
    its own resourceVersion, so judged one by one.
    """

    resource: str
    scope: Any = None
    scopes: tuple[Any, ...] = ()


@dataclass
class Recording:
    """Everything one run of a scenario recorded."""

    hooks: frozenset[str]
    rounds: list[Round] = field(default_factory=list)
    # How many tail rounds the setup asked for (the runner plays as many again when they grow:
    # kubesim.checks.bounded.window).
    tail_rounds: int = 0
    reads: list[Read] = field(default_factory=list)
    effects: list[Any] = field(default_factory=list)
    failure: BaseException | None = None
    trace_hash: str = ""
    # What reader threads got, frozen at read time, for the snapshot-read oracle: one
    # SnapshotRead per read() (kubesim.checks.races), and the server's versions to judge them.
    snapshot_reads: list[Any] = field(default_factory=list)
    versions: Any = None
    # What the store watched, per resource (pods if it watched nothing): reads are judged
    # against that part of the server's state, resource by resource.
    read_scopes: list[ReadScope] = field(default_factory=list)
    # Set (to what showed it) when read() at a quiescent point lacked objects the server has in
    # the store's scope: the store's reads are filtered by design (an index serving pods with
    # an IP), and snapshot reads are judged as parts of one state.
    partial_reads: str | None = None
    # Race violations found while the run went on (isolation is checked at every quiescent
    # point; a read is compared with what the server emitted the moment it returns).
    race_violations: list[Any] = field(default_factory=list)
    # After the store's stop() hook ran (if it has one): its threads that still run.
    stopped: bool = False
    still_running: list[str] = field(default_factory=list)
    # Who ran when (only when asked for: ``run_scenario(..., timeline=True)``, for the campaign
    # report): the scheduler's stops (kubesim.sched.scheduler.Stop) and, for each step of the
    # scenario, (round, line, scheduling points so far, virtual time) when it began.
    stops: list[Any] | None = None
    # The history oracle's capture: the long-running store and a fresh one, side by side at
    # the end of the run (kubesim.checks.history.FreshComparison), or None when not taken.
    fresh: Any = None
    # The same, taken after the steps and before the quiesce round's forced relist, when no
    # fault was on and the store's view held the server's state (None otherwise).
    fresh_before: Any = None
    # With an expects() hook: the effects the store had to perform (kubesim.checks.effects.
    # Expected), asked of the store at the end of the run; None without the hook.
    expected: list[Any] | None = None
    # Rounds whose step was a lasting outage (the progress oracle holds them to a backoff).
    outage_rounds: list[int] = field(default_factory=list)
    # The round each entry of ``effects`` was reported at (its quiescent point), and which
    # store instance performed it (1 for the first, one more after each crash or stop).
    effect_rounds: list[int] = field(default_factory=list)
    effect_instances: list[int] = field(default_factory=list)
    step_starts: list[tuple[int, str, int, float]] = field(default_factory=list)
    # Each start of a restarted store that failed (its factory raised): the virtual time and
    # the error, one line. The kubelet's CrashLoopBackOff spaces them (kubesim.scenario.run).
    failed_starts: list[tuple[float, str]] = field(default_factory=list)


def object_key(key: Any, canonical: Callable[[str], str] | None = None) -> str:
    """``namespace/name`` for the keys stores use (strings, or (namespace, name) tuples), and
    ``resource:namespace/name`` for a store of several kinds, whose keys are (resource,
    namespace, name) tuples (``canonical`` turns the resource as the store names it, "Service"
    or "svc", into the server's name for it, "services")."""
    if isinstance(key, str):
        return key
    # Called for every entry of every view and server state: no generator on the way.
    if isinstance(key, tuple):
        if len(key) == 2:
            namespace, name = key
            if isinstance(namespace, str) and isinstance(name, str):
                return f"{namespace}/{name}" if namespace else name
        elif len(key) == 3 and all(isinstance(part, str) for part in key):
            resource, namespace, name = key
            return qualified_key(canonical(resource) if canonical else resource, (namespace, name))
    raise TypeError(
        "view() keys must be 'namespace/name' strings, (namespace, name) tuples, or "
        "(resource, namespace, name) tuples for a store of several kinds, "
        f"got {key!r} ({type(key).__name__})"
    )


def qualified_key(resource: str, key: tuple[str, str]) -> str:
    """The key of a server object of ``resource`` as a several-kinds view has it."""
    namespace, name = key
    return f"{resource}:{namespace}/{name}" if namespace else f"{resource}:{name}"


def of_several_kinds(view: Mapping[Any, Any]) -> bool:
    """Whether ``view``'s keys carry their resource: (resource, namespace, name) tuples."""
    return any(isinstance(key, tuple) and len(key) == 3 for key in view)


def observe(value: Any) -> Observed:
    """The uid and resourceVersion a view value carries, if any."""
    metadata: Any = None
    if isinstance(value, Mapping):
        metadata = value.get("metadata")
    elif hasattr(value, "metadata"):  # the official client's model objects (V1Pod, ...)
        metadata = value.metadata
    if metadata is None:
        return Observed(None, None)
    if isinstance(metadata, Mapping):
        uid, rv = metadata.get("uid"), metadata.get("resourceVersion")
    else:
        uid = getattr(metadata, "uid", None)
        rv = getattr(metadata, "resource_version", None)
    try:
        version = int(rv) if rv not in (None, "") else None
    except (TypeError, ValueError):
        version = None
    return Observed(str(uid) if uid else None, version)


def normalise_view(
    view: Mapping[Any, Any], canonical: Callable[[str], str] | None = None
) -> dict[str, Observed]:
    if not isinstance(view, Mapping):
        raise TypeError(f"view() must return a mapping of key -> object, got {type(view).__name__}")
    if canonical is None:
        return {object_key(key): observe(value) for key, value in view.items()}
    return {object_key(key, canonical): observe(value) for key, value in view.items()}
