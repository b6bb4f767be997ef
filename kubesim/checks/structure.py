"""What a store holds, as plain data: its containers by path, each entry with its tokens.

:func:`snapshot` walks a store from its object (never its module's globals, which a fresh
instance shares) the way the retained-memory walk names paths (``store.by_ip['10.1.0.7']``,
``store.index.indices['app']``), and records every mapping and collection it meets within
:data:`MAX_DEPTH` steps: for a mapping, its keys; for a list, tuple, set or deque, its elements.
Each entry is reduced to its *tokens* (:mod:`kubesim.checks.provenance`): the strings it
contains and the ``(uid, resourceVersion)`` of every whole object in it. Numbers are left out
on purpose: two stores that hold the same things differ in counters, timestamps and
resourceVersion strings, and none of those is state a fresh store should have.

The history oracle compares the snapshot of the long-running store with that of a fresh one
path by path (:func:`diff_snapshots`).

The walk does not enter what is not the store's own state: kubesim's harness, the Kubernetes
clients' plumbing (an ``ApiClient``, its configuration, REST and API objects), threads, locks,
event loops, functions, modules and classes. A ``deque`` with a ``maxlen`` is bounded by
construction (a ring of recent events): its entries are not compared.
"""

from __future__ import annotations

import asyncio
import types
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.checks._objects import is_model
from kubesim.checks.provenance import Token
from kubesim.checks.retained import HARNESS_PACKAGES

MAX_DEPTH = 6
# Tokens collected from one entry at most (a huge value still names its objects first).
MAX_TOKENS = 256
_TOKEN_DEPTH = 5

# Types whose module starts with one of these are client plumbing, not a store's state.
_PLUMBING_MODULES = (
    "kubernetes.client.api_client",
    "kubernetes.client.configuration",
    "kubernetes.client.rest",
    "kubernetes.client.api.",
    "kubernetes_asyncio.client.api_client",
    "kubernetes_asyncio.client.configuration",
    "kubernetes_asyncio.client.rest",
    "kubernetes_asyncio.client.api.",
    "urllib3.",
    "aiohttp.",
    "threading",
    "_thread",
    "queue",
    "concurrent.",
    "logging",
    "kubesim.sched",
    "multiprocessing.",
    "socket",
    "ssl",
    "selectors",
)
_OPAQUE: tuple[type, ...] = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    asyncio.AbstractEventLoop,
    asyncio.Future,
    asyncio.Handle,
)
_ATOMS = (str, bytes, int, float, bool, complex, type(None))


@dataclass
class Node:
    """One container at one path: ``kind`` is "mapping" or "collection"; ``entries`` maps an
    entry's identity (a mapping's key, or a collection element's tokens) to its record."""

    kind: str
    entries: dict[Any, Entry] = field(default_factory=dict)
    # Keys whose values are walked as paths of their own (compared there, not here).
    walked: set[Any] = field(default_factory=set)


@dataclass
class Entry:
    text: str  # how the entry reads in a report
    tokens: frozenset[Token]  # everything it refers to (key and value for a mapping)
    value_tokens: frozenset[Token] = frozenset()  # a mapping entry's value alone
    value_text: str = ""
    count: int = 1


Snapshot = dict[str, Node]


def _opaque(value: Any) -> bool:
    kind = type(value)
    if isinstance(value, _OPAQUE):
        return True
    module = getattr(kind, "__module__", "") or ""
    return module.startswith(HARNESS_PACKAGES) or module.startswith(_PLUMBING_MODULES)


def is_object(value: Any) -> bool:
    """A Kubernetes object: a dict with ``metadata.uid``, or a client model with one."""
    if isinstance(value, Mapping):
        try:
            meta = value.get("metadata")
        except TypeError:  # a Mapping whose get() is its own: ConfigParser.get(section, option)
            return False
        return isinstance(meta, Mapping) and bool(meta.get("uid"))
    if is_model(value):
        meta = getattr(value, "metadata", None)
        return meta is not None and bool(getattr(meta, "uid", None))
    return False


def _object_identity(value: Any) -> tuple[str, str, str]:
    """(namespace/name, uid, resourceVersion) of a Kubernetes object."""
    if isinstance(value, Mapping):
        meta = value["metadata"]
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        uid, rv = meta.get("uid"), meta.get("resourceVersion")
    else:
        meta = value.metadata
        namespace, name = meta.namespace or "", meta.name or ""
        uid, rv = meta.uid, meta.resource_version
    key = f"{namespace}/{name}" if namespace else str(name)
    return key, str(uid), str(rv or "")


