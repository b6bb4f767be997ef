"""Deletion propagation: which finalizers a DELETE leaves for the garbage collector.

A DELETE names how the object's dependents (the objects whose ``ownerReferences`` name it)
go: ``propagationPolicy`` ``Background`` (the owner goes now, the collector deletes the
dependents after it), ``Foreground`` (the owner stays, marked with the ``foregroundDeletion``
finalizer, until the collector has deleted the dependents that block it) or ``Orphan`` (the
owner stays, with the ``orphan`` finalizer, until the collector has removed the owner from
its dependents' references; they live on). The deprecated ``orphanDependents`` is Orphan when
true and Background when false. With neither, an ``orphan`` or ``foregroundDeletion``
finalizer the object already has decides, and then the kind's default: batch/v1 Jobs and v1
ReplicationControllers orphan, for compatibility with their first versions; everything else
is deleted in the background.

These are store.go's ``deletionFinalizersForGarbageCollection``, ``shouldOrphanDependents``
and ``shouldDeleteDependents``, and ``ValidateDeleteOptions``; the collector's half is
:mod:`kubesim.cluster.workloads`. A server without the collector (no controllers) adds no
finalizers, as an apiserver with garbage collection off.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver import status as st
from kubesim.apiserver.resources import ResourceType

BACKGROUND, FOREGROUND, ORPHAN = "Background", "Foreground", "Orphan"
POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"

# (group, version, kind) whose strategy's DefaultGarbageCollectionPolicy is OrphanDependents.
_ORPHANED_BY_DEFAULT = frozenset({("batch", "v1", "Job"), ("", "v1", "ReplicationController")})


def policy_of(
    options: dict[str, Any], query_policy: str | None, query_orphan: str | None
) -> str | None:
    """The policy a DELETE asks for (None: none named), from its DeleteOptions body and then its
    query, refused as ``ValidateDeleteOptions`` refuses it (422 on ``DeleteOptions``)."""
    policy = options.get("propagationPolicy", query_policy)
    orphan: Any = options.get("orphanDependents", query_orphan)
    if isinstance(orphan, str):
        orphan = {"true": True, "false": False}.get(orphan, orphan)
    if orphan is not None and not isinstance(orphan, bool):
        raise st.bad_request(f"orphanDependents must be a boolean, got {orphan!r}")
    causes = []
    if orphan is not None and policy is not None:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "{policy}": orphanDependents and deletionPropagation '
                "cannot be both set",
                "field": "propagationPolicy",
            }
        )
    if policy is not None and policy not in POLICIES:
        causes.append(st.not_supported("propagationPolicy", str(policy), [*POLICIES, "nil"]))
    if causes:
        raise st.invalid("DeleteOptions", "meta.k8s.io", "", causes)
    if orphan is not None:
        return ORPHAN if orphan else BACKGROUND
    return policy


def finalizers_after_delete(
    resource: ResourceType, finalizers: list[str], policy: str | None
) -> list[str]:
    """The object's finalizers once a DELETE with ``policy`` is through: the ``orphan`` and
    ``foregroundDeletion`` ones decided anew, the others kept in their order."""
    decided = policy or _named_by_finalizers(finalizers)
    if decided is None:  # the kind's default: orphan, or in the background
        orphan = (resource.group, resource.version, resource.kind) in _ORPHANED_BY_DEFAULT
    else:
        orphan = decided == ORPHAN
    foreground = decided == FOREGROUND
    kept = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    return kept + [ORPHAN_FINALIZER] * orphan + [FOREGROUND_FINALIZER] * foreground


def _named_by_finalizers(finalizers: list[str]) -> str | None:
    """The policy a propagation finalizer already on the object names (the first found)."""
    for finalizer in finalizers:
        if finalizer == ORPHAN_FINALIZER:
            return ORPHAN
        if finalizer == FOREGROUND_FINALIZER:
            return FOREGROUND
    return None
