"""Field ownership (``metadata.managedFields``) and server-side apply, as kube-apiserver keeps them.

Every write that names a field manager records which fields that manager set: an ``Update``
entry for creates, updates and patches, an ``Apply`` entry for server-side apply (PATCH with
``application/apply-patch+yaml``). Entries carry ``manager``, ``operation``, ``apiVersion``,
``time`` (the server's clock), ``fieldsType: FieldsV1`` and ``fieldsV1``, the set of fields in
the apiserver's nested encoding (``{"f:data": {"f:key": {}}}``).

Server-side apply merges the applied configuration into the live object. A field the applied
configuration sets to a different value than the live one, and that another manager owns, is a
conflict: 409 ``Conflict`` naming each field and its owner, unless ``force=true``, which takes
the fields over. Fields the same manager applied before and no longer applies are removed,
unless another manager also owns them (structured-merge-diff's ownership rules).

Associative lists (containers by name, ports, env, volumes, conditions: the lists of
:data:`kubesim.apiserver.patch.STRATEGIC_MERGE_KEYS`) are owned and merged item by item, each item
named by its key as the apiserver names it (``k:{"name":"main"}`` in ``fieldsV1``,
``.spec.containers[name="main"].image`` in a conflict). Simplifications, stated: every other list
is atomic (owned and replaced as a whole); an item is keyed by its strategic merge key, and
ports (a container's, a Service's) by their port and protocol, the ``x-kubernetes-list-map-keys``
of their OpenAPI schema, with the protocol's default (``TCP``) when an item leaves it out
(``k:{"containerPort":80,"protocol":"TCP"}``); the ``.`` marker of an owned item is not
written. Requests that name no field manager (the Python clients by default) record nothing,
so simulations stay as lean as before, unless the server names managers as a cluster does
(``APIServer(field_managers_from_user_agent=True)``, on under ``kubesim serve``): then the
request's User-Agent names it (:func:`manager_from_user_agent`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubesim.apiserver import status as st
from kubesim.apiserver.go_values import go_json

JSON = dict[str, Any]
Path = tuple[str, ...]


# Keys of associative lists that have a default: an item that leaves one out is keyed by it
# (core/v1 ContainerPort and ServicePort default their protocol to TCP).
_KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}
# Strategic merge keys of ``ports`` lists whose list-map keys add the protocol.
_PORT_KEYS = frozenset({"containerPort", "port"})


class _Item(str):
    """A path segment naming one item of an associative list: ``k:{"name":"main"}``, or
    ``k:{"containerPort":80,"protocol":"TCP"}`` for a list keyed by two fields."""

    __slots__ = ()

    @classmethod
    def of(cls, keys: tuple[str, ...], item: JSON) -> _Item:
        fields = {key: item.get(key, _KEY_DEFAULTS.get(key)) for key in keys}
        # structured-merge-diff writes a key's fields sorted by name.
        return cls("k:" + json.dumps(fields, separators=(",", ":"), sort_keys=True))

    def fields(self) -> JSON:
        fields: JSON = json.loads(self[2:])
        return fields


def _list_keys(path: Path, items: list[Any]) -> tuple[str, ...] | None:
    """The keys of the associative list at ``path``, if its items all carry them."""
    from kubesim.apiserver.patch import STRATEGIC_MERGE_KEYS

    key = STRATEGIC_MERGE_KEYS.get(tuple(p for p in path if not isinstance(p, _Item)))
    if not isinstance(key, str) or key.startswith("$") or not items:
        return None
    keys = (key, "protocol") if key in _PORT_KEYS and path[-1] == "ports" else (key,)
    for item in items:
        if not isinstance(item, dict) or isinstance(item.get(key), dict | list | None):
            return None
        if any(not isinstance(item.get(k, _KEY_DEFAULTS.get(k)), str) for k in keys[1:]):
            return None
    return keys


# Metadata that is identity or server-owned, never part of a manager's field set.
_NOT_OWNED_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
APPLY = "Apply"
UPDATE = "Update"
# apimachinery validation.FieldManagerMaxLength, in bytes.
FIELD_MANAGER_MAX_LENGTH = 128


def manager_from_user_agent(user_agent: str) -> str:
    """The manager kube-apiserver records for a write whose request names no ``fieldManager``:
    the User-Agent up to its first ``/``, printable characters only, at most 128 bytes
    (``prefixFromUserAgent`` in apiserver/pkg/endpoints/handlers/rest.go). The official Python
    client's ``OpenAPI-Generator/37.0.2/python`` is ``OpenAPI-Generator``."""
    out = ""
    size = 0
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        if size >= FIELD_MANAGER_MAX_LENGTH:
            break
        out += char
        size += len(char.encode())
    return out