def tokens(value: Any) -> frozenset[Token]:
    """The tokens ``value`` refers to: its strings (a ``ns/name`` also as its parts) and the
    ``(uid, resourceVersion)`` of every object in it, to a bounded depth."""
    out: set[Token] = set()
    seen: set[int] = set()

    def visit(item: Any, depth: int) -> None:
        if len(out) >= MAX_TOKENS:
            return
        if isinstance(item, str):
            if item and len(item) <= 128:
                out.add(item)
                if "/" in item:
                    out.update(part for part in item.split("/") if part)
            return
        if isinstance(item, _ATOMS) or depth < 0:
            return
        if id(item) in seen:
            return
        seen.add(id(item))
        if is_object(item):
            key, uid, rv = _object_identity(item)
            out.update((key, uid, (uid, rv)))
            return
        if isinstance(item, Mapping):
            for k, v in list(item.items()):
                visit(k, depth - 1)
                visit(v, depth - 1)
            return
        if isinstance(item, list | tuple | set | frozenset | deque):
            for element in list(item):
                visit(element, depth - 1)
            return
        if _opaque(item):
            return
        for _, attribute in _attributes(item):
            visit(attribute, depth - 1)

    visit(value, _TOKEN_DEPTH)
    return frozenset(out)


def summary(value: Any, *, limit: int = 60, depth: int = 3) -> str:
    """A short, deterministic description of a value for a report.

    ``depth``: how many levels of containers and attributes it looks into (an object graph
    may be cyclic: a client that holds its discovery cache that holds the client)."""
    if is_object(value):
        key, _, rv = _object_identity(value)
        return f"{key} (rv {rv})" if rv else key
    if isinstance(value, _ATOMS):
        text = repr(value)
    elif depth <= 0:
        text = f"{type(value).__name__}(...)"
    elif isinstance(value, Mapping):
        items = list(value.items())
        text = "{" + ", ".join(
            f"{summary(k, limit=20, depth=depth - 1)}: {summary(v, limit=24, depth=depth - 1)}"
            for k, v in items[:3]
        )
        text += ", ...}" if len(items) > 3 else "}"
    elif isinstance(value, list | tuple):
        inner = ", ".join(summary(v, limit=30, depth=depth - 1) for v in value[:3])
        more = ", ..." if len(value) > 3 else ""
        text = f"({inner}{more})" if isinstance(value, tuple) else f"[{inner}{more}]"
    elif isinstance(value, set | frozenset):
        shown = sorted(summary(v, limit=30, depth=depth - 1) for v in value)
        text = "{" + ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "") + "}"
        if not shown:
            text = "set()"
    else:
        fields = [
            f"{n}={summary(v, limit=20, depth=depth - 1)}" for n, v in list(_attributes(value))[:3]
        ]
        text = f"{type(value).__name__}({', '.join(fields)})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _attributes(value: Any) -> Iterator[tuple[str, Any]]:
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        attributes = None
    if isinstance(attributes, dict):
        yield from list(attributes.items())
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__")
        if slots is None:
            continue
        for name in (slots,) if isinstance(slots, str) else slots:
            descriptor = cls.__dict__.get(name)
            if isinstance(descriptor, types.MemberDescriptorType):
                try:
                    yield name, descriptor.__get__(value, cls)
                except AttributeError:
                    continue


def _label(key: Any) -> str:
    text = repr(key) if isinstance(key, (*_ATOMS, tuple)) else summary(key, limit=40)
    return f"[{text}]" if len(text) <= 60 else f"[{text[:57]}...]"


def snapshot(
    root: Any,
    *,
    name: str = "store",
    skip: frozenset[str] = frozenset(),
    max_depth: int = MAX_DEPTH,
) -> Snapshot:
    """The containers reachable from ``root`` within ``max_depth`` steps, by path.

    ``skip``: paths (``store.recent``) not to record nor enter: what the store declares to
    depend on history by design.
    """
    out: Snapshot = {}
    seen: set[int] = set()

    def walk(value: Any, path: str, depth: int) -> None:
        if path in skip or depth > max_depth or isinstance(value, _ATOMS) or is_object(value):
            return
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, deque) and value.maxlen is not None:
            return  # bounded by construction: a ring of recent history
        if isinstance(value, Mapping):
            node = out[path] = Node("mapping")
            for key, item in list(value.items()):
                ident = key if isinstance(key, (*_ATOMS, tuple)) else summary(key)
                key_tokens = tokens(key)
                item_tokens = tokens(item)
                node.entries[ident] = Entry(
                    text=_label(key),
                    tokens=key_tokens | item_tokens,
                    value_tokens=item_tokens,
                    value_text=summary(item),
                )
                if _walkable(item):
                    node.walked.add(ident)
                    walk(item, path + _label(key), depth + 1)
            return
        if isinstance(value, list | tuple | set | frozenset | deque):
            node = out[path] = Node("collection")
            places: Counter[str] = Counter()
            for position, element in enumerate(list(value)):
                if isinstance(value, list | tuple) and _is_structure(element):
                    # A component of the store (a listener, a per-namespace reflector) or a
                    # record with maps of its own: its containers are compared, under its
                    # name when it has one (a list's order is history: the order events came
                    # in, not the order a fresh list returns), else at its position.
                    place = _record_name(element)
                    if place is None:
                        place = str(position)
                    else:
                        places[place] += 1
                        if places[place] > 1:
                            place = f"{place}#{places[place]}"
                        place = repr(place)
                    walk(element, f"{path}[{place}]", depth + 1)
                    continue
                element_tokens = tokens(element)
                if not element_tokens:
                    continue  # numbers, None: not provenance
                entry = node.entries.get(element_tokens)
                if entry is None:
                    node.entries[element_tokens] = Entry(summary(element), element_tokens)
                else:
                    entry.count += 1
            return
        if _opaque(value):
            return
        for attribute, item in _attributes(value):
            if _walkable(item):
                walk(item, f"{path}.{attribute}", depth + 1)

    walk(root, name, 0)
    return out


