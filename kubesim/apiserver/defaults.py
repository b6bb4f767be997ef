"""Defaults kube-apiserver fills in, for the fields clients commonly read back.

Two tables: :data:`ON_WRITE`, the defaulting functions of each API group (``SetDefaults_*`` in
pkg/apis/<group>/v1/defaults.go), which a real server applies whenever it decodes a body, so on
updates and patches too; and :data:`ON_CREATE`, the registry strategies' ``PrepareForCreate``
(status) and allocation, on creates only. Only fields a client or a test is likely to read are
covered. Allocation (a Service's ``clusterIP``) is deterministic: the n-th Service created gets
the n-th address.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from kubesim.apiserver.api_groups import prepare_for_create as api_service_prepare_for_create
from kubesim.apiserver.encoding import METADATA_ORDER
from kubesim.apiserver.objects import as_dict

JSON = dict[str, Any]


# LimitRangeItem's fields in Go's order.
_LIMIT_RANGE_ITEM_ORDER = (
    "type",
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
)


def limit_range_defaults(obj: JSON) -> None:
    """SetDefaults_LimitRangeItem for each Container item (copy on write: the items are
    rebuilt, never changed in place)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("limits"), list):
        return
    items = []
    for item in spec["limits"]:
        if isinstance(item, dict) and item.get("type") == "Container":
            item = dict(item)
            default = dict(as_dict(item.get("default")))
            for key, value in as_dict(item.get("max")).items():
                default.setdefault(key, value)
            request = dict(as_dict(item.get("defaultRequest")))
            for key, value in default.items():
                request.setdefault(key, value)
            for key, value in as_dict(item.get("min")).items():
                request.setdefault(key, value)
            if default:
                item["default"] = dict(sorted(default.items()))  # Go maps: sorted keys
            if request:
                item["defaultRequest"] = dict(sorted(request.items()))
            ordered = {k: item[k] for k in _LIMIT_RANGE_ITEM_ORDER if k in item}
            ordered.update((k, v) for k, v in item.items() if k not in ordered)
            item = ordered
        items.append(item)
    obj["spec"] = {**spec, "limits": items}


def _mapping(obj: JSON, key: str) -> JSON:
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


# -- SetDefaults_*: every write of the kind (create, update, patch, apply) ----------------------


def pod_defaults(obj: JSON) -> None:
    """pkg/apis/core/v1/defaults.go SetDefaults_PodSpec, and the ``Pending`` phase a new pod
    gets (PrepareForCreate). Copy on write: ``spec`` and ``status`` may still be a caller's (a
    create does not deep-copy a pod, the kind every simulation writes most)."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec = obj["spec"] = dict(spec)
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status = obj["status"] = dict(status)
        status.setdefault("phase", "Pending")


def service_defaults(obj: JSON) -> None:
    """pkg/apis/core/v1/defaults.go SetDefaults_Service and SetDefaults_ServicePort."""
    spec = _mapping(obj, "spec")
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))


def deployment_defaults(obj: JSON) -> None:
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


def job_defaults(obj: JSON) -> None:
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
    _labels_from_template(obj)


def _labels_from_template(obj: JSON) -> None:
    """SetDefaults_Job: a Job without labels of its own takes its pod template's."""
    template = _mapping(obj, "spec").get("template")
    labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) else None
    metadata = _mapping(obj, "metadata")
    if isinstance(labels, dict) and not metadata.get("labels"):
        metadata["labels"] = dict(labels)


def replicas_defaults(obj: JSON) -> None:
    """SetDefaults_ReplicaSet: one replica."""
    _mapping(obj, "spec").setdefault("replicas", 1)


def replication_controller_defaults(obj: JSON) -> None:
    """SetDefaults_ReplicationController: one replica; the template's labels are the selector
    and the controller's labels when those are empty (``kubectl expose rc`` reads them)."""
    spec = _mapping(obj, "spec")
    spec.setdefault("replicas", 1)
    template = spec.get("template")
    labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) else None
    if not isinstance(labels, dict):
        return
    if not spec.get("selector"):
        spec["selector"] = dict(labels)
    metadata = _mapping(obj, "metadata")
    if not metadata.get("labels"):
        metadata["labels"] = dict(labels)


