"""API groups in the order kube-apiserver's aggregator gives them, and APIService's strategy.

Discovery lists groups in the order of their APIServices' ``groupPriorityMinimum`` (highest
first) and a group's versions by ``versionPriority``: kube-apiserver's table for the built-in
group-versions (:data:`PRIORITIES`), 1000/100 for a CustomResourceDefinition's group, and
metrics-server's manifest's 100/100 for ``metrics.k8s.io``. The wire's discovery reads the
table; the cluster's APIService objects (:mod:`kubesim.cluster.api_services`) carry it.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

# (group, version) -> (groupPriorityMinimum, versionPriority): kube-apiserver's table for the
# group-versions kubesim serves (pkg/controlplane/apiserver/aggregator.go and
# cmd/kube-apiserver/app/aggregator.go). Higher first; the group's highest decides its place.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    # The two below went GA after the tables kubesim could read: the group priorities are the
    # tables', the version priorities an inference (above every beta of the group).
    ("resource.k8s.io", "v1"): (16200, 21),
    ("storagemigration.k8s.io", "v1"): (15800, 15),
}
# The aggregator's own group: listed first in discovery, never as an APIService.
OWN_GROUP = "apiregistration.k8s.io"
OWN_GROUP_PRIORITY = 20001
CRD_PRIORITY = (1000, 100)  # "CRDs should have relatively low priority"
# metrics-server's components.yaml.
METRICS_PRIORITY = (100, 100)


def name_of(group: str, version: str) -> str:
    """``v1.apps``; ``v1.`` for the core group."""
    return f"{version}.{group}"


def group_priority(group: str, versions: list[str], custom: bool) -> int:
    """Where a group goes in discovery: its highest ``groupPriorityMinimum`` (0 when none)."""
    if group == OWN_GROUP:
        return OWN_GROUP_PRIORITY
    if custom:
        return CRD_PRIORITY[0]
    known = [PRIORITIES[(group, v)][0] for v in versions if (group, v) in PRIORITIES]
    if known:
        return max(known)
    if group == "metrics.k8s.io":
        return METRICS_PRIORITY[0]
    return 0


def available(reason: str, message: str, now: str) -> JSON:
    return {"conditions": [available_condition(reason, message, now)]}


def available_condition(reason: str, message: str, now: str) -> JSON:
    return {
        "type": "Available",
        "status": "True",
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def prepare_for_create(obj: JSON) -> None:
    """The APIService strategy's PrepareForCreate: no status from the client; a local one is
    available from the start (at its creationTimestamp, stamped just before)."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("service") is None:
        now = obj["metadata"]["creationTimestamp"]
        obj["status"] = available("Local", "Local APIServices are always available", now)
    else:
        obj["status"] = {}
