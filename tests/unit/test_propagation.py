"""Which finalizers a DELETE leaves for the garbage collector (store.go
``deletionFinalizersForGarbageCollection``), and how DeleteOptions are refused."""

from __future__ import annotations

import pytest

from kubesim.apiserver import propagation
from kubesim.apiserver import status as st
from kubesim.apiserver.resources import builtin_resources

RESOURCES = {r.kind: r for r in builtin_resources() if r.group in ("", "apps", "batch")}


@pytest.mark.parametrize(
    ("kind", "finalizers", "policy", "after"),
    [
        # No policy, no propagation finalizer: the kind's default.
        ("Deployment", [], None, []),
        ("Job", [], None, ["orphan"]),
        ("ReplicationController", ["example.com/x"], None, ["example.com/x", "orphan"]),
        # A named policy decides, whatever the kind and the finalizers already there.
        ("Job", [], "Background", []),
        ("Job", ["orphan"], "Foreground", ["foregroundDeletion"]),
        ("Deployment", ["example.com/x"], "Orphan", ["example.com/x", "orphan"]),
        # No policy: the first propagation finalizer there decides, over the default.
        ("Job", ["foregroundDeletion"], None, ["foregroundDeletion"]),
        ("Deployment", ["orphan", "foregroundDeletion"], None, ["orphan"]),
    ],
)
def test_the_policy_then_the_finalizers_then_the_kind_decide(
    kind: str, finalizers: list[str], policy: str | None, after: list[str]
) -> None:
    assert propagation.finalizers_after_delete(RESOURCES[kind], finalizers, policy) == after


def test_orphan_dependents_is_the_old_spelling_and_cannot_be_combined() -> None:
    assert propagation.policy_of({"orphanDependents": True}, None, None) == "Orphan"
    assert propagation.policy_of({}, None, "false") == "Background"
    assert propagation.policy_of({}, "Foreground", None) == "Foreground"
    assert propagation.policy_of({"propagationPolicy": "Orphan"}, "Foreground", None) == "Orphan"
    with pytest.raises(st.StatusError) as both:
        propagation.policy_of({"orphanDependents": False}, "Orphan", None)
    assert both.value.status["code"] == 422
    with pytest.raises(st.StatusError) as odd:
        propagation.policy_of({"orphanDependents": "maybe"}, None, None)
    assert odd.value.status["code"] == 400
