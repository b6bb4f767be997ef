"""A Service's cluster IPs on update: kept, kept in step, and fixed once set.

The singular ``spec.clusterIP`` and the plural ``spec.clusterIPs`` (dual-stack) name the same
addresses, primary first. kube-apiserver's Service storage (pkg/registry/core/service/storage:
``patchAllocatedValues``, ``normalizeClusterIPs``) and validation
(``validateUpgradeDowngradeClusterIPs``) make an update:

* keep the allocated addresses when the body leaves them out (a ``kubectl apply`` of a manifest
  without ``clusterIP``);
* change the plural with the singular when only the singular changed;
* refuse a new primary address, ``spec.clusterIPs[0]: Invalid value: "...": may not change once
  set`` (``None``, a headless Service's, included), unless the Service is or becomes an
  ``ExternalName`` one.

On create, a ``clusterIP`` the client chose (``None`` included) is the plural's only entry
(:func:`kubesim.apiserver.defaults.service`).
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.validation import JSON, invalid_value


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def update_cluster_ips(old: JSON, new: JSON) -> list[JSON]:
    """Carry ``old``'s addresses into ``new`` (in place) as the storage does; the causes that
    make the change invalid."""
    before, after = _spec(old), _spec(new)
    if "ExternalName" in (before.get("type"), after.get("type")):
        return []
    if not after.get("clusterIP") and before.get("clusterIP"):
        after["clusterIP"] = before["clusterIP"]
        if not after.get("clusterIPs") and before.get("clusterIPs"):
            after["clusterIPs"] = list(before["clusterIPs"])
    elif after.get("clusterIP") != before.get("clusterIP") and after.get(
        "clusterIPs"
    ) == before.get("clusterIPs"):
        after["clusterIPs"] = [after["clusterIP"]]
    old_ips: Any = before.get("clusterIPs") or []
    new_ips: Any = after.get("clusterIPs") or []
    if old_ips and new_ips and isinstance(new_ips, list) and new_ips[0] != old_ips[0]:
        return [invalid_value("spec.clusterIPs[0]", new_ips[0], "may not change once set")]
    return []


__all__ = ["update_cluster_ips"]