# The manager whose applies the two steps of kubectl's client-side to server-side migration
# concern, and the annotation its client-side apply writes.
KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def leaf_paths(obj: JSON) -> set[Path]:
    """The fields an object sets, as paths to leaves (lists and empty maps are leaves)."""
    out: set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        if key == "metadata" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in _NOT_OWNED_METADATA}
            if not value:
                continue
        out.update(_leaves(value, (key,)))
    return out


def _leaves(value: Any, path: Path) -> Iterator[Path]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(child, (*path, key))
        return
    keys = _list_keys(path, value) if isinstance(value, list) else None
    if keys is None:
        yield path
        return
    for item in value:
        yield from _leaves(item, (*path, _Item.of(keys, item)))


def encode(paths: set[Path]) -> JSON:
    """A field set in FieldsV1 form: ``{"f:spec": {"f:replicas": {}}}``."""
    root: JSON = {}
    for path in sorted(paths):
        node = root
        for key in path:
            node = node.setdefault(str(key) if isinstance(key, _Item) else f"f:{key}", {})
    return root


def decode(fields: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(fields, dict):
        return out
    for key, child in fields.items():
        if key.startswith("k:"):
            path: Path = (*prefix, _Item(key))
        elif key.startswith("f:"):
            path = (*prefix, key[2:])
        else:
            continue  # "." (the item itself) and "v:" (set members): not written by kubesim
        below = decode(child, path)
        out.update(below if below else {path})
    return out


def _get(obj: Any, path: Path) -> Any:
    for key in path:
        if isinstance(key, _Item):
            obj = _find(obj, key)
            if obj is None:
                return _MISSING
            continue
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _find(items: Any, item: _Item) -> JSON | None:
    """The item of the list ``items`` that ``item`` names, or None."""
    if not isinstance(items, list):
        return None
    fields = item.fields()
    return next(
        (
            i
            for i in items
            if isinstance(i, dict)
            and all(i.get(k, _KEY_DEFAULTS.get(k)) == v for k, v in fields.items())
        ),
        None,
    )


_MISSING = object()


def _entries(obj: JSON) -> list[JSON]:
    entries = obj.get("metadata", {}).get("managedFields")
    if not isinstance(entries, list):
        return []
    return [dict(e) for e in entries if isinstance(e, dict)]


def _owned(entry: JSON) -> set[Path]:
    return decode(entry.get("fieldsV1"))


def _entry(manager: str, operation: str, api_version: str, time: str, paths: set[Path]) -> JSON:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": encode(paths),
    }


def _store(obj: JSON, entries: list[JSON]) -> None:
    kept = [e for e in entries if e.get("fieldsV1")]
    meta = obj.setdefault("metadata", {})
    if kept:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)


def normalize(obj: JSON) -> None:
    """Keep only the entries of ``obj``'s managedFields that own something (a client may write
    them; ``[{}]`` clears them)."""
    _store(obj, _entries(obj))


def record_update(old: JSON | None, new: JSON, manager: str, time: str) -> None:
    """A create, update or patch by ``manager``: it now owns the fields it changed (the other
    managers lose them), in its ``Update`` entry of ``new``.

    The entries start from the ones ``new`` carries, which are the stored ones unless the client
    wrote its own (FieldManager.Update decodes the request's first: kubectl moves the fields of
    its client-side apply to its server-side apply manager so; ``[{}]``, an entry owning
    nothing, clears them); from ``old``'s when ``new`` carries none."""
    entries = _entries(new) or (_entries(old) if old is not None else [])
    before = leaf_paths(old) if old is not None else set()
    after = leaf_paths(new)
    changed = {p for p in after if p not in before or _get(old, p) != _get(new, p)}
    removed = before - after
    for entry in entries:
        entry["fieldsV1"] = encode(_owned(entry) - changed - removed)
    mine = next(
        (e for e in entries if e.get("manager") == manager and e.get("operation") == UPDATE), None
    )
    owned = (_owned(mine) if mine else set()) | changed
    if mine is not None:
        entries.remove(mine)
    if owned:
        entries.append(_entry(manager, UPDATE, new.get("apiVersion", ""), time, owned))
    _store(new, entries)


