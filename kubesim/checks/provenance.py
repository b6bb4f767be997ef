"""Where a value a store holds comes from: the server's history, token by token.

A store's derived structures hold strings (names, podIPs, label values, node names, uids) and
whole objects at some resourceVersion. Each of them came from some version of some object the
server emitted. :class:`Provenance` indexes every version of every object a run wrote (from
:class:`~kubesim.checks.races.ServerVersions`) by those *tokens*, and knows which tokens a live
object still carries and which ones only the past does: the podIP of a pod deleted at rv 41, a
label value no pod has any more, an older version of a live pod.

The history oracle (:mod:`kubesim.checks.history`) asks it one question of every entry a
long-running store holds and a fresh store does not: does this entry refer to the past? If it
does, the entry is state that depends on history (a stale index entry, a row kept for a deleted
pod, an interned value nobody has), and the report says which object and when
(``10.1.0.7 (podIP of team-0/web-003 until rv 41)``).

Tokens are strings, plus ``(uid, resourceVersion)`` pairs for whole objects. Numbers are never
tokens: counters, timestamps and sizes are not provenance.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Token = str | tuple[str, str]

# Strings longer than this are not indexed (an annotation holding a JSON blob, say): a store
# keying a structure by one is rare, and indexing them costs on every write.
MAX_TOKEN_LENGTH = 128


@dataclass(frozen=True)
class Origin:
    """What a token stands for: ``what`` of the object ``key``, until ``until`` (an rv)."""

    what: str  # "pod", "podIP", "label version=v2", "node", "uid", "owner", "version"
    key: str  # namespace/name of the object
    until: int | None  # the rv at which the object stopped carrying it; None while it does
    deleted: bool = False  # it stopped because the object was deleted
    rv: str = ""  # for "version": the resourceVersion of that version


def version_tokens(obj: Mapping[str, Any]) -> dict[Token, str]:
    """The tokens one version of an object carries, each with what it is."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    kind = str(obj.get("kind") or "object").lower()
    out: dict[Token, str] = {}
    uid = meta.get("uid")
    if uid:
        out[str(uid)] = "uid"
        rv = meta.get("resourceVersion")
        if rv:
            out[(str(uid), str(rv))] = "version"
    if name:
        out[name] = kind
        if namespace:
            out[f"{namespace}/{name}"] = kind
    for label, value in (meta.get("labels") or {}).items():
        if value:
            out.setdefault(str(value), f"label {label}={value}")
        out[f"{label}={value}"] = f"label {label}={value}"
    for annotation, value in (meta.get("annotations") or {}).items():
        if value and len(str(value)) <= MAX_TOKEN_LENGTH:
            out.setdefault(str(value), f"annotation {annotation}")
    for owner in meta.get("ownerReferences") or ():
        if owner.get("uid"):
            out.setdefault(str(owner["uid"]), "owner")
    spec = obj.get("spec") or {}
    if isinstance(spec, Mapping) and spec.get("nodeName"):
        out.setdefault(str(spec["nodeName"]), "node")
    status = obj.get("status") or {}
    if isinstance(status, Mapping):
        ips = [status.get("podIP")] + [p.get("ip") for p in status.get("podIPs") or ()]
        for ip in ips:
            if ip:
                out[str(ip)] = "podIP"
    return out


