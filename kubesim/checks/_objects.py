"""What the race oracles need to know about the objects a store hands out.

Stores hand out plain dicts (the wire's JSON), the official client's model objects
(``kubernetes.client.V1Pod``: attributes in snake_case, ``datetime`` timestamps), and slim
records of their own (frozen dataclasses, ``MappingProxyType`` label maps). This module turns
any of them into the wire's JSON (:func:`to_wire`), hashes that (:func:`fingerprint`), names an
object and a place inside it without ever using ``id()`` (:func:`describe`,
:func:`render_path`), diffs two versions into a few readable lines (:func:`diff`), and walks the
mutable containers reachable from an object (:func:`containers`), for the isolation oracle.

Messages built from these are deterministic: they enter the trace when a run fails, and the
same run must give the same trace.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import orjson

Path = tuple[str | int, ...]

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "(absent)"})()
"""Marks a key missing on one side of a :func:`diff`."""

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def is_model(value: Any) -> bool:
    """An official-client model object (``kubernetes`` or ``kubernetes_asyncio``)."""
    cls = type(value)
    return isinstance(getattr(cls, "openapi_types", None), dict) and isinstance(
        getattr(cls, "attribute_map", None), dict
    )


def render_time(value: _dt.datetime | _dt.date) -> str:
    """A timestamp as kube-apiserver writes it: RFC 3339 in UTC, ``Z``, micros only if any."""
    if not isinstance(value, _dt.datetime):
        return value.isoformat()
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc)
    if value.microsecond:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _model_fields(value: Any) -> Iterator[tuple[str, Any]]:
    """A model's set attributes under their wire (JSON) names; unset (None) ones are omitted."""
    cls = type(value)
    for attribute in cls.openapi_types:
        item = getattr(value, attribute, None)
        if item is not None:
            yield cls.attribute_map.get(attribute, attribute), item


