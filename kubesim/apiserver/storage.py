"""Versioned object storage with a bounded history window, like etcd behind the watch cache.

Contract:

- Every write gets the next value of one global, strictly increasing resourceVersion (RV).
- Stored objects are immutable once stored: a write stores a new dict. Readers may therefore
  share them, and serialized bytes are cached on the :class:`Stored` record.
- The history keeps the last ``window`` events. A read or watch "at" RV ``r`` is possible iff
  ``r >= compacted_rv``: every event after ``r`` is still in the history.
- :meth:`Storage.snapshot` reconstructs the state of one resource at any RV inside the window by
  undoing later events, without copying the whole store.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.apiserver.encoding import dumps, loads
from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped objects

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


def object_key(resource: ResourceType, namespace: str | None, name: str) -> Key:
    """The storage key of object ``name``: cluster-scoped kinds ignore ``namespace``."""
    return ((namespace or "") if resource.namespaced else "", name)


def key_order(key: Key) -> str:
    """The sort key of etcd order, where keys are ``<prefix>/<namespace>/<name>`` strings.

    Registry keys come from apiserver ``NamespaceKeyFunc`` and etcd ranges are byte-ordered, so
    ``team-a/x`` sorts before ``team/x`` though the tuple ``("team", "x")`` is smaller.
    Cluster-scoped keys have namespace "".
    """
    return f"{key[0]}/{key[1]}"


class Stored:
    """One stored version of an object, with lazily cached encodings.

    A write that keeps nothing but its encoding (:meth:`encoded`, what a create does: the body
    it was given may share nested values with the caller) decodes ``obj`` on first read; one
    built from a private dict encodes it on first use. Either way the two always agree, and
    neither is mutated once stored.
    """

    __slots__ = ("_head", "_item", "_json", "_obj", "rv")

    def __init__(self, obj: JSON, rv: int) -> None:
        self._obj: JSON | None = obj
        self.rv = rv
        self._json: bytes | None = None
        self._item: bytes | None = None
        self._head = 0

    @classmethod
    def encoded(cls, data: bytes, rv: int) -> Stored:
        """A version known only by its encoding; ``obj`` is decoded when first read."""
        stored = cls.__new__(cls)
        stored._obj = None
        stored.rv = rv
        stored._json = data
        stored._item = None
        stored._head = -1  # found when a list first needs it (item_json), not on every write
        return stored

    @property
    def obj(self) -> JSON:
        if self._obj is None:
            assert self._json is not None  # one of the two is always set
            self._obj = loads(self._json)
        return self._obj

    def json(self) -> bytes:
        """The object as it appears in watch events and GET responses (with kind/apiVersion)."""
        if self._json is None:
            self._json = dumps(self._obj)
        return self._json

    def item_json(self, keep_type: bool) -> bytes:
        """The object as a typed list item: built-in kinds drop kind/apiVersion (k8s #63676)."""
        if keep_type:
            return self.json()
        if self._item is None:
            if self._head < 0:
                # Canonical objects start with kind and apiVersion (encoding.canonical_object):
                # the list-item form is the same bytes without them, no decode and re-encode.
                self._head = _type_head_length(self.json())
            if self._head:
                self._item = b"{" + self.json()[self._head :]
            else:
                untyped = {k: v for k, v in self.obj.items() if k not in ("kind", "apiVersion")}
                self._item = dumps(untyped)
        return self._item


def _type_head_length(data: bytes) -> int:
    """The length of a leading ``{"kind":"K","apiVersion":"V",`` in ``data``, else 0.

    Values holding a quote or an escape are refused (answered 0), so the boundaries found are
    the keys' and values' own.
    """
    if not data.startswith(b'{"kind":"'):
        return 0
    end_kind = data.find(b'","apiVersion":"', 9)
    if end_kind < 0 or not _plain(data[9:end_kind]):
        return 0
    start_version = end_kind + 16
    end_version = data.find(b'",', start_version)
    if end_version < 0 or not _plain(data[start_version:end_version]):
        return 0
    return end_version + 2


def _plain(value: bytes) -> bool:
    return b'"' not in value and b"\\" not in value


@dataclass(slots=True)
class Event:
    """One write, as the history and watchers see it.

    For ``DELETED``, ``new`` is the last state stamped with the deletion RV and ``old`` the state
    before the deletion (what selector transitions are computed from).
    """

    rv: int
    type: str
    resource: ResourceType
    key: Key
    new: Stored
    old: Stored | None
    _line: bytes | None = field(default=None, repr=False)

    def line(self) -> bytes:
        """The watch line for this event delivered as-is, cached across watchers."""
        if self._line is None:
            self._line = (
                b'{"type":"' + self.type.encode() + b'","object":' + self.new.json() + b"}\n"
            )
        return self._line


class _Collection:
    """The current objects of one resource, with keys kept sorted (etcd key order)."""

    __slots__ = ("_sorted", "objects")

    def __init__(self) -> None:
        self.objects: dict[Key, Stored] = {}
        self._sorted: list[Key] | None = []

    def put(self, key: Key, stored: Stored) -> None:
        if key not in self.objects:
            self._sorted = None
        self.objects[key] = stored

    def remove(self, key: Key) -> None:
        del self.objects[key]
        self._sorted = None

    def keys(self) -> list[Key]:
        if self._sorted is None:
            self._sorted = sorted(self.objects, key=key_order)
        return self._sorted


class Storage:
    def __init__(self, *, window: int) -> None:
        if window < 1:
            raise ValueError(f"history window must be >= 1 event, got window={window}")
        self.window = window
        self.rv = 0
        self.compacted_rv = 0
        self.history: deque[Event] = deque()
        self._collections: dict[ResourceType, _Collection] = {}

    def _collection(self, resource: ResourceType) -> _Collection:
        collection = self._collections.get(resource)
        if collection is None:
            collection = self._collections[resource] = _Collection()
        return collection

    # -- reads ---------------------------------------------------------------------------
    def get(self, resource: ResourceType, key: Key) -> Stored | None:
        return self._collection(resource).objects.get(key)

    def count(self, resource: ResourceType) -> int:
        return len(self._collection(resource).objects)

    def live_objects(self, resource: ResourceType) -> Mapping[Key, Stored]:
        """The resource's current objects by key: a live view that follows every write, for
        a check that must cost nothing per write (is there any LimitRange at all?). Read it,
        never change it."""
        return self._collection(resource).objects

    def items(
        self, resource: ResourceType, *, namespace: str | None = None, start: Key | None = None
    ) -> Iterator[tuple[Key, Stored]]:
        """Current objects in key order, optionally one namespace, from ``start`` (inclusive)."""
        collection = self._collection(resource)
        keys = collection.keys()
        lo = 0
        if namespace is not None:
            lo = bisect.bisect_left(keys, f"{namespace}/", key=key_order)
        if start is not None:
            lo = max(lo, bisect.bisect_left(keys, key_order(start), key=key_order))
        objects = collection.objects
        for index in range(lo, len(keys)):
            key = keys[index]
            if namespace is not None and key[0] != namespace:
                return
            yield key, objects[key]

    def snapshot(
        self,
        resource: ResourceType,
        rv: int,
        *,
        namespace: str | None = None,
        start: Key | None = None,
    ) -> Iterator[tuple[Key, Stored]]:
        """Objects as they were at ``rv`` (which must be >= ``compacted_rv``), in key order."""
        if rv < self.compacted_rv:
            raise ValueError(f"rv {rv} is older than the history window ({self.compacted_rv})")
        # Undo, newest first, every event after rv: what each touched key looked like at rv.
        overlay: dict[Key, Stored | None] = {}
        for event in reversed(self.history):
            if event.rv <= rv:
                break
            if event.resource is resource:
                overlay[event.key] = event.old
        if not overlay:
            yield from self.items(resource, namespace=namespace, start=start)
            return
        extra = sorted(
            (
                k
                for k in overlay
                if (namespace is None or k[0] == namespace)
                and (start is None or key_order(k) >= key_order(start))
            ),
            key=key_order,
        )
        current = self.items(resource, namespace=namespace, start=start)
        merged = _merge_sorted(current, extra)
        for key, stored in merged:
            value = overlay.get(key, stored) if key in overlay else stored
            if value is not None:
                yield key, value

    # -- writes --------------------------------------------------------------------------
    def next_rv(self) -> int:
        return self.rv + 1

    def write(
        self, resource: ResourceType, key: Key, event_type: str, new: Stored, old: Stored | None
    ) -> Event:
        """Commit a write at ``new.rv`` (which must be ``next_rv()``); append it to the history."""
        if new.rv != self.rv + 1:
            raise AssertionError(f"write at rv {new.rv}, expected {self.rv + 1}")
        self.rv = new.rv
        collection = self._collection(resource)
        if event_type == DELETED:
            collection.remove(key)
        else:
            collection.put(key, new)
        event = Event(new.rv, event_type, resource, key, new, old)
        self.history.append(event)
        while len(self.history) > self.window:
            self.compacted_rv = self.history.popleft().rv
        return event

    def compact(self, *, upto: int | None = None) -> int:
        """Forget history up to ``upto`` (default: all of it, etcd compaction at the current
        revision). Returns the new floor."""
        floor = self.rv if upto is None else min(upto, self.rv)
        while self.history and self.history[0].rv <= floor:
            self.history.popleft()
        self.compacted_rv = max(self.compacted_rv, floor)
        return self.compacted_rv

    def events_after(self, rv: int) -> Iterator[Event]:
        """History events with RV > ``rv`` in order; ``rv`` must be >= ``compacted_rv``."""
        if not self.history or rv >= self.rv:
            return iter(())
        first = self.history[0].rv
        # RVs in the history are consecutive, so the position is arithmetic, not a search.
        offset = max(0, rv + 1 - first)
        return (self.history[i] for i in range(offset, len(self.history)))


def _merge_sorted(
    current: Iterator[tuple[Key, Stored]], extra: list[Key]
) -> Iterator[tuple[Key, Stored | None]]:
    """Merge current items with extra keys (deleted since) into one key-ordered stream."""
    extra_index = 0
    for key, stored in current:
        while extra_index < len(extra) and key_order(extra[extra_index]) < key_order(key):
            yield extra[extra_index], None
            extra_index += 1
        if extra_index < len(extra) and extra[extra_index] == key:
            extra_index += 1
        yield key, stored
    for key in extra[extra_index:]:
        yield key, None