def secret_defaults(obj: JSON) -> None:
    """SetDefaults_Secret (``type: Opaque``), and the v1 conversion's merge of ``stringData``
    into ``data``: each value base64-encoded, overwriting ``data``'s key; ``stringData`` itself
    is never stored. Keys sorted, as Go encodes the map."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = obj.get("data")
    merged = dict(data) if isinstance(data, dict) else {}
    for key, value in string_data.items():
        merged[key] = base64.b64encode(str(value).encode()).decode()
    obj["data"] = dict(sorted(merged.items()))


def stateful_set_defaults(obj: JSON) -> None:
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


def daemon_set_defaults(obj: JSON) -> None:
    spec = _mapping(obj, "spec")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = _mapping(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _mapping(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)


def cron_job_defaults(obj: JSON) -> None:
    """pkg/apis/batch/v1/defaults.go SetDefaults_CronJob."""
    spec = _mapping(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)


def priority_class_defaults(obj: JSON) -> None:
    """pkg/apis/scheduling/v1/defaults.go SetDefaults_PriorityClass (``preemptionPolicy``), and
    ``globalDefault: false`` dropped as Go's ``omitempty`` drops it: the stored object is what
    the decoded struct encodes to. kubectl's ``describe`` dereferences the policy."""
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if obj.get("globalDefault") is False:
        del obj["globalDefault"]


def horizontal_pod_autoscaler_defaults(obj: JSON) -> None:
    """pkg/apis/autoscaling/v2/defaults.go: minReplicas 1, and with no metric the CPU
    utilization target of 80% (``behavior`` defaults, when one is given, are not modelled)."""
    spec = _mapping(obj, "spec")
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]


# ObjectMeta's fields before creationTimestamp, in Go's order.
_META_BEFORE_CREATION = METADATA_ORDER[: METADATA_ORDER.index("creationTimestamp")]
# Where a kind embeds an ObjectMeta as a value (a pod template, a Job template): Go's JSON
# encoder writes its zero creationTimestamp as null there (metav1.Time is a struct, which
# omitempty never omits), so a cluster shows `metadata: {creationTimestamp: null}`.
TEMPLATE_METADATA: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("apps", "Deployment"): (("spec", "template"),),
    ("apps", "ReplicaSet"): (("spec", "template"),),
    ("apps", "StatefulSet"): (("spec", "template"),),
    ("apps", "DaemonSet"): (("spec", "template"),),
    ("", "ReplicationController"): (("spec", "template"),),
    ("", "PodTemplate"): (("template",),),
    ("batch", "Job"): (("spec", "template"),),
    ("batch", "CronJob"): (("spec", "jobTemplate"), ("spec", "jobTemplate", "spec", "template")),
}


def template_creation_timestamps(obj: JSON, paths: tuple[tuple[str, ...], ...]) -> None:
    """Give each embedded ObjectMeta at ``paths`` its ``creationTimestamp: null``, in Go's
    field order (a template the client left out stays out: only a struct the object has)."""
    for path in paths:
        holder: Any = obj
        for key in path:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            continue
        meta = holder.get("metadata")
        meta = dict(meta) if isinstance(meta, dict) else {}
        if "creationTimestamp" in meta and meta["creationTimestamp"] is not None:
            continue  # what a client sent is kept (and validated nowhere, as upstream)
        ordered = {k: meta[k] for k in _META_BEFORE_CREATION if k in meta}
        ordered["creationTimestamp"] = None
        ordered.update((k, v) for k, v in meta.items() if k not in ordered)
        rest = [(k, v) for k, v in holder.items() if k != "metadata"]
        holder.clear()  # metadata first, as the template structs declare it
        holder["metadata"] = ordered
        holder.update(rest)


#: SetDefaults_* by (group, kind): run on the body of every create and update (and on a
#: patch's or an apply's result), as decoding a request applies them on a real server. They
#: write into the object they are given: a caller hands them a private copy, except for the
#: kinds in :data:`COPY_ON_WRITE`.
ON_WRITE: dict[tuple[str, str], Callable[[JSON], None]] = {
    ("", "Pod"): pod_defaults,
    ("", "Service"): service_defaults,
    ("apps", "Deployment"): deployment_defaults,
    ("batch", "Job"): job_defaults,
    ("apps", "ReplicaSet"): replicas_defaults,
    ("apps", "StatefulSet"): stateful_set_defaults,
    ("apps", "DaemonSet"): daemon_set_defaults,
    ("", "ReplicationController"): replication_controller_defaults,
    ("", "Secret"): secret_defaults,
    ("batch", "CronJob"): cron_job_defaults,
    ("autoscaling", "HorizontalPodAutoscaler"): horizontal_pod_autoscaler_defaults,
    ("scheduling.k8s.io", "PriorityClass"): priority_class_defaults,
    ("", "LimitRange"): limit_range_defaults,
}


