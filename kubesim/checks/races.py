"""Race oracles: what reads from a store must look like, checked after the fact.

The oracles are pure: a scenario records what happened (objects handed to readers, whole-cache
reads, the server's commits) and the oracle returns :class:`RaceViolation` s with the numbers,
or nothing. Exceptions in store threads ("dictionary changed size during iteration" and
friends) are reported by the scheduler itself.

Objects may be plain dicts (the wire's JSON), the official client's model objects (what typed
``list_*`` calls return; compared under their JSON field names, timestamps as the server
writes them) or a store's own records (dataclasses, mapping proxies). Every message names
objects by namespace/name/resourceVersion, or by type and position, never by address: a
failure enters the trace, and the same run must give the same trace.

- **isolation** (:class:`IsolationMonitor`): nothing reachable from an object the store handed
  out may change afterwards while it is shared, checked from both sides: the store mutating
  what it handed out, and a consumer mutating what the store (or another reader) holds.
  client-go's contract, "you must not modify anything returned by Get or List", made
  checkable, for every nested map and list, not only the top-level object (a shallow copy that
  shares the cached ``labels`` map is not a copy). Private copies may be changed by their
  holder: a container counts as shared when it was handed out more than once or is still
  reachable from what the store holds.
- **no torn reads** (:func:`check_reads_match_server`): every object a read returns equals some
  version of that object the server emitted (same uid and resourceVersion, same content).
  :class:`ServerVersions` records every version from the moment it is attached, so a
  compaction does not make a correct store look torn.
- **snapshot reads** (:func:`check_snapshot_reads`): a read of the whole cache equals the
  server's state at ONE resourceVersion. A read that mixes versions from before and after a
  relist is torn even when each object in it was once true.
- **snapshot consistency** (:func:`check_snapshot_consistency`): a read of the whole cache never
  misses an object that was in the store both before and after the read (a relist that clears
  and refills in place fails this).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesim.apiserver.server import APIServer
from kubesim.apiserver.storage import DELETED, Event, Key
from kubesim.checks._objects import (
    ABSENT,
    Path,
    chain,
    decode,
    describe,
    diff,
    encode,
    fingerprint,
    is_model,
    render_diff,
    render_path,
    resource_version_of,
    to_wire,
    uid_of,
)
from kubesim.checks._objects import containers as _containers

__all__ = [
    "IsolationMonitor",
    "RaceViolation",
    "ServerVersions",
    "SnapshotRead",
    "check_reads_match_server",
    "check_snapshot_consistency",
    "check_snapshot_reads",
    "fingerprint",
]

Identity = tuple[str, str]  # (uid, resourceVersion)


@dataclass(frozen=True)
class RaceViolation:
    """One broken race property, with what is needed to find it again."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


HandOut = tuple[str, int, int]  # (reader, step, serial number of the handed_out call)


def _steps(handouts: Sequence[HandOut]) -> str:
    shown = [f"step {step} to {reader!r}" for reader, step, _ in handouts[:4]]
    if len(handouts) > 4:
        shown.append(f"{len(handouts) - 4} more")
    return ", ".join(shown)


# -- isolation ---------------------------------------------------------------------------


class _Handout:
    """One object handed out, as it was encoded (canonical JSON) at its last hand-out."""

    __slots__ = ("encoded", "handouts", "obj", "owner")

    def __init__(self, obj: Any, encoded: bytes, owner: str, handout: HandOut) -> None:
        self.obj = obj  # kept alive, so its id() names it while it is tracked
        self.encoded = encoded
        self.owner = owner
        self.handouts = [handout]


Sharing = Callable[[int], tuple[str, list[HandOut]] | None]
"""For a container's id: why it is shared and its hand-outs, or None if it is private."""


def _always(why: tuple[str, list[HandOut]]) -> Sharing:
    return lambda _key: why


