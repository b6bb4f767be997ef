"""What a store *retains*: the objects reachable from its roots, measured by walking them.

The boundedness verdict needs "what does the store keep", not "what did its code allocate":
an object the server allocated and the store keeps (a raw watch line) is the store's memory,
and an object the server allocated and keeps itself (a uid, a watcher waiting for its timer) is
not. So :func:`measure_retained` walks the object graph from the store's roots, breadth first,
with ``gc.get_referents`` and exact per-type walks, and sums ``sys.getsizeof`` once per object.

The walk *stops* (does not count, does not enter) at:

- kubesim's harness: instances of classes defined in ``kubesim.apiserver`` (and the
  ``admission``, ``cluster`` and ``wire`` packages around it), ``kubesim.sim``,
  ``kubesim._core``, ``kubesim.transport``, ``kubesim.checks``, ``kubesim.cli`` (the API server
  and everything it owns, the Simulation, the in-process PoolManager and sessions, the clock,
  the trace), and the scheduler itself (``kubesim.sched.scheduler``: its thread
  records, which an adopted thread's ``run`` refers to). ``kubesim.sched`` primitives are
  walked: a store uses them in place of its own locks and queues, so what it puts in them is
  its own.
- an asyncio event loop and its scheduled callbacks (``Handle``, ``TimerHandle``), and tasks
  and coroutines: the machinery an async store runs on, as a thread's stack is for a
  threaded store (frames are not entered either). What the store's futures hold is walked.
- modules, classes, code objects and other modules' globals (a function's closure and
  defaults are walked, its ``__globals__`` is not), the class namespaces a library keeps
  (pydantic's ``validate_call``, :data:`FOREIGN_NAMESPACES`), and the process-wide
  ``logging`` configuration that every client library points at.

A ``set`` is sized as a set built afresh from its items: how big a set's table is depends on
the order its items came and went *and on their hashes* (a slot freed by a removal is reused
or not depending on where the next item's hash probes), and string hashes change from process
to process. Sized as it stands, a set of a few keys that a work queue adds and removes every
round grows its table in one process and not in the next, which a correct store's tail must
never show. (A dict's table depends on the order of insertions and deletions only, and an
instance's ``__dict__`` is sized as a plain dict already.)

The result is deterministic (no allocator, no addresses, no hashes in the figures) and can
*name* what grows: every container met within a few steps of a root is recorded with its path
from the root (``store.endpoints``, ``store.cache['default']``), its type, its item count and
the bytes first reached through it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import types
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Harness packages whose objects are never the store's (see the module docstring).
HARNESS_PACKAGES: tuple[str, ...] = (
    "kubesim.apiserver",
    "kubesim.admission",
    "kubesim.cluster",
    "kubesim.wire",
    "kubesim.sim",
    "kubesim._core",
    "kubesim.transport",
    "kubesim.checks",
    "kubesim.cli",
    "kubesim.sched.scheduler",
    "kubesim.sched.strategies",
    "kubesim.sched.tracing",
)

# How deep (in steps from a root) containers are recorded by path. store.cache[ns][name] is 3.
NAMED_DEPTH = 4

_STOP_TYPES: tuple[type, ...] = (
    type,
    asyncio.AbstractEventLoop,
    asyncio.Handle,
    # A task (and a coroutine) is to an async store what a thread is to a threaded one: what
    # its stack awaits right now (a stream's buffer, a timer) is not what the store keeps.
    asyncio.Task,
    types.CoroutineType,
    types.ModuleType,
    types.CodeType,
    types.FrameType,
    types.BuiltinFunctionType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    logging.Logger,
    logging.Manager,
    logging.Handler,
    logging.PlaceHolder,
)
# Leaves: no references worth following (their size is counted).
_ATOMS: tuple[type, ...] = (str, bytes, bytearray, int, float, complex, bool, type(None))
_CONTAINERS: tuple[type, ...] = (list, tuple, dict, set, frozenset, deque)
_ATOM_SET = frozenset(_ATOMS)


@dataclass(frozen=True)
class Container:
    """One container met near a root: where it is, what it is, how much hangs from it."""

    path: str
    type_name: str
    items: int
    retained_bytes: int  # its own size plus everything first reached through it


@dataclass(frozen=True)
class Retained:
    """One measurement: total bytes and objects retained, and the named containers."""

    retained_bytes: int
    objects: int
    containers: Mapping[str, Container]


# Namespaces a library keeps of code, not data: pydantic's ``validate_call`` (the official
# client's API methods, from kubernetes 37) holds the namespace its class was defined in, and
# through it every method of the class (CoreV1Api: over 400 wrappers, 750 KB). A store that
# keeps a bound API method (``self.list = api.list_namespaced_service``) holds none of that as
# its own, no more than it holds the module's globals, which the walk skips too.
FOREIGN_NAMESPACES: tuple[str, ...] = ("pydantic._internal._namespace_utils",)


def _stops_at(kind: type) -> bool:
    """True for types the walk never enters (see the module docstring)."""
    if issubclass(kind, _STOP_TYPES):
        return True
    module = kind.__module__
    return isinstance(module, str) and module.startswith(HARNESS_PACKAGES + FOREIGN_NAMESPACES)


def _label(key: object) -> str:
    if isinstance(key, str | int | float | bool | type(None)):
        text = repr(key)
        return f"[{text}]" if len(text) <= 60 else f"[{text[:57]}...]"
    if isinstance(key, tuple) and len(key) <= 4 and all(isinstance(k, str | int) for k in key):
        return f"[{key!r}]"
    return "[...]"


def _slot_values(obj: object) -> Iterable[tuple[str, object]]:
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__")
        if slots is None:
            continue
        for name in (slots,) if isinstance(slots, str) else slots:
            descriptor = cls.__dict__.get(name)
            if isinstance(descriptor, types.MemberDescriptorType):
                try:
                    yield name, descriptor.__get__(obj, cls)
                except AttributeError:  # an unset slot
                    continue


# A step's label: a string (``.attr``, ``<item>``), or a dict key in a 1-tuple, whose ``[key]``
# label is made only if the walk queues what the key leads to (most values are leaves).
Label = str | tuple[object]


def _labelled(obj: object) -> Iterable[tuple[Label, object]]:
    """(label, referent) pairs; labels name the step (``.attr``, ``[key]``) where one exists."""
    kind = type(obj)
    if kind is list or kind is tuple:
        # Positions are not names: an element's growth is reported as its list's.
        return (("<item>", item) for item in obj)  # type: ignore[attr-defined]
    if kind is dict:
        return _dict_children(obj)  # type: ignore[arg-type]
    if kind is set or kind is frozenset:
        return (("{}", item) for item in obj)  # type: ignore[attr-defined]
    return _object_children(obj, labelled=True)


def _dict_children(mapping: dict[object, object]) -> Iterable[tuple[Label, object]]:
    for key, value in dict.items(mapping):
        yield "<key>", key
        yield (key,), value


def _object_children(obj: object, *, labelled: bool) -> Iterable[tuple[Label, object]]:
    """Children of anything but the exact builtin containers; the same set either way."""
    if isinstance(obj, types.FunctionType):
        # Closure cells and defaults belong to whoever holds the function; its globals do not.
        for cell in obj.__closure__ or ():
            try:
                yield f".<closure {obj.__name__}>", cell.cell_contents
            except ValueError:  # an empty cell
                continue
        yield "<defaults>", obj.__defaults__
        yield "<kwdefaults>", obj.__kwdefaults__
        return
    if labelled:
        if isinstance(obj, dict):  # dict subclasses (OrderedDict, defaultdict, ...)
            yield from _dict_children(obj)
        elif isinstance(obj, list | tuple | deque):
            yield from (("<item>", item) for item in obj)
    try:
        # Always the dict, never the inline values: the same object is sized the same way
        # whichever route reaches it (CPython 3.11+ keeps attributes inline until asked).
        attributes = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        attributes = None
    if isinstance(attributes, dict):
        yield "<__dict__>", attributes
        if labelled:
            for name, value in dict.items(attributes):
                yield f".{name}", value
    if labelled:
        yield from ((f".{name}", value) for name, value in _slot_values(obj))
    # Whatever else the object references at the C level (slots, a deque's items, a bound
    # method's function and self, an lru_cache's cache): reached unnamed.
    for referent in gc.get_referents(obj):
        yield "<ref>", referent


# The ids of every module's globals, with the dicts themselves (held, so no id is reused while
# it is cached) and the module count they were taken at. Looking them up on every measurement
# was a tenth of a property test's time (thousands of modules, a measurement per round).
_namespaces: tuple[int, list[dict[str, object]], frozenset[int]] = (-1, [], frozenset())


def _module_namespaces() -> frozenset[int]:
    """The ids of the ``__dict__`` of every module in ``sys.modules``, recomputed when the
    number of modules changes (an import during the run)."""
    global _namespaces
    count = len(sys.modules)
    if _namespaces[0] != count:
        held = [
            namespace
            for module in list(sys.modules.values())
            if isinstance(namespace := getattr(module, "__dict__", None), dict)
        ]
        _namespaces = (count, held, frozenset(map(id, held)))
    return _namespaces[2]


# What an object queued by the walk is: named (it owns the bytes of what hangs below it
# unnamed), unnamed, or an instance's ``__dict__`` (unnamed, sized as a plain dict).
_NAMED, _UNNAMED, _INSTANCE_DICT = 0, 1, 2


def measure_retained(
    roots: Mapping[str, object],
    *,
    stop: Iterable[object] = (),
    named_depth: int = NAMED_DEPTH,
) -> Retained:
    """Walk ``roots`` (name -> object) and measure what they retain.

    ``stop`` adds objects the walk must not enter (besides the harness, modules and classes).
    Contract: deterministic for a deterministic program; the only change it makes to what it
    walks is asking instances for their ``__dict__``.

    The walk is breadth first, one level at a time. Two kinds of objects are queued: *named*
    ones (the roots and what a named step reaches within ``named_depth``: the containers a
    report can name, with their paths and parents) and *unnamed* ones, whose bytes go straight
    to their nearest named ancestor (their *owner*). Most of a store is unnamed plain
    containers deep in its cache; a run of them with the same owner is expanded with one
    ``gc.get_referents`` call. Each object is still reached first where a one-at-a-time queue
    would reach it, so every figure is that of the plain breadth-first walk.
    """
    seen: set[int] = {id(obj) for obj in stop}
    # Other modules' globals: walking them would measure the whole process.
    seen.update(_module_namespaces())
    seen_add = seen.add
    stops: dict[type, bool] = dict.fromkeys(_ATOMS, False)  # verdict per type, cached
    # Named objects, in the order they are queued (a parent before its children).
    named: list[object] = []
    parents: list[int] = []
    paths: list[str] = []
    depths: list[int] = []
    sizes: list[int] = []  # own bytes, plus those of the unnamed objects they own
    getsizeof = sys.getsizeof
    get_referents = gc.get_referents
    fast = frozenset((list, tuple, dict, set, frozenset))
    atom_types = _ATOM_SET
    # The level being walked: objects, their owners (an index into ``named``) and what they
    # are: NAMED (the owner itself), UNNAMED, or an instance's __dict__ (unnamed, sized as a
    # plain dict of the same items: CPython shares the keys of instance dicts across a class,
    # and how big the shared table is depends on every instance made before).
    level: list[object] = []
    owners: list[int] = []
    roles: list[int] = []
    for name, root in roots.items():
        if id(root) in seen or _stops_at(type(root)):
            continue
        seen_add(id(root))
        level.append(root)
        owners.append(len(named))
        roles.append(_NAMED)
        named.append(root)
        parents.append(-1)
        paths.append(name)
        depths.append(0)
        sizes.append(0)
    # Leaves (strings, numbers) are most of what a store holds: each is sized where it is
    # first met and its bytes added to the object that reached it, never queued. The figures
    # are the same as queueing them (a leaf's subtree is itself), at a fraction of the cost.
    leaves = 0
    queued = 0
    while level:
        queued += len(level)
        next_level: list[object] = []
        next_owners: list[int] = []
        next_roles: list[int] = []
        count = len(level)
        at = 0
        while at < count:
            obj = level[at]
            owner = owners[at]
            role = roles[at]
            kind = type(obj)
            if role == _UNNAMED and kind in fast:
                # A run of unnamed plain containers of one owner: one C call for all of them.
                end = at + 1
                while (
                    end < count
                    and roles[end] == _UNNAMED
                    and owners[end] == owner
                    and type(level[end]) in fast
                ):
                    end += 1
                batch = level[at:end]
                sizes[owner] += sum(map(getsizeof, batch))
                for kept in batch:
                    if type(kept) is set:  # sized as built afresh (see the module docstring)
                        sizes[owner] += getsizeof(set(kept)) - getsizeof(kept)
                children = [
                    child
                    for child in get_referents(*batch)
                    if (ident := id(child)) not in seen and not seen_add(ident)
                ]
                for child in children:
                    kind = type(child)
                    if kind in atom_types:
                        sizes[owner] += getsizeof(child)
                        leaves += 1
                        continue
                    stop_here = stops.get(kind)
                    if stop_here is None:
                        stop_here = stops[kind] = _stops_at(kind)
                    if not stop_here:
                        next_level.append(child)
                        next_owners.append(owner)
                        next_roles.append(_UNNAMED)
                at = end
                continue
            at += 1
            if role == _INSTANCE_DICT:
                sizes[owner] += getsizeof(dict(obj))  # type: ignore[call-overload]
            else:
                sizes[owner] += getsizeof(set(obj) if kind is set else obj)  # type: ignore[call-overload]
            if kind in atom_types:
                continue  # a root that is a leaf
            path = paths[owner] if role == _NAMED else None
            depth = depths[owner] + 1 if role == _NAMED else 0
            if path is not None and depth <= named_depth:
                steps: Iterable[tuple[Label, object]] = _labelled(obj)
            elif kind in fast:
                steps = (("<ref>", child) for child in get_referents(obj))
            else:
                steps = _object_children(obj, labelled=False)
            for label, child in steps:
                ident = id(child)
                if ident in seen:
                    continue
                seen_add(ident)
                kind = type(child)
                if kind in atom_types:
                    sizes[owner] += getsizeof(child)
                    leaves += 1
                    continue
                stop_here = stops.get(kind)
                if stop_here is None:
                    stop_here = stops[kind] = _stops_at(kind)
                if stop_here:
                    continue
                step = _label(label[0]) if isinstance(label, tuple) else label
                next_level.append(child)
                if path is None or step.startswith("<"):
                    # Unnamed steps (an instance's __dict__, a dict's keys, C-level references)
                    # end the path: what hangs below them is still counted, in the nearest
                    # named one.
                    next_owners.append(owner)
                    next_roles.append(_INSTANCE_DICT if step == "<__dict__>" else _UNNAMED)
                else:
                    next_owners.append(len(named))
                    next_roles.append(_NAMED)
                    named.append(child)
                    parents.append(owner)
                    paths.append(path + step)
                    depths.append(depth)
                    sizes.append(0)
        level, owners, roles = next_level, next_owners, next_roles
    # Bytes first reached through each named object (its subtree in the walk), children first.
    subtree = list(sizes)
    for index in range(len(named) - 1, -1, -1):
        parent = parents[index]
        if parent >= 0:
            subtree[parent] += subtree[index]
    containers: dict[str, Container] = {}
    for index, obj in enumerate(named):
        path = paths[index]
        if isinstance(obj, _CONTAINERS) and path not in containers:
            containers[path] = Container(
                path,
                type(obj).__name__,
                len(obj),  # type: ignore[arg-type]
                subtree[index],
            )
    return Retained(sum(sizes), queued + leaves, containers)


@dataclass(frozen=True)
class Growth:
    """A named container that grew between two measurements."""

    path: str
    type_name: str
    items_before: int
    items_after: int
    bytes_before: int
    bytes_after: int

    @property
    def grown_bytes(self) -> int:
        return self.bytes_after - self.bytes_before

    def __str__(self) -> str:
        return (
            f"{self.path} ({self.type_name}): {self.items_before:,} -> {self.items_after:,} items, "
            f"{self.bytes_before:,} -> {self.bytes_after:,} bytes ({self.grown_bytes:+,})"
        )


def growing_containers(
    before: Mapping[str, Container], after: Mapping[str, Container], *, top: int = 3
) -> list[Growth]:
    """The containers that grew most, deepest first among nested ones.

    A container is left out when one of its own named descendants accounts for most (half or
    more) of its growth: ``store.endpoints`` is the answer, not ``store`` nor its ``__dict__``.
    """
    grown: list[Growth] = []
    for path, now in after.items():
        then = before.get(path)
        if then is None or then.type_name != now.type_name:
            continue
        if now.retained_bytes > then.retained_bytes or now.items > then.items:
            grown.append(
                Growth(
                    path,
                    now.type_name,
                    then.items,
                    now.items,
                    then.retained_bytes,
                    now.retained_bytes,
                )
            )
    kept = [
        g
        for g in grown
        if not any(
            other.path != g.path
            and other.path.startswith(g.path)
            and other.path[len(g.path)] in "[."
            and 2 * other.grown_bytes >= g.grown_bytes > 0
            for other in grown
        )
    ]
    kept.sort(key=lambda g: (-g.grown_bytes, -(g.items_after - g.items_before), g.path))
    return kept[:top]