#: Kinds whose ON_WRITE function copies every nested value it changes: it may be given a body
#: whose nested values are still the caller's.
COPY_ON_WRITE = frozenset({("", "Pod")})


# -- PrepareForCreate and allocation: creates only, after the defaults above -----------------


def service(obj: JSON, addresses: Iterator[str]) -> None:
    spec = _mapping(obj, "spec")
    if spec["type"] != "ExternalName" and spec.get("clusterIP") in (None, ""):
        spec["clusterIP"] = next(addresses)
        spec["clusterIPs"] = [spec["clusterIP"]]
    elif spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]  # chosen by the client, "None" included
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    obj["status"] = {"loadBalancer": {}}  # status is the server's, whatever was sent


# The labels a Job's generated selector and its pods carry (pkg/apis/batch types.go).
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def job(obj: JSON, _: Iterator[str]) -> None:
    """The Job strategy's PrepareForCreate: status empty and, unless ``manualSelector``, the
    generated selector (``generateSelector``): the template labelled with the Job's name and
    uid (legacy and ``batch.kubernetes.io/`` keys, where the client set none), the selector
    matching the uid. A Job without labels then shows its template's, as a read does once the
    defaults run on the stored object."""
    obj["status"] = {}
    spec = _mapping(obj, "spec")
    meta = obj["metadata"]
    if spec.get("manualSelector") is True:
        return
    template = spec["template"] = dict(_mapping(spec, "template"))
    template_meta = template["metadata"] = dict(_mapping(template, "metadata"))
    labels = template_meta["labels"] = dict(_mapping(template_meta, "labels"))
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, meta["name"])
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, meta["uid"])
    template_meta["labels"] = labels = dict(sorted(labels.items()))  # a Go map's order
    selector = spec["selector"] = dict(_mapping(spec, "selector"))
    match = dict(_mapping(selector, "matchLabels"))
    match.setdefault(CONTROLLER_UID_LABELS[1], meta["uid"])
    selector["matchLabels"] = dict(sorted(match.items()))
    if not meta.get("labels"):
        meta["labels"] = dict(labels)


def _status(initial: JSON) -> Callable[[JSON, Iterator[str]], None]:
    """A registry strategy's PrepareForCreate that leaves status as ``initial``."""

    def prepare(obj: JSON, _: Iterator[str]) -> None:
        obj["status"] = dict(initial)

    return prepare


#: What a create of (group, kind) does after ON_WRITE's defaults: status as the registry
#: strategy's PrepareForCreate leaves it (``replicas`` is not omitempty on ReplicaSets), and a
#: Service's cluster IP from ``addresses``.
ON_CREATE: dict[tuple[str, str], Callable[[JSON, Iterator[str]], None]] = {
    ("", "Service"): service,
    ("apps", "Deployment"): _status({}),
    ("batch", "Job"): job,
    ("apps", "ReplicaSet"): _status({"replicas": 0}),
    ("apps", "StatefulSet"): _status({"replicas": 0, "availableReplicas": 0}),
    ("apps", "DaemonSet"): _status(
        {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }
    ),
    ("", "ReplicationController"): _status({"replicas": 0}),
    ("batch", "CronJob"): _status({}),
    # desiredReplicas is the one status field autoscaling/v2 does not omit when empty.
    ("autoscaling", "HorizontalPodAutoscaler"): _status({"desiredReplicas": 0}),
    ("apiregistration.k8s.io", "APIService"): lambda obj, _: api_service_prepare_for_create(obj),
}


def cluster_ips() -> Iterator[str]:
    """10.96.0.1 is the ``kubernetes`` Service's; others get 10.96.0.10 onwards."""
    for n in itertools.count(10):
        yield f"10.96.{n // 256}.{n % 256}"