class IsolationMonitor:
    """Records objects handed out by a store; :meth:`verify` reports shared ones that changed.

    Call :meth:`handed_out` right after the store returns objects to a reader, and
    :meth:`verify` when the reader is done with them (and at the end of the run). Both should
    run without scheduling points (``scheduler.atomic()``), as harness code.

    A hand-out costs one canonical JSON encoding per object (C speed, kept as bytes, no
    copy). :meth:`verify` re-encodes; only when an object changed does it walk what the store
    holds and what was handed out, to find which of the containers on the changed path (the
    object, ``.metadata``, ``.metadata.labels``...) is shared: reachable from what the store
    holds now (``held_by_store``), or from objects handed out more than once in all. A change
    in a private copy is its holder's business; a change in a shared container is reported
    once per container, at the deepest shared one, with the fields that changed.
    """

    def __init__(self, *, held_by_store: Callable[[], Iterable[Any]] | None = None) -> None:
        self._handouts: dict[int, _Handout] = {}
        self._held_by_store = held_by_store
        self.violations: list[RaceViolation] = []
        self._reported: set[int] = set()
        self._calls = 0

    def handed_out(self, objects: Iterable[Any], *, reader: str, step: int = 0) -> None:
        self._calls += 1
        this = (reader, step, self._calls)
        for index, obj in enumerate(objects):
            encoded = encode(obj)
            known = self._handouts.get(id(obj))
            if known is None:
                owner = describe(obj, position=f"item {index} handed to {reader!r} at step {step}")
                self._handouts[id(obj)] = _Handout(obj, encoded, owner, this)
                continue
            if encoded != known.encoded:
                # Handed out before, so every container in it is shared from now on.
                self._report(
                    known,
                    encoded,
                    _always(("handed out again", [*known.handouts, this])),
                    f"changed between two hand-outs (to {known.handouts[-1][0]!r} and "
                    f"{reader!r} at step {step})",
                )
            known.handouts.append(this)
            known.encoded = encoded

    def verify(self, *, step: int | None = None) -> list[RaceViolation]:
        """Report every shared container that changed since it was last handed out."""
        changed = []
        for handout in self._handouts.values():
            encoded = encode(handout.obj)
            if encoded != handout.encoded:
                changed.append((handout, encoded))
        if changed:
            shared = self._sharing()
            seen_at = f" (seen at step {step})" if step is not None else ""
            for handout, encoded in changed:
                self._report(
                    handout,
                    encoded,
                    shared,
                    f"changed after it was handed to {handout.handouts[-1][0]!r} while shared "
                    f"(<who>){seen_at}",
                )
        return list(self.violations)

    def _sharing(self) -> Sharing:
        held: set[int] = set()
        if self._held_by_store is not None:
            for _ in _containers(list(self._held_by_store()), held):
                pass  # the walk fills ``held`` with every container the store can reach
        reach: dict[int, set[HandOut]] = {}
        for handout in self._handouts.values():
            for _, container in _containers(handout.obj):
                reach.setdefault(id(container), set()).update(handout.handouts)

        def shared(key: int) -> tuple[str, list[HandOut]] | None:
            # Counted per handed_out call: two objects of one hand-out may share a map (a
            # deep copy of a whole list keeps such aliasing) and still be one reader's own.
            handouts = sorted(reach.get(key, ()), key=lambda h: (h[1], h[2]))
            if key in held:
                return "still held by the store", handouts
            if len(handouts) > 1:
                return f"handed out {len(handouts)} times", handouts
            return None

        return shared

    def _report(self, handout: _Handout, now: bytes, shared: Sharing, what: str) -> None:
        """One violation per shared container on the paths of the changes."""
        sites: dict[int, tuple[Path, str, list[HandOut], list[Any]]] = {}
        for change in diff(decode(handout.encoded), decode(now)):
            site = None
            for prefix, container in chain(handout.obj, change[0][:-1]):
                why = shared(id(container))
                if why is not None:
                    site = (id(container), prefix, why)
            if site is None:
                continue  # a private copy, changed by its holder
            key, prefix, (who, handouts) = site
            sites.setdefault(key, (prefix, who, handouts, []))[3].append(change)
        for key, (prefix, who, handouts, changes) in sites.items():
            if key in self._reported:
                continue
            self._reported.add(key)
            where = handout.owner + (f" {render_path(prefix)}" if prefix else "")
            self.violations.append(
                RaceViolation(
                    "isolation",
                    f"{where} {what.replace('(<who>)', f'({who})')}: {render_diff(changes)}; "
                    f"handed out at {_steps(handouts)}",
                )
            )


# -- what the server emitted -------------------------------------------------------------


