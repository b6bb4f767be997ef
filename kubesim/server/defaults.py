"""Defaults kube-apiserver fills in on create, for the fields clients commonly read back.

Each function follows the defaulting functions of its API group (``SetDefaults_*`` in
pkg/apis/<group>/v1/defaults.go) and the registry strategies' ``PrepareForCreate`` for status;
only fields a client or a test is likely to read are covered. Allocation (a Service's
``clusterIP``) is deterministic: the n-th Service created gets the n-th address.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

JSON = dict[str, Any]


def _mapping(obj: JSON, key: str) -> JSON:
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def service(obj: JSON, addresses: Iterator[str]) -> None:
    spec = _mapping(obj, "spec")
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName" and spec.get("clusterIP") in (None, ""):
        spec["clusterIP"] = next(addresses)
        spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    obj["status"] = {"loadBalancer": {}}  # status is the server's, whatever was sent


def deployment(obj: JSON, _: Iterator[str]) -> None:
    spec = _mapping(obj, "spec")
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = _mapping(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _mapping(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    obj["status"] = {}


def job(obj: JSON, _: Iterator[str]) -> None:
    spec = _mapping(obj, "spec")
    mode = spec.setdefault("completionMode", "NonIndexed")
    # SetDefaults_Job: completions defaults to 1 only when parallelism is unset too (a work
    # queue Job sets parallelism alone and keeps completions unset).
    if spec.get("completions") is None and spec.get("parallelism") is None and mode != "Indexed":
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("suspend", False)
    if spec.get("podFailurePolicy") is None:
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    obj["status"] = {}


def replica_set(obj: JSON, _: Iterator[str]) -> None:
    """SetDefaults_ReplicaSet; status as PrepareForCreate leaves it (replicas is not omitempty)."""
    _mapping(obj, "spec").setdefault("replicas", 1)
    obj["status"] = {"replicas": 0}


def replication_controller(obj: JSON, _: Iterator[str]) -> None:
    """pkg/apis/core/v1/defaults.go SetDefaults_ReplicationController."""
    _mapping(obj, "spec").setdefault("replicas", 1)
    obj["status"] = {"replicas": 0}


def stateful_set(obj: JSON, _: Iterator[str]) -> None:
    spec = _mapping(obj, "spec")
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = _mapping(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _mapping(strategy, "rollingUpdate").setdefault("partition", 0)
    retention = _mapping(spec, "persistentVolumeClaimRetentionPolicy")
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    obj["status"] = {"replicas": 0, "availableReplicas": 0}


def daemon_set(obj: JSON, _: Iterator[str]) -> None:
    spec = _mapping(obj, "spec")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = _mapping(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _mapping(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    obj["status"] = {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }


def cron_job(obj: JSON, _: Iterator[str]) -> None:
    """pkg/apis/batch/v1/defaults.go SetDefaults_CronJob."""
    spec = _mapping(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    obj["status"] = {}


def horizontal_pod_autoscaler(obj: JSON, _: Iterator[str]) -> None:
    """pkg/apis/autoscaling/v2/defaults.go: minReplicas 1."""
    _mapping(obj, "spec").setdefault("minReplicas", 1)


ON_CREATE: dict[tuple[str, str], Callable[[JSON, Iterator[str]], None]] = {
    ("", "Service"): service,
    ("apps", "Deployment"): deployment,
    ("batch", "Job"): job,
    ("apps", "ReplicaSet"): replica_set,
    ("apps", "StatefulSet"): stateful_set,
    ("apps", "DaemonSet"): daemon_set,
    ("", "ReplicationController"): replication_controller,
    ("batch", "CronJob"): cron_job,
    ("autoscaling", "HorizontalPodAutoscaler"): horizontal_pod_autoscaler,
}


def cluster_ips() -> Iterator[str]:
    """10.96.0.1 is the ``kubernetes`` Service's; others get 10.96.0.10 onwards."""
    for n in itertools.count(10):
        yield f"10.96.{n // 256}.{n % 256}"
