"""Small readers of stored objects that the controllers share (workloads, stateful and daemon
sets, revisions): lenient about shapes a client may have written, since a controller must never
fail on an object the server accepted."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.encoding import dumps

JSON = dict[str, Any]

# rand.SafeEncodeString's alphabet: no vowels (no words) and no look-alike characters.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def pod_template_hash(template: Any, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a template: FNV-32a over its canonical JSON (the real
    controller hashes Go's printing of the struct, so the values differ from a cluster's; the
    shape and the stability do not), then each decimal digit mapped into the safe alphabet."""
    data = dumps(template if template is not None else {})
    if collision_count is not None:
        data += str(collision_count).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[int(digit) % len(_SAFE_ALPHABET)] for digit in str(value))


def as_dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def as_int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def controller_of(obj: JSON) -> JSON | None:
    for ref in as_dict(obj.get("metadata")).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def owner_reference(owner: JSON) -> JSON:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_ready(pod: JSON) -> bool:
    status = as_dict(pod.get("status"))
    return status.get("phase") == "Running" and any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def deleting(obj: JSON) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))