def _plain(obj: Any) -> Any:
    """An object's content as the torn-read check compares it: without kind/apiVersion."""
    if isinstance(obj, Mapping):
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    if is_model(obj):
        wire = to_wire(obj).value
        return {k: v for k, v in wire.items() if k not in ("kind", "apiVersion")}
    return obj


class ServerVersions:
    """Every version of every object the server emitted, from the moment this is attached.

    At attach it takes what the server stores and what its history still holds; from then on
    it records each commit through :attr:`APIServer.commit_listeners`, so a later
    ``compact()`` (which clears the history) forgets nothing here. Stored objects are
    immutable (the storage contract), so keeping them costs references, not copies.
    :meth:`close` detaches it.
    """

    def __init__(self, server: APIServer, *, transform: Callable[[Any], Any] | None = None) -> None:
        self._server = server
        self._transform = transform
        self._objects: dict[Identity, Any] = {}
        self._prints: dict[Identity, str] = {}
        self._rvs: dict[str, list[str]] = {}
        self._plurals: dict[str, str] = {}  # uid -> the resource it is an object of
        self.events: list[Event] = []  # every write the server's history held or made since
        with server.lock:
            storage = server.storage
            self.attached_rv = storage.rv
            self.events.extend(storage.history)
            self._base: dict[str, dict[Key, Any]] = {}  # plural -> key -> stored object
            for event in storage.history:
                self._remember(event.new.obj, event.resource.plural)
            for resource in server.resources:
                state = self._base.setdefault(resource.plural, {})
                for key, stored in storage.items(resource):
                    self._remember(stored.obj, resource.plural)
                    state[key] = stored
            server.commit_listeners.append(self._on_commit)

    def close(self) -> None:
        """Stop recording the server's commits."""
        with self._server.lock:
            if self._on_commit in self._server.commit_listeners:
                self._server.commit_listeners.remove(self._on_commit)

    def _on_commit(self, event: Event) -> None:
        self.events.append(event)
        self._remember(event.new.obj, event.resource.plural)

    def _remember(self, obj: Any, plural: str) -> None:
        meta = obj["metadata"]
        identity = (meta["uid"], meta["resourceVersion"])
        self._plurals[identity[0]] = plural
        if identity not in self._objects:
            self._objects[identity] = obj
            self._rvs.setdefault(identity[0], []).append(identity[1])

    def base_objects(self, plurals: Collection[str], *, upto: int | None = None) -> list[Any]:
        """The objects of ``plurals`` stored at attach that no recorded event wrote (those the
        events do not explain); ``upto``: that none of the first ``upto`` events wrote."""
        written = {event.new.obj["metadata"]["uid"] for event in self.events[:upto]}
        return [
            stored.obj
            for plural in sorted(plurals)
            for stored in self._base.get(plural, {}).values()
            if stored.obj["metadata"]["uid"] not in written
        ]

    def content(self, uid: str, rv: str) -> Any:
        """What the server emitted for ``uid`` at ``rv`` (without kind/apiVersion), or None."""
        obj = self._objects.get((uid, rv))
        if obj is None:
            return None
        plain = _plain(obj)
        return self._transform(plain) if self._transform else plain

    def lookup(self, uid: str, rv: str) -> str | None:
        """The fingerprint of :meth:`content`, or None if the server never emitted it."""
        identity = (uid, rv)
        cached = self._prints.get(identity)
        if cached is None and identity in self._objects:
            cached = self._prints[identity] = fingerprint(self.content(uid, rv))
        return cached

    def resource_of(self, uid: str) -> str | None:
        """The resource (plural) ``uid`` is an object of, or None if the server never had it."""
        return self._plurals.get(uid)

    def resource_versions(self, uid: str) -> list[str]:
        """Every resourceVersion the server emitted for ``uid``, oldest first."""
        return list(self._rvs.get(uid, ()))

    def name_of(self, uid: str) -> str:
        rvs = self._rvs.get(uid)
        if not rvs:
            return f"uid {uid}"
        meta = self._objects[(uid, rvs[0])]["metadata"]
        return f"{meta.get('namespace', '')}/{meta.get('name', '?')}"

    def states(
        self,
        resource: str,
        *,
        namespace: str | None = None,
        scope: Callable[[Any], bool] | None = None,
    ) -> Iterator[tuple[int, Key, Identity | None, Identity | None]]:
        """The resource's history as ``(rv, key, before, after)`` transitions, oldest first.

        Starts from the state at the oldest RV known (the history's start at attach); use
        :meth:`state_at_start` for that state. ``scope`` (a predicate on a stored object, such
        as a watch's ``matches``) narrows the state to what a store watching that scope holds:
        an object that stops matching (its label changed) leaves it, one that starts matching
        enters it.
        """
        for event in self.events:
            if event.resource.plural != resource:
                continue
            if namespace is not None and event.key[0] != namespace:
                continue
            old_in = event.old is not None and (scope is None or scope(event.old))
            new_in = event.type != DELETED and (scope is None or scope(event.new))
            if not old_in and not new_in:
                continue
            before = _identity(event.old.obj) if old_in and event.old is not None else None
            after = _identity(event.new.obj) if new_in else None
            yield event.rv, event.key, before, after

    def state_at_start(
        self,
        resource: str,
        *,
        namespace: str | None = None,
        scope: Callable[[Any], bool] | None = None,
    ) -> tuple[int, dict[Key, Identity]]:
        """``(rv, {key: (uid, rv)})``: the resource before the first of :attr:`events`."""
        state = {
            k: _identity(stored.obj)
            for k, stored in self._base.get(resource, {}).items()
            if (namespace is None or k[0] == namespace) and (scope is None or scope(stored))
        }
        start = self.attached_rv
        for event in reversed([e for e in self.events if e.rv <= self.attached_rv]):
            start = event.rv - 1
            if event.resource.plural != resource:
                continue
            if namespace is not None and event.key[0] != namespace:
                continue
            if event.old is None or (scope is not None and not scope(event.old)):
                state.pop(event.key, None)  # undo a create (or an entry into the scope)
            else:
                state[event.key] = _identity(event.old.obj)
        return start, state


