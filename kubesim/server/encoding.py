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

# k8s.io/apimachinery/pkg/apis/meta/v1 ObjectMeta field order.
_METADATA_ORDER = (
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


def canonical_metadata(meta: JSON) -> JSON:
    out: JSON = {}
    for key in _METADATA_ORDER:
        if key in meta and meta[key] is not None:
            value = meta[key]
            if key in ("labels", "annotations") and isinstance(value, dict):
                value = dict(sorted(value.items()))
            out[key] = value
    for key, value in meta.items():
        if key not in out and key not in _METADATA_ORDER:
            out[key] = value
    return out


def canonical_object(obj: JSON) -> JSON:
    """A new dict with kind, apiVersion, metadata first and metadata in Go field order."""
    out: JSON = {}
    for key in _TOP_ORDER:
        if key in obj:
            out[key] = canonical_metadata(obj[key]) if key == "metadata" else obj[key]
    for key, value in obj.items():
        if key not in out:
            out[key] = value
    return out


def deep_copy(value: T) -> T:
    """A deep copy of a JSON value; an orjson round trip is several times faster than deepcopy."""
    return cast(T, orjson.loads(orjson.dumps(value)))
