"""Subresources that write one field of their parent object, as their registry strategies do.

A PUT or PATCH through one of these changes that field alone, whatever else the body carries
(the strategy's ``PrepareForUpdate`` copies the stored object and takes the one field from the
body); a GET answers with the whole object:

* ``pods/ephemeralcontainers`` writes ``spec.ephemeralContainers`` (pkg/registry/core/pod
  ``dropNonEphemeralContainerUpdates``). Validation (``ValidatePodEphemeralContainersUpdate``):
  an ephemeral container, once added, may be neither removed nor changed; each needs a name
  unique among all the pod's containers, and an image. ``kubectl debug`` and kube-rs'
  ``patch_ephemeral_containers`` write here.
* ``certificatesigningrequests/approval`` writes ``status.conditions`` (pkg/registry/certificates
  ``csrApprovalStrategy``), each condition stamped with ``lastUpdateTime`` when it has none.
  Validation (``validateConditions``): a type and a status (True, False or Unknown; only True
  for Approved and Denied), Approved and Denied mutually exclusive, no type twice.
  ``kubectl certificate approve`` writes here.

``/status`` is the same idea for every kind that has one; it lives in the API server's update.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.status import not_supported
from kubesim.apiserver.validation import (
    JSON,
    duplicate,
    invalid_value,
    required,
    validate_container,
)

# (group, kind, subresource) -> the path of the one field a write through it changes.
WRITES: dict[tuple[str, str, str], tuple[str, str]] = {
    ("", "Pod", "ephemeralcontainers"): ("spec", "ephemeralContainers"),
    ("certificates.k8s.io", "CertificateSigningRequest", "approval"): ("status", "conditions"),
}

_CONDITION_STATUSES = ["False", "True", "Unknown"]


def writes(group: str, kind: str, subresource: str | None) -> tuple[str, str] | None:
    """The field a write through ``subresource`` of ``kind`` changes, or None."""
    if subresource is None:
        return None
    return WRITES.get((group, kind, subresource))


def prepare_for_update(path: tuple[str, str], old: JSON, new: JSON, now: str) -> JSON:
    """``old`` with the field at ``path`` taken from ``new`` (dropped when ``new`` has none)."""
    section, field = path
    prepared = {**old, "metadata": dict(old["metadata"])}
    kept = old.get(section)
    target: JSON = dict(kept) if isinstance(kept, dict) else {}
    sent = new.get(section)
    value = sent.get(field) if isinstance(sent, dict) else None
    if value is None:
        target.pop(field, None)
    else:
        target[field] = value
    if path == ("status", "conditions") and isinstance(value, list):
        target[field] = [
            {**c, "lastUpdateTime": c.get("lastUpdateTime") or now} if isinstance(c, dict) else c
            for c in value
        ]
    prepared[section] = target
    return prepared


def validate_update(path: tuple[str, str], old: JSON, new: JSON) -> list[JSON]:
    """The causes that make the write through the subresource of ``path`` invalid."""
    if path == ("spec", "ephemeralContainers"):
        return _ephemeral_containers(old, new)
    return _approval_conditions(new)


def _section(obj: JSON, key: str) -> JSON:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _named(containers: Any) -> list[JSON]:
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def _ephemeral_containers(old: JSON, new: JSON) -> list[JSON]:
    field = "spec.ephemeralContainers"
    spec = _section(new, "spec")
    sent = spec.get("ephemeralContainers")
    if sent is not None and not isinstance(sent, list):
        return [invalid_value(field, sent, "must be a list")]
    causes: list[JSON] = []
    before = {c.get("name"): c for c in _named(old.get("spec", {}).get("ephemeralContainers"))}
    now = {c.get("name"): (index, c) for index, c in enumerate(_named(sent))}
    for name, container in before.items():
        if name not in now:
            causes.append(
                _forbidden(field, f'existing ephemeral containers "{name}" may not be removed')
            )
        elif now[name][1] != container:
            causes.append(
                _forbidden(
                    f"{field}[{now[name][0]}]",
                    f'existing ephemeral containers "{name}" may not be changed',
                )
            )
    taken = {
        str(c.get("name"))
        for key in ("containers", "initContainers")
        for c in _named(spec.get(key))
    }
    for index, container in enumerate(_named(sent)):
        causes.extend(validate_container(container, f"{field}[{index}]", taken))
    return causes


def _approval_conditions(new: JSON) -> list[JSON]:
    status = _section(new, "status")
    causes: list[JSON] = []
    seen: set[str] = set()
    approved = denied = False
    for index, condition in enumerate(_named(status.get("conditions"))):
        field = f"status.conditions[{index}]"
        kind = str(condition.get("type") or "")
        if not kind:
            causes.append(required(f"{field}.type"))
        allowed = ["True"] if kind in ("Approved", "Denied") else _CONDITION_STATUSES
        value = condition.get("status")
        if not value:
            causes.append(required(f"{field}.status"))
        elif value not in allowed:
            causes.append(not_supported(f"{field}.status", str(value), allowed))
        if kind == "Approved":
            approved = True
            if denied:
                causes.append(_exclusive(field, kind))
        elif kind == "Denied":
            denied = True
            if approved:
                causes.append(_exclusive(field, kind))
        if kind in seen:
            causes.append(duplicate(f"{field}.type", kind))
        seen.add(kind)
    return causes


def _exclusive(field: str, kind: str) -> JSON:
    return invalid_value(
        f"{field}.type", kind, "Approved and Denied conditions are mutually exclusive"
    )


def _forbidden(field: str, detail: str) -> JSON:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


__all__ = ["WRITES", "prepare_for_update", "validate_update", "writes"]