def _identity(obj: Any) -> Identity:
    meta = obj["metadata"]
    return (meta["uid"], meta["resourceVersion"])


# -- torn reads --------------------------------------------------------------------------


def _unpack(read: Sequence[Any]) -> tuple[str, Any, int | None]:
    if len(read) == 3:
        return read[0], read[1], read[2]
    return read[0], read[1], None


def check_reads_match_server(
    reads: Iterable[Sequence[Any]],
    versions: ServerVersions,
    *,
    uid_of: Callable[[Any], Any] = uid_of,
    rv_of: Callable[[Any], Any] = resource_version_of,
    content_of: Callable[[Any], Any] | None = None,
) -> list[RaceViolation]:
    """Each ``(reader, object)`` or ``(reader, object, step)`` must equal the version the
    server emitted with the object's uid and resourceVersion.

    Objects may be dicts or official-client model objects; a model is compared under its JSON
    field names, and fields its class does not know (or that the server sent as null) are not
    a difference. Raises ValueError for a read without a uid or resourceVersion.
    """
    violations = []
    for index, read in enumerate(reads):
        reader, obj, step = _unpack(read)
        at = f" at step {step}" if step is not None else ""
        uid, rv = uid_of(obj), rv_of(obj)
        if uid is None or rv is None:
            raise ValueError(
                f"reads[{index}] (by {reader!r}) is {describe(obj, position=f'reads[{index}]')} "
                "with no metadata.uid or metadata.resourceVersion: check_reads_match_server "
                "compares Kubernetes objects (pass uid_of= and rv_of= for other records)"
            )
        uid, rv = str(uid), str(rv)
        expected = versions.lookup(uid, rv)
        if expected is None:
            emitted = versions.resource_versions(uid)
            known = (
                f"it emitted resourceVersion(s) {', '.join(emitted[-5:])} for that uid"
                if emitted
                else "it never emitted that uid at all"
            )
            violations.append(
                RaceViolation(
                    "torn-read",
                    f"{reader!r} read {describe(obj)}{at}: the server never emitted uid {uid} "
                    f"at resourceVersion {rv}; {known}",
                )
            )
            continue
        if content_of is None and is_model(obj):
            wire = to_wire(obj)  # keeps which fields each model class declares
            wire.value = _plain(wire.value)
            if fingerprint(wire.value) == expected:
                continue
        else:
            content = content_of(obj) if content_of else _plain(obj)
            if fingerprint(content) == expected:
                continue
            wire = to_wire(content)
        changes = [
            change
            for change in diff(versions.content(uid, rv), wire.value, declared=wire.declared)
            if not _projected(change)
        ]
        if changes:
            violations.append(
                RaceViolation(
                    "torn-read",
                    f"{reader!r} read {describe(obj)}{at} with {len(changes)} field(s) unlike "
                    f"what the server emitted at that resourceVersion (mutated in the cache, "
                    f"or torn), server -> read: {render_diff(changes)}",
                )
            )
    return violations


