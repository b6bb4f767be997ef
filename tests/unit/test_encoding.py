"""Canonical object order, the byte-stability half of the determinism contract.

ObjectMeta's fields are written in Go's declaration order, with unset (null) ones left out,
labels and annotations with their keys sorted (Go sorts map keys), and fields ObjectMeta does
not declare after them in the order given. The implementation sorts the keys present; the
reference here probes every declared field in turn, the plain reading of the rule.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.apiserver.encoding import METADATA_ORDER, canonical_metadata, canonical_object, dumps

JSON = dict[str, Any]


def reference(meta: JSON) -> JSON:
    out = {key: meta[key] for key in METADATA_ORDER if meta.get(key) is not None}
    for key in ("labels", "annotations"):
        if isinstance(out.get(key), dict):
            out[key] = dict(sorted(out[key].items()))
    out.update((key, value) for key, value in meta.items() if key not in METADATA_ORDER)
    return out


_KEYS = st.sampled_from([*METADATA_ORDER, "zone", "annotationsX", "a"])
_VALUES = st.one_of(
    st.none(),
    st.text("ab-", max_size=3),
    st.integers(0, 3),
    st.dictionaries(st.text("abc", max_size=3), st.text("xy", max_size=2), max_size=4),
)


@settings(max_examples=500)
@given(st.dictionaries(_KEYS, _VALUES, max_size=12))
def test_metadata_is_ordered_as_go_declares_it_with_maps_sorted(meta: JSON) -> None:
    ordered = canonical_metadata(meta)
    # The same bytes as the reference: key order included, nested maps included.
    assert dumps(ordered) == dumps(reference(meta))
    for key in ("labels", "annotations"):
        if isinstance(meta.get(key), dict):
            assert ordered[key] is not meta[key]  # a new map: the caller's is never shared


def test_an_object_starts_with_kind_api_version_and_metadata() -> None:
    obj = {"spec": {}, "metadata": {"uid": "u", "name": "n"}, "apiVersion": "v1", "kind": "Pod"}
    assert dumps(canonical_object(obj)) == (
        b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"n","uid":"u"},"spec":{}}'
    )
