"""JSON encoding as kube-apiserver writes it.

Compact output (one object per line on watch streams), struct fields in Go declaration
order for ``metadata``, and map keys (labels, annotations) sorted, because Go's encoder sorts
map keys. Same object, same bytes: the determinism contract depends on it.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import orjson

T = TypeVar("T")

JSON = dict[str, Any]

dumps = orjson.dumps
loads = orjson.loads
JSONDecodeError = orjson.JSONDecodeError
OPT_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS
OPT_INDENT_2 = orjson.OPT_INDENT_2

# k8s.io/apimachinery/pkg/apis/meta/v1 ObjectMeta's JSON fields, in declaration order.
METADATA_ORDER = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
_TOP_ORDER = ("kind", "apiVersion", "metadata")


_METADATA_FIELDS = frozenset(METADATA_ORDER)
_SORTED_MAPS = ("labels", "annotations")  # Go maps: encoded with sorted keys


class _FieldRank(dict[str, int]):
    """ObjectMeta's fields by declaration order; any other key ranks after them all."""

    def __missing__(self, key: str) -> int:
        return len(METADATA_ORDER)


_RANK = _FieldRank((key, rank) for rank, key in enumerate(METADATA_ORDER)).__getitem__


def canonical_metadata(meta: JSON) -> JSON:
    """A new dict: ObjectMeta's fields in Go declaration order (unset ones left out), labels and
    annotations sorted, then any field ObjectMeta does not declare, in the order given."""
    # Every write goes through here: one stable sort of the keys present (a handful) by a
    # C-level lookup, rather than a probe for each of ObjectMeta's fifteen fields.
    out: JSON = {
        key: meta[key]
        for key in sorted(meta, key=_RANK)
        if meta[key] is not None or key not in _METADATA_FIELDS
    }
    for key in _SORTED_MAPS:
        value = out.get(key)
        if isinstance(value, dict):
            out[key] = dict(sorted(value.items())) if len(value) > 1 else dict(value)
    return out


def canonical_object(obj: JSON) -> JSON:
    """A new dict with kind, apiVersion, metadata first and metadata in Go field order."""
    out: JSON = {key: obj[key] for key in _TOP_ORDER if key in obj}
    out.update(obj)  # the keys above keep their places; the rest follow in the order given
    if "metadata" in out:
        out["metadata"] = canonical_metadata(out["metadata"])
    return out


def deep_copy(value: T) -> T:
    """A deep copy of a JSON value; an orjson round trip is several times faster than deepcopy."""
    return cast(T, orjson.loads(orjson.dumps(value)))
