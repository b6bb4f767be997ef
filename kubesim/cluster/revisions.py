"""ControllerRevisions: the template history of StatefulSets and DaemonSets.

Their controllers (pkg/controller/history) keep each pod template they have run as an
``apps/v1`` ControllerRevision owned by the set: named ``{set}-{hash}``, labelled with the
template's labels and ``controller.kubernetes.io/hash``, its ``data`` the patch that restores
the template, its ``revision`` one more than the newest before. ``kubectl rollout history`` and
``rollout undo`` read them; the pods carry the revision in ``controller-revision-hash``. Going
back to an earlier template renumbers its revision as the newest. Old revisions are kept
(``revisionHistoryLimit`` is not enforced).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.objects import (
    as_dict,
    as_int,
    controller_of,
    owner_reference,
    pod_template_hash,
)

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.storage import Key
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]

HASH_LABEL = "controller.kubernetes.io/hash"
POD_REVISION_LABEL = "controller-revision-hash"


def sync_target(
    controllers: Controllers, resource: ResourceType, key: Key
) -> tuple[JSON, str, str] | None:
    """The set to sync and its current revision, ``(set, name, hash)``; None when the set is
    gone or being deleted (the collector's job), or its revision's name is taken."""
    owner = controllers.live(resource, key)
    if owner is None:
        return None
    revision = current(controllers, owner)
    return None if revision is None else (owner, *revision)


def current(controllers: Controllers, owner: JSON) -> tuple[str, str] | None:
    """The revision of ``owner``'s template, created when it has none yet: (name, hash), or
    None when the name is taken by an object the owner does not own."""
    server = controllers.server
    resource = server.resource("controllerrevisions")
    namespace = owner["metadata"]["namespace"]
    template = as_dict(as_dict(owner.get("spec")).get("template"))
    # The status's collisionCount, 0 until set (the set's first status write sets it to 0).
    hash_ = pod_template_hash(template, as_int(as_dict(owner.get("status")).get("collisionCount")))
    name = f"{owner['metadata']['name']}-{hash_}"
    newest = max(
        (
            int(r.get("revision") or 0)
            for r in controllers.owned(resource, namespace, owner)
            if isinstance(r.get("revision"), int)
        ),
        default=0,
    )
    existing = server.storage.get(resource, (namespace, name))
    if existing is not None:
        ref = controller_of(existing.obj) or {}
        if ref.get("uid") != owner["metadata"]["uid"]:
            return None
        if as_int(existing.obj.get("revision")) < newest:
            # A template the set ran before (``rollout undo``): its revision becomes the newest
            # again, renumbered as history.FindEqualRevisions then UpdateControllerRevision do.
            body = {**deep_copy(existing.obj), "revision": newest + 1}
            controllers.write(server.registry.update, resource, namespace, name, body, None)
        return name, hash_
    body = {
        "metadata": {
            "name": name,
            "labels": {
                **as_dict(as_dict(template.get("metadata")).get("labels")),
                HASH_LABEL: hash_,
            },
            "ownerReferences": [owner_reference(owner)],
        },
        "data": {"spec": {"template": {**deep_copy(template), "$patch": "replace"}}},
        "revision": newest + 1,
    }
    # Both controllers copy the owner's annotations (its kubernetes.io/change-cause is what
    # `kubectl rollout history` prints for the revision).
    annotations = as_dict(owner["metadata"].get("annotations"))
    if annotations:
        body["metadata"]["annotations"] = dict(annotations)
    try:
        controllers.write(server.registry.create, resource, body, namespace)
    except st.StatusError:
        return None
    return name, hash_