def _default(value: Any) -> Any:
    if is_model(value):
        return dict(_model_fields(value))
    if isinstance(value, _dt.datetime | _dt.date):
        return render_time(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(
        f"cannot fingerprint a {type(value).__name__}: the race oracles understand dicts, "
        "lists, official-client model objects, dataclasses and JSON scalars"
    )


_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS


def encode(obj: Any) -> bytes:
    """``obj`` as canonical JSON: sorted keys, models under their wire names, timestamps as
    the server writes them. Equal bytes, equal content."""
    return orjson.dumps(obj, default=_default, option=_OPTIONS)


decode = orjson.loads


def fingerprint(obj: Any) -> str:
    """A content hash of ``obj`` as JSON on the wire: independent of dict key order, of
    mapping/sequence flavours, and of whether the object is a dict or a client model."""
    return hashlib.blake2b(encode(obj), digest_size=12).hexdigest()


class Wire:
    """An object converted to the wire's JSON, with the fields each model node declares.

    ``declared`` maps the path of every node that was a model object to the JSON names its
    class knows: the server may send fields an older client drops, which is not a torn read.
    """

    __slots__ = ("declared", "value")

    def __init__(self, value: Any, declared: dict[Path, frozenset[str]]) -> None:
        self.value = value
        self.declared = declared


def to_wire(obj: Any) -> Wire:
    """``obj`` as plain JSON values (dicts, lists, str, numbers, bools, None)."""
    declared: dict[Path, frozenset[str]] = {}
    return Wire(_to_wire(obj, (), declared), declared)


def _to_wire(value: Any, path: Path, declared: dict[Path, frozenset[str]]) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if is_model(value):
        cls = type(value)
        declared[path] = frozenset(cls.attribute_map.get(a, a) for a in cls.openapi_types)
        return {k: _to_wire(v, (*path, k), declared) for k, v in _model_fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _to_wire(v, (*path, str(k)), declared) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_wire(v, (*path, i), declared) for i, v in enumerate(value)]
    if isinstance(value, _dt.datetime | _dt.date):
        return render_time(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _to_wire(getattr(value, f.name), (*path, f.name), declared)
            for f in dataclasses.fields(value)
        }
    return _to_wire(_default(value), path, declared)


# -- naming ------------------------------------------------------------------------------


def _meta_field(obj: Any, wire_name: str, attribute: str) -> Any:
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        return meta.get(wire_name) if isinstance(meta, Mapping) else None
    meta = getattr(obj, "metadata", None)
    if meta is None:  # a store's slim record keeps the fields at the top (uid, name, ...)
        return getattr(obj, attribute, None)
    if isinstance(meta, Mapping):
        return meta.get(wire_name)
    return getattr(meta, attribute, None)


def namespace_of(obj: Any) -> Any:
    """``metadata.namespace`` of a dict or model object, or None."""
    return _meta_field(obj, "namespace", "namespace")


def uid_of(obj: Any) -> Any:
    """``metadata.uid`` of a dict or model object, or None."""
    return _meta_field(obj, "uid", "uid")


def resource_version_of(obj: Any) -> Any:
    """``metadata.resourceVersion`` of a dict or model object, or None."""
    return _meta_field(obj, "resourceVersion", "resource_version")


def describe(obj: Any, *, position: str = "") -> str:
    """``namespace/name (rv N)`` for a Kubernetes object; otherwise its type and ``position``.

    Never an address: messages enter the trace, and the trace must be the same on every run.
    """
    name = _meta_field(obj, "name", "name")
    if name is not None:
        namespace = _meta_field(obj, "namespace", "namespace") or ""
        return f"{namespace}/{name} (rv {resource_version_of(obj) or '?'})"
    return f"a {type(obj).__name__} without metadata.name" + (f" ({position})" if position else "")


def render_path(path: Path) -> str:
    """``.metadata.labels["app.kubernetes.io/name"]``, ``.spec.containers[0].env``."""
    parts = []
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _IDENTIFIER.match(step):
            parts.append(f".{step}")
        else:
            parts.append(f"[{step!r}]")
    return "".join(parts) or "(the object itself)"


def short(value: Any, *, limit: int = 60) -> str:
    """A value for a message: its repr, cut to ``limit`` characters; containers by size."""
    if isinstance(value, Mapping):
        text = repr(dict(value))
    elif is_model(value):
        text = f"{type(value).__name__}({dict(_model_fields(value))!r})"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- diffs -------------------------------------------------------------------------------


def _same_instant(a: Any, b: Any) -> bool:
    """Two RFC 3339 strings for one instant (``Z`` and ``+00:00``, say)."""
    if not (isinstance(a, str) and isinstance(b, str) and _RFC3339.match(a) and _RFC3339.match(b)):
        return False
    parse = _dt.datetime.fromisoformat
    return parse(a.replace("Z", "+00:00")) == parse(b.replace("Z", "+00:00"))


def diff(
    old: Any, new: Any, *, declared: Mapping[Path, frozenset[str]] | None = None
) -> list[tuple[Path, Any, Any]]:
    """The leaves where two JSON values differ, as ``(path, old, new)`` (``ABSENT`` if missing).

    ``declared`` (from :func:`to_wire` of ``new``): at a node that was a model object, a key
    the model does not declare, or one the server sent as null, is dropped by the client, not
    torn. Timestamps that name the same instant are equal.
    """
    out: list[tuple[Path, Any, Any]] = []
    _diff(old, new, (), declared or {}, out)
    return out


def _diff(
    old: Any, new: Any, path: Path, declared: Mapping[Path, frozenset[str]], out: list[Any]
) -> None:
    if old is new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        known = declared.get(path)
        for key in sorted(set(old) | set(new), key=str):
            a, b = old.get(key, ABSENT), new.get(key, ABSENT)
            if b is ABSENT and known is not None and (key not in known or a is None):
                continue  # a field this client's model drops
            _diff(a, b, (*path, key), declared, out)
        return
    if isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            a = old[index] if index < len(old) else ABSENT
            b = new[index] if index < len(new) else ABSENT
            _diff(a, b, (*path, index), declared, out)
        return
    if old != new and not _same_instant(old, new):
        out.append((path, old, new))


def render_diff(changes: list[tuple[Path, Any, Any]], *, limit: int = 5) -> str:
    """``.metadata.labels.team: (absent) -> 'x'; ...`` with at most ``limit`` lines."""
    lines = [f"{render_path(p)}: {short(a)} -> {short(b)}" for p, a, b in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"and {len(changes) - limit} more")
    return "; ".join(lines)


# -- mutable containers (isolation) ------------------------------------------------------


def is_mutable_container(value: Any) -> bool:
    """Something a holder can change in place: a dict, list or set, a mapping proxy (a view
    of a dict someone may still hold), a model object, or a non-frozen dataclass."""
    if isinstance(value, dict | list | set | MappingProxyType | bytearray) or is_model(value):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return not type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
    return False


def _child(value: Any, key: str | int) -> Any:
    """``value``'s child under a wire path step, or None."""
    if isinstance(value, Mapping):
        return value.get(key)
    if isinstance(value, list | tuple):
        return value[key] if isinstance(key, int) and 0 <= key < len(value) else None
    if is_model(value):
        for attribute, name in type(value).attribute_map.items():
            if name == key:
                return getattr(value, attribute, None)
        return None
    if dataclasses.is_dataclass(value) and isinstance(key, str):
        return getattr(value, key, None)
    return None


def chain(obj: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    """The mutable containers along ``path`` (wire names) in ``obj``, root first."""
    value = obj
    for depth in range(len(path) + 1):
        if value is None:
            return
        if is_mutable_container(value):
            yield path[:depth], value
        if depth < len(path):
            value = _child(value, path[depth])


def _children(value: Any) -> Iterator[tuple[str | int, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key), item
    elif isinstance(value, list | tuple):
        yield from enumerate(value)
    elif isinstance(value, set | frozenset):
        yield from enumerate(sorted(value, key=repr))
    elif is_model(value):
        for attribute, key in type(value).attribute_map.items():
            yield key, getattr(value, attribute, None)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield f.name, getattr(value, f.name)


_LEAVES = frozenset({str, int, float, bool, type(None), bytes})

PathNode = tuple[Any, str | int] | None
"""A path as a linked list, ``(parent, key)``, built only as far as the walk goes: most
containers are never reported, so their paths are never materialized (:func:`path_of`)."""


def path_of(node: PathNode) -> Path:
    keys: list[str | int] = []
    while node is not None:
        node, key = node
        keys.append(key)
    return tuple(reversed(keys))


def containers(obj: Any, seen: set[int] | None = None) -> Iterator[tuple[PathNode, Any]]:
    """Every mutable container reachable from ``obj`` (itself included), with its path node.

    Each container is yielded once per ``seen`` set (pass one set to walk several objects and
    skip what an earlier one already reached); cycles end there too. Plain dicts and lists,
    nearly everything a store holds, take a fast path.
    """
    seen = set() if seen is None else seen
    leaves = _LEAVES
    stack: list[tuple[PathNode, Any]] = [(None, obj)]
    pop, push = stack.pop, stack.append
    while stack:
        node, value = pop()
        key = id(value)
        if key in seen:
            continue
        seen.add(key)
        kind = type(value)
        if kind is dict:
            yield node, value
            for name, item in value.items():
                if type(item) not in leaves:
                    push(((node, name), item))
        elif kind is list:
            yield node, value
            for index, item in enumerate(value):
                if type(item) not in leaves:
                    push(((node, index), item))
        elif kind not in leaves:
            if is_mutable_container(value):
                yield node, value
            for name, item in _children(value):
                if type(item) not in leaves:
                    push(((node, name), item))
