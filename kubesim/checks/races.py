"""Race oracles: what reads from a store must look like, checked after the fact.

The oracles are pure: a scenario records what happened (objects handed to readers, whole-cache
reads with the store's key sets around them) and the oracle returns :class:`RaceViolation` s
with the numbers, or nothing. Exceptions in store threads ("dictionary changed size during
iteration" and friends) are reported by the scheduler itself.

- **isolation** (:class:`IsolationMonitor`): an object the store handed out must not change
  afterwards while it is shared, checked from both sides: the store mutating what it handed
  out, and a consumer mutating what the store (or another reader) holds. client-go's contract,
  "you must not modify anything returned by Get or List", made checkable. Private copies (a
  deep-copying store) may be changed by their holder: an object counts as shared when it was
  handed out more than once or is still held by the store.
- **no torn reads** (:func:`check_reads_match_server`): every object a read returns equals some
  version of that object the server emitted (same uid and resourceVersion, same content).
- **snapshot consistency** (:func:`check_snapshot_consistency`): a read of the whole cache never
  misses an object that was in the store both before and after the read (a relist that clears
  and refills in place fails this).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import orjson

from kubesim.server.apiserver import APIServer


@dataclass(frozen=True)
class RaceViolation:
    """One broken race property, with what is needed to find it again."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _default(value: Any) -> Any:
    if isinstance(value, MappingProxyType):
        return dict(value)
    if isinstance(value, tuple | frozenset | set):
        return list(value) if not isinstance(value, set | frozenset) else sorted(value, key=repr)
    raise TypeError(f"cannot fingerprint {type(value).__name__}")


def fingerprint(obj: Any) -> str:
    """A content hash, independent of dict key order and of mapping/sequence flavours."""
    data = orjson.dumps(obj, default=_default, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _describe(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if isinstance(meta, Mapping):
        where = f"{meta.get('namespace', '')}/{meta.get('name', '?')}"
        return f"{where} (rv {meta.get('resourceVersion', '?')})"
    return f"object at {id(obj):#x}"


@dataclass
class _Handout:
    obj: Any
    print_at_handout: str
    readers: list[str] = field(default_factory=list)
    first_step: int = 0


class IsolationMonitor:
    """Records objects handed out by a store; :meth:`verify` reports shared ones that changed.

    Call :meth:`handed_out` right after the store returns objects to a reader, and
    :meth:`verify` when the reader is done with them (and at the end of the run). Both should
    run without scheduling points (``scheduler.atomic()``), as harness code.
    """

    def __init__(self, *, held_by_store: Callable[[], Iterable[Any]] | None = None) -> None:
        self._handouts: dict[int, _Handout] = {}
        self._held_by_store = held_by_store
        self.violations: list[RaceViolation] = []
        self._reported: set[int] = set()

    def handed_out(self, objects: Iterable[Any], *, reader: str, step: int = 0) -> None:
        for obj in objects:
            key = id(obj)
            print_now = fingerprint(obj)
            known = self._handouts.get(key)
            if known is None or known.obj is not obj:
                self._handouts[key] = _Handout(obj, print_now, [reader], step)
                continue
            if known.print_at_handout != print_now:
                self._violation(
                    key,
                    known,
                    f"changed between two hand-outs (to {known.readers[-1]!r} and {reader!r})",
                )
            known.readers.append(reader)
            known.print_at_handout = print_now

    def verify(self) -> list[RaceViolation]:
        store_ids = {id(o) for o in self._held_by_store()} if self._held_by_store else set()
        for key, handout in self._handouts.items():
            shared = len(handout.readers) > 1 or key in store_ids
            if shared and fingerprint(handout.obj) != handout.print_at_handout:
                who = "still held by the store" if key in store_ids else "handed out again"
                self._violation(
                    key,
                    handout,
                    f"changed after it was handed to {handout.readers[-1]!r} while shared ({who})",
                )
        return list(self.violations)

    def _violation(self, key: int, handout: _Handout, what: str) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        self.violations.append(
            RaceViolation(
                "isolation",
                f"{_describe(handout.obj)} {what}; handed out first at step {handout.first_step} "
                f"to {handout.readers[0]!r}, readers: {handout.readers}",
            )
        )


class ServerVersions:
    """Every version the server emitted, by (uid, resourceVersion), as fingerprints."""

    def __init__(self, server: APIServer, *, transform: Callable[[Any], Any] | None = None) -> None:
        self._transform = transform
        self.versions: dict[tuple[str, str], str] = {}
        with server.lock:
            stored = [event.new.obj for event in server.storage.history]
            for resource in server.resources:
                stored.extend(s.obj for _, s in server.storage.items(resource))
        for obj in stored:
            meta = obj["metadata"]
            self.versions[(meta["uid"], meta["resourceVersion"])] = self._print(obj)

    def _print(self, obj: Any) -> str:
        plain = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        return fingerprint(self._transform(plain) if self._transform else plain)

    def lookup(self, uid: str, rv: str) -> str | None:
        return self.versions.get((uid, rv))


def _without_type(obj: Any) -> Any:
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def check_reads_match_server(
    reads: Iterable[tuple[str, Any]],
    versions: ServerVersions,
    *,
    uid_of: Callable[[Any], str] = lambda o: str(o["metadata"]["uid"]),
    rv_of: Callable[[Any], str] = lambda o: str(o["metadata"]["resourceVersion"]),
    content_of: Callable[[Any], Any] | None = None,
) -> list[RaceViolation]:
    """Each ``(reader, object)`` must equal the server's emitted version with its uid and RV."""
    content_of = content_of or _without_type
    violations = []
    for reader, obj in reads:
        uid, rv = uid_of(obj), rv_of(obj)
        expected = versions.lookup(uid, rv)
        if expected is None:
            violations.append(
                RaceViolation(
                    "torn-read",
                    f"{reader!r} read {_describe(obj)}: the server never emitted uid {uid} "
                    f"at resourceVersion {rv}",
                )
            )
        elif fingerprint(content_of(obj)) != expected:
            violations.append(
                RaceViolation(
                    "torn-read",
                    f"{reader!r} read {_describe(obj)} whose content differs from what the "
                    f"server emitted at that resourceVersion (mutated in the cache, or torn)",
                )
            )
    return violations


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