class Provenance:
    """Every token of every version of the objects a run wrote, live or past.

    The index is built at the first question, not at construction: most comparisons of a
    correct store find no difference, and then nobody asks."""

    def __init__(
        self,
        events: Iterable[Any],
        base: Iterable[Mapping[str, Any]] | Callable[[], Iterable[Mapping[str, Any]]] = (),
        *,
        resources: Collection[str] | None = None,
    ) -> None:
        """``events``: the server's writes, oldest first (``ServerVersions.events``); ``base``:
        the objects stored before the first of them, or a function that gives them; ``resources``:
        plurals to index (None: all). Both are read when the first question is asked: pass
        what will not change until then (a copy of a list still growing)."""
        self._events = events
        self._base = base
        self._resources = resources
        self._indexed = False
        self._live: dict[Token, Origin] = {}
        self._past: dict[Token, Origin] = {}

    def _index(self) -> None:
        self._indexed = True
        resources = self._resources
        # uid -> (key, its current tokens); what the live objects carry at the end.
        current: dict[str, tuple[str, dict[Token, str]]] = {}
        past: dict[Token, Origin] = {}
        base = self._base() if callable(self._base) else self._base
        for obj in base:
            meta = obj["metadata"]
            current[meta["uid"]] = (_key(meta), version_tokens(obj))
        for event in self._events:
            if resources is not None and event.resource.plural not in resources:
                continue
            obj = event.new.obj
            meta = obj["metadata"]
            uid = meta["uid"]
            key = _key(meta)
            before = current.get(uid, (key, {}))[1]
            if event.type == "DELETED":
                for token, what in before.items():
                    past[token] = _origin(token, what, key, event.rv, deleted=True)
                current.pop(uid, None)
                continue
            now = version_tokens(obj)
            for token, what in before.items():
                if token not in now:
                    past[token] = _origin(token, what, key, event.rv, deleted=False)
            current[uid] = (key, now)
        live = self._live
        for key, tokens in current.values():
            for token, what in tokens.items():
                live.setdefault(token, _origin(token, what, key, None, deleted=False))
        # A token some live object still carries is not the past (a reused podIP, a shared
        # label value), whoever carried it before.
        self._past = {t: o for t, o in past.items() if t not in live}
        self._events = self._base = ()  # what they held is in the index now

    def live(self, token: Token) -> Origin | None:
        if not self._indexed:
            self._index()
        return self._live.get(token)

    def past(self, token: Token) -> Origin | None:
        if not self._indexed:
            self._index()
        return self._past.get(token)

    def known(self, token: Token) -> bool:
        if not self._indexed:
            self._index()
        return token in self._live or token in self._past

    def past_of(self, tokens: Iterable[Token]) -> list[tuple[Token, Origin]]:
        """Those ``tokens`` that only the past carries, with their origins, most telling first
        (the object itself before its podIP, its podIP before a label value)."""
        if not self._indexed:
            self._index()
        found = [(t, self._past[t]) for t in set(tokens) if t in self._past]
        return sorted(found, key=lambda item: (*_rank(item[1]), str(item[0])))

    def live_of(self, tokens: Iterable[Token]) -> list[tuple[Token, Origin]]:
        if not self._indexed:
            self._index()
        found = [(t, self._live[t]) for t in set(tokens) if t in self._live]
        return sorted(found, key=lambda item: (*_rank(item[1]), str(item[0])))

    def explain(self, tokens: Iterable[Token], *, limit: int = 2) -> str:
        """A few words on the past these tokens refer to (empty if none): for each object they
        refer to, its most telling token (the object itself before its podIP, ...)."""
        shown: dict[str, str] = {}
        past = self.past_of(tokens)
        # A label or annotation value names no one object (many may have carried it): it
        # explains an entry only when nothing more telling does.
        telling = [p for p in past if not p[1].what.startswith(("label", "annotation"))]
        for token, origin in telling or past:
            if origin.key not in shown:
                shown[origin.key] = render(token, origin)
            if len(shown) == limit:
                break
        return ", ".join(shown.values())


_ORDER = ("version", "podIP", "node", "owner", "uid")


def _rank(origin: Origin) -> tuple[int, str, str]:
    what = origin.what
    if what.startswith(("label", "annotation")):
        position = 4
    elif what in _ORDER:
        position = 1 + _ORDER.index(what)
    else:
        position = 0  # a kind name: the object itself
    return (position, origin.key, origin.rv)


def render(token: Token, origin: Origin) -> str:
    """One token and its origin: ``team-0/web-003 (deleted at rv 41)``, ``'10.1.0.7' (podIP of
    team-0/web-003 until rv 41)``, ``team-0/web-001 at rv 50 (an older version)``."""
    if origin.until is None:
        when = "live"
    elif origin.deleted:
        when = f"deleted at rv {origin.until}"
    else:
        when = f"until rv {origin.until}"
    if origin.what == "version":
        state = f"deleted at rv {origin.until}" if origin.deleted else "an older version"
        return f"{origin.key} at rv {origin.rv} ({state})"
    if origin.what == "uid":
        return f"the uid of {origin.key} ({when})"
    if origin.what in ("podIP", "node", "owner") or origin.what.startswith(("label", "annotation")):
        return f"{str(token)!r} ({origin.what} of {origin.key}, {when})"
    return f"{origin.key} ({when})"


def _origin(token: Token, what: str, key: str, until: int | None, *, deleted: bool) -> Origin:
    rv = token[1] if isinstance(token, tuple) else ""
    return Origin(what, key, until, deleted, rv)


def _key(meta: Mapping[str, Any]) -> str:
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name', '?')}" if namespace else str(meta.get("name", "?"))