def _projected(change: tuple[Path, Any, Any]) -> bool:
    """A field the read lacks: a store's own projection may leave out what it does not keep
    (the spec, the status, whole maps). A key missing from a label or annotation map the read
    does carry is no projection: a consumer deleted it (OpenCost's label whitelist)."""
    path, _, new = change
    if new is not ABSENT:
        return False
    in_a_map = len(path) >= 3 and path[0] == "metadata" and path[1] in ("labels", "annotations")
    return not in_a_map


# -- whole-cache reads -------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotRead:
    """One read of the whole cache: what ``reader`` got, and optionally the server's RV
    before the read began (``not_before``) and after it ended (``not_after``): the read must
    equal the server's state at one RV, inside those bounds when given.

    ``listed`` is False when the store had handed out nothing yet since it (re)started (no read,
    no view at a quiescent point held an object: a restart whose first list failed, or whose
    list is not applied yet): an empty read is then a cache not synced yet, as an informer's
    lister is empty before ``HasSynced``, not a torn read, and passes."""

    reader: str
    objects: Sequence[Any]
    step: int | None = None
    not_before: int | None = None
    not_after: int | None = None
    listed: bool = True
    # The namespaces whose objects the store had shown (read, or held in its view) since it
    # (re)started, for reads judged per namespace: an empty part of a namespace not shown yet is
    # a reflector not synced yet, not torn (None: judge by ``listed``).
    listed_namespaces: frozenset[str | None] | None = None
    # False while the store instance has not yet held the server's whole state (its view at a
    # quiescent point) since it (re)started: a cache filled one object at a time from its first
    # list (an informer's indexer before HasSynced, a kopf index before it is pre-populated)
    # may hand out part of a state then, never a mix of states: judged as a part of one.
    synced: bool = True


def check_snapshot_reads(
    reads: Iterable[SnapshotRead | tuple[str, Sequence[Any]]],
    versions: ServerVersions,
    *,
    resource: str = "pods",
    namespace: str | None = None,
    scope: Callable[[Any], bool] | None = None,
    subset: bool = False,
) -> list[RaceViolation]:
    """Each whole-cache read must be the server's state of ``resource`` at ONE resourceVersion.

    ``subset``: the store's reads are filtered (an index that serves only pods with an IP, a
    table of running pods): each read must then be a part of one state, every object it holds
    at that state's version, and a read that lacks objects is not torn for that alone.

    The read's (uid, resourceVersion) set is compared with the server's state after every
    commit :class:`ServerVersions` recorded (an incremental count, O(state + commits) per
    read). ``namespace`` and ``scope`` (a predicate on a stored object: what the store
    watches, by namespace, labels and fields) narrow the server's state to what the store is
    meant to hold. On failure the message gives the closest state and how the read differs.
    """
    start_rv, start = versions.state_at_start(resource, namespace=namespace, scope=scope)
    transitions = list(versions.states(resource, namespace=namespace, scope=scope))
    violations = []
    for index, raw in enumerate(reads):
        read = raw if isinstance(raw, SnapshotRead) else SnapshotRead(raw[0], list(raw[1]))
        wanted: dict[Identity, int] = {}
        for position, obj in enumerate(read.objects):
            uid, rv = uid_of(obj), resource_version_of(obj)
            if uid is None or rv is None:
                raise ValueError(
                    f"reads[{index}].objects[{position}] (by {read.reader!r}) has no "
                    "metadata.uid or metadata.resourceVersion"
                )
            identity = (str(uid), str(rv))
            wanted[identity] = wanted.get(identity, 0) + 1
        if not wanted and not read.listed:
            continue  # nothing yet, before the first list: not synced, not torn
        part = subset or not read.synced
        best = _best_state(wanted, start_rv, start, transitions, read, subset=part)
        if best is None:
            continue
        if best[0] < 0:
            raise ValueError(
                f"reads[{index}] (by {read.reader!r}) ended by rv {read.not_after}, before the "
                f"oldest state ServerVersions knows (rv {start_rv}): attach it earlier"
            )
        violations.append(_snapshot_violation(read, wanted, best, versions, start, transitions))
    return violations