def _record_name(value: Any) -> str | None:
    """``namespace/name`` (or the uid) of a record that names an object by attributes of its
    own (``PodInfo(uid=..., namespace=..., name=...)``), else None."""
    fields = {name: item for name, item in _attributes(value) if isinstance(item, str)}
    name = fields.get("name")
    if name:
        namespace = fields.get("namespace")
        return f"{namespace}/{name}" if namespace else name
    return fields.get("uid") or None


def _is_structure(value: Any) -> bool:
    """An instance that holds containers of its own (a component, not a flat record)."""
    if not _walkable(value) or isinstance(value, Mapping | list | tuple | set | frozenset | deque):
        return False
    return any(
        isinstance(item, Mapping | list | set | deque) or _is_structure_attribute(item)
        for _, item in _attributes(value)
    )


def _is_structure_attribute(item: Any) -> bool:
    return (
        _walkable(item)
        and not isinstance(item, tuple | frozenset)
        and any(isinstance(inner, Mapping | list | set | deque) for _, inner in _attributes(item))
    )


def _walkable(value: Any) -> bool:
    return not (isinstance(value, _ATOMS) or is_object(value) or _opaque(value))


@dataclass(frozen=True)
class Difference:
    """One way the long-running store differs from a fresh one."""

    path: str
    text: str  # the entry, as it reads
    old: frozenset[Token]  # what the long-running store's entry refers to (that fresh lacks)
    fresh: str  # what the fresh store has there ("absent", a summary)
    extra: int = 1  # how many more the long-running store has (collections)
    have: int = 0  # how many the fresh store has (collections)
    missing: bool = False  # the fresh store has it and the long-running one does not


def diff_snapshots(old: Snapshot, fresh: Snapshot) -> list[Difference]:
    """Every entry the old store holds and the fresh one does not, and the reverse, by path.

    Entries are compared by identity (a mapping's key, a collection element's tokens); the
    value of a mapping entry present in both is compared by tokens when it is not walked as a
    path of its own. Which differences matter is the caller's judgement (provenance).
    """
    found: list[Difference] = []
    for path in sorted(old):
        node = old[path]
        other = fresh.get(path)
        if other is None or other.kind != node.kind:
            continue  # the fresh store has no such structure (yet): nothing to compare
        if node.kind == "mapping":
            for ident, entry in node.entries.items():
                twin = other.entries.get(ident)
                if twin is None:
                    found.append(
                        Difference(
                            path, f"{entry.text} = {entry.value_text}", entry.tokens, "absent"
                        )
                    )
                elif ident not in node.walked and entry.value_tokens != twin.value_tokens:
                    found.append(
                        Difference(
                            path,
                            f"{entry.text} = {entry.value_text}",
                            entry.value_tokens - twin.value_tokens,
                            twin.value_text,
                        )
                    )
            for ident, twin in other.entries.items():
                if ident not in node.entries:
                    found.append(Difference(path, twin.text, twin.tokens, "", missing=True))
            continue
        counts_old = Counter({i: e.count for i, e in node.entries.items()})
        counts_fresh = Counter({i: e.count for i, e in other.entries.items()})
        for ident, extra in (counts_old - counts_fresh).items():
            entry = node.entries[ident]
            have = counts_fresh.get(ident, 0)
            found.append(
                Difference(
                    path,
                    entry.text,
                    entry.tokens,
                    f"{entry.text} x{have}" if have else "absent",
                    extra=extra,
                    have=have,
                )
            )
        for ident, short in (counts_fresh - counts_old).items():
            entry = other.entries[ident]
            found.append(Difference(path, entry.text, entry.tokens, "", extra=short, missing=True))
    return found