def apply(
    live: JSON | None, applied: JSON, manager: str, *, force: bool, time: str, kind: str, name: str
) -> JSON:
    """The object after ``manager`` applies ``applied`` to ``live`` (None: it is created).

    Raises a 409 Conflict naming every conflicting field and its owners, unless ``force``.
    """
    entries = _entries(live) if live is not None else []
    mine = next(
        (e for e in entries if e.get("manager") == manager and e.get("operation") == APPLY), None
    )
    applying = leaf_paths(applied)
    conflicts: list[tuple[Path, str, str]] = []
    if live is not None:
        for entry in entries:
            if entry is mine:
                continue
            for path in _owned(entry) & applying:
                if _get(live, path) != _get(applied, path):
                    conflicts.append(
                        (path, str(entry.get("manager")), str(entry.get("apiVersion", "")))
                    )
    if conflicts and not force:
        # lastAppliedManager: kubectl's server-side apply of an object it applied client-side
        # takes over the fields its last-applied-configuration names without a conflict.
        forgiven = _last_applied_paths(live) if manager == KUBECTL and live is not None else set()
        remaining = [c for c in conflicts if c[0] not in forgiven]
        if remaining:
            raise _conflict(kind, name, sorted(set(remaining)))
        force = True
    result = _merge(json.loads(json.dumps(live)) if live is not None else {}, applied)
    taken = {path for path, _, _ in conflicts}
    others = set()
    for entry in entries:
        if entry is mine:
            continue
        owned = _owned(entry) - taken if force else _owned(entry)
        entry["fieldsV1"] = encode(owned)
        others |= owned
    # Fields this manager applied before and no longer applies go, unless someone else owns
    # them or they hold what is applied now: an empty map applied before (a leaf) is the parent
    # of the keys applied into it now, and stays.
    kept = {path[:end] for path in applying | others for end in range(1, len(path) + 1)}
    for path in (_owned(mine) if mine else set()) - kept:
        _remove(result, path)
    entries = [e for e in entries if e is not mine]
    entries.append(_entry(manager, APPLY, applied.get("apiVersion", ""), time, applying))
    _store(result, entries)
    if manager == KUBECTL:
        _update_last_applied(result, applied)
    return result


def _last_applied(obj: JSON) -> JSON | None:
    annotations = obj.get("metadata", {}).get("annotations")
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not text or not isinstance(text, str):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _last_applied_paths(live: JSON) -> set[Path]:
    last = _last_applied(live)
    return leaf_paths(last) if last is not None else set()


def _update_last_applied(result: JSON, applied: JSON) -> None:
    """lastAppliedUpdater: an object kubectl applied client-side keeps its annotation in step
    with what kubectl now applies server-side (the applied object without the annotation, as
    Go encodes a map: sorted keys, and a newline)."""
    annotations = result.get("metadata", {}).get("annotations")
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED):
        return
    copied = json.loads(json.dumps(applied))
    applied_annotations = copied.get("metadata", {}).get("annotations")
    if isinstance(applied_annotations, dict):
        applied_annotations.pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = go_json(copied) + "\n"


def _merge(live: JSON, applied: JSON, path: Path = ()) -> JSON:
    for key, value in applied.items():
        here = (*path, key)
        current = live.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge(current, value, here)
        elif (
            isinstance(value, list)
            and isinstance(current, list)
            and (merge_keys := _list_keys(here, value)) is not None
            and _list_keys(here, current) == merge_keys
        ):
            # Item by item: applied items merge into the live item with the same key, new
            # ones are appended; live items the configuration does not name stay.
            for item in value:
                named = _Item.of(merge_keys, item)
                match = _find(current, named)
                if match is None:
                    current.append(json.loads(json.dumps(item)))
                else:
                    _merge(match, item, (*here, named))
        else:
            live[key] = json.loads(json.dumps(value))
    return live


def _remove(obj: JSON, path: Path) -> None:
    node: Any = obj
    parent: Any = None
    for key in path[:-1]:
        parent = node
        node = _find(node, key) if isinstance(key, _Item) else _child(node, key)
        if node is None:
            return
    last = path[-1]
    if isinstance(last, _Item):
        item = _find(node, last)
        if item is not None:
            node.remove(item)
        return
    if isinstance(node, dict):
        node.pop(last, None)
        # An item that lost its key is no item: the manager stopped applying all of it. A key
        # with a default (a port's protocol) goes back to the default; the item stays.
        named = (
            len(path) >= 2
            and isinstance(path[-2], _Item)
            and last in path[-2].fields()
            and last not in _KEY_DEFAULTS
        )
        if named and isinstance(parent, list) and node in parent:
            parent.remove(node)


def _child(node: Any, key: str) -> Any:
    return node.get(key) if isinstance(node, dict) else None


def _conflict(kind: str, name: str, conflicts: list[tuple[Path, str, str]]) -> st.StatusError:
    """409 as structured-merge-diff words it: ``Apply failed with 1 conflict: conflict with
    "kubectl-client-side-apply" using v1: .data.key``."""
    lines = [
        f'conflict with "{manager}"' + (f" using {version}" if version else "") + f": {_show(path)}"
        for path, manager, version in conflicts
    ]
    count = f"{len(conflicts)} conflict" + ("s" if len(conflicts) > 1 else "")
    message = f"Apply failed with {count}: " + "\n".join(lines)
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "{manager}"' + (f" using {version}" if version else ""),
            "field": _show(path),
        }
        for path, manager, version in conflicts
    ]
    return st.StatusError(
        st.failure(409, "Conflict", message, {"name": name, "kind": kind, "causes": causes})
    )


def _show(path: Path) -> str:
    """A field path as structured-merge-diff prints it: ``.spec.containers[name="a"].image``."""
    out = ""
    for key in path:
        if isinstance(key, _Item):
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.fields().items()) + "]"
        else:
            out += f".{key}"
    return out