def _best_state(
    wanted: dict[Identity, int],
    start_rv: int,
    start: dict[Key, Identity],
    transitions: list[tuple[int, Key, Identity | None, Identity | None]],
    read: SnapshotRead,
    *,
    subset: bool = False,
) -> tuple[int, int] | None:
    """None if some state inside the read's bounds equals the read (holds it, with
    ``subset``); else (mismatch, rv) of the closest state inside the bounds, or (-1, -1) if no
    known state is inside them."""
    lo = read.not_before if read.not_before is not None else start_rv
    hi = read.not_after
    duplicates = sum(n - 1 for n in wanted.values())
    size = len(start)
    matched = sum(1 for identity in start.values() if identity in wanted)
    best: tuple[int, int, int] | None = None  # (mismatch, -matched, rv): fewest differences

    def consider(rv: int) -> bool:
        nonlocal best
        mismatch = (len(wanted) - matched) + duplicates + (0 if subset else size - matched)
        if best is None or (mismatch, -matched) < best[:2]:
            best = (mismatch, -matched, rv)
        return mismatch == 0

    rv = start_rv
    for next_rv, _key, before, after in transitions:
        if hi is not None and rv > hi:
            break
        if next_rv > lo and consider(max(rv, lo)):
            return None
        if before is not None:
            size -= 1
            matched -= before in wanted
        if after is not None:
            size += 1
            matched += after in wanted
        rv = next_rv
    if (hi is None or rv <= hi) and consider(max(rv, lo)):
        return None
    return (-1, -1) if best is None else (best[0], best[2])


def _snapshot_violation(
    read: SnapshotRead,
    wanted: dict[Identity, int],
    best: tuple[int, int],
    versions: ServerVersions,
    start: dict[Key, Identity],
    transitions: list[tuple[int, Key, Identity | None, Identity | None]],
) -> RaceViolation:
    mismatch, best_rv = best
    state = dict(start)
    for commit_rv, key, _before, after in transitions:
        if commit_rv > best_rv:
            break
        if after is None:
            state.pop(key, None)
        else:
            state[key] = after
    at_rv = {identity[0]: identity[1] for identity in state.values()}
    lines = []
    for uid, read_rv in sorted(wanted, key=lambda ident: (versions.name_of(ident[0]), ident)):
        count = wanted[(uid, read_rv)]
        if at_rv.get(uid) == read_rv and count == 1:
            continue
        name = versions.name_of(uid)
        if count > 1:
            lines.append(f"{name} (rv {read_rv}) read {count} times")
        elif uid in at_rv:
            lines.append(f"{name} at rv {read_rv}, but rv {at_rv[uid]} then")
        else:
            lines.append(f"{name} at rv {read_rv}, absent then")
    read_uids = {uid for uid, _ in wanted}
    for key, (uid, state_rv) in sorted(state.items()):
        if uid not in read_uids:
            lines.append(f"missing {key[0]}/{key[1]} (rv {state_rv})")
    shown = "; ".join(lines[:5]) + (f"; and {len(lines) - 5} more" if len(lines) > 5 else "")
    at = f" at step {read.step}" if read.step is not None else ""
    bounds = ""
    if read.not_before is not None or read.not_after is not None:
        bounds = f" between rv {read.not_before} and {read.not_after}"
    return RaceViolation(
        "snapshot-read",
        f"{read.reader!r} read {sum(wanted.values())} object(s){at} that were never the "
        f"server's state at one resourceVersion{bounds} (a relist torn under the reader?); "
        f"closest is rv {best_rv} ({len(state)} object(s), {mismatch} difference(s)): {shown}",
    )


def check_snapshot_consistency(
    read_keys: Iterable[str], before: Iterable[str], after: Iterable[str], *, reader: str = "reader"
) -> RaceViolation | None:
    """A whole-cache read must contain every key present both before and after it."""
    missing = (set(before) & set(after)) - set(read_keys)
    if not missing:
        return None
    sample = sorted(missing)[:5]
    return RaceViolation(
        "snapshot",
        f"{reader!r} read the whole cache and missed {len(missing)} object(s) that were in the "
        f"store before and after the read, e.g. {sample}",
    )
