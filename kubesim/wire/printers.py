"""Table columns of the built-in kinds kubectl users list most, as kube-apiserver prints them.

kube-apiserver answers ``kubectl get`` with a ``Table`` whose columns come from its printers
(pkg/printers/internalversion/printers.go): ``kubectl get deployments`` shows READY,
UP-TO-DATE and AVAILABLE because the server says so, whatever the kubectl version. Each entry
below is one printer: its column definitions (``priority: 1`` columns are the ``-o wide``
ones) and the function that makes one row's cells from an object. Pods are printed by
:func:`kubesim.wire.tables.pod_cells`; kinds without a printer here get NAME and AGE.

The cells are computed from the object alone and the server's virtual clock, so output is
deterministic. Column descriptions are short paraphrases of the API's field documentation, not
the server's exact text (kubectl does not show them).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from kubesim.wire.ages import human_duration, parse_time, since

JSON = dict[str, Any]
Cells = Callable[[JSON, _dt.datetime], list[Any]]


def _column(name: str, description: str, *, kind: str = "string", priority: int = 0) -> JSON:
    fmt = "name" if name == "Name" else ""
    return {
        "name": name,
        "type": kind,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


NAME = _column("Name", "Name must be unique within a namespace.")
AGE = _column("Age", "CreationTimestamp is the server time when this object was created.")
CONTAINERS = _column("Containers", "Names of each container in the template.", priority=1)
IMAGES = _column("Images", "Images referenced by each container in the template.", priority=1)
SELECTOR = _column("Selector", "Label selector for the pods.", priority=1)


def _name(obj: JSON) -> str:
    return str(_dict(obj.get("metadata")).get("name", ""))


def _age(obj: JSON, now: _dt.datetime) -> str:
    """The AGE cell: time since creation on the server's clock."""
    return since(_dict(obj.get("metadata")).get("creationTimestamp"), now)


def selector_text(selector: Any) -> str:
    """A LabelSelector as ``metav1.LabelSelectorAsSelector(...).String()`` writes it, or
    ``<none>`` when it selects everything."""
    selector = _dict(selector)
    parts = [f"{k}={v}" for k, v in sorted(_dict(selector.get("matchLabels")).items())]
    for expression in _list(selector.get("matchExpressions")):
        expression = _dict(expression)
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(str(v) for v in _list(expression.get("values"))))
        if operator == "In":
            parts.append(f"{key} in ({values})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif operator == "Exists":
            parts.append(str(key))
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(sorted(parts)) if parts else "<none>"


def _map_text(labels: Any) -> str:
    """labels.FormatLabels: ``k=v,k2=v2`` sorted by key, ``<none>`` when empty."""
    labels = _dict(labels)
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels)) or "<none>"


def _template(obj: JSON, *path: str) -> tuple[str, str]:
    """The names and images of the pod template's containers, comma-separated."""
    spec: Any = obj.get("spec")
    for key in path:
        spec = _dict(spec).get(key)
    containers = [_dict(c) for c in _list(_dict(spec).get("containers"))]
    return (
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    )


def _replicas(obj: JSON) -> int:
    replicas = _dict(obj.get("spec")).get("replicas")
    return _int(replicas) if replicas is not None else 1


# -- workloads ------------------------------------------------------------------------------------

DEPLOYMENT_COLUMNS = [
    NAME,
    _column("Ready", "Number of the pod with ready state."),
    _column("Up-to-date", "Pods with the desired template spec.", kind="integer"),
    _column("Available", "Pods ready for at least minReadySeconds.", kind="integer"),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
]


def deployment_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    status = _dict(obj.get("status"))
    names, images = _template(obj, "template", "spec")
    return [
        _name(obj),
        f"{_int(status.get('readyReplicas'))}/{_replicas(obj)}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        _age(obj, now),
        names,
        images,
        selector_text(_dict(obj.get("spec")).get("selector")),
    ]


REPLICA_SET_COLUMNS = [
    NAME,
    _column("Desired", "Number of desired pods.", kind="integer"),
    _column("Current", "Number of pods the controller has created.", kind="integer"),
    _column("Ready", "Number of pods with a Ready condition.", kind="integer"),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
]


def replica_set_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    """ReplicaSets and ReplicationControllers (whose selector is a plain map)."""
    status, spec = _dict(obj.get("status")), _dict(obj.get("spec"))
    names, images = _template(obj, "template", "spec")
    selector = spec.get("selector")
    is_label_selector = "matchLabels" in _dict(selector) or "matchExpressions" in _dict(selector)
    return [
        _name(obj),
        _replicas(obj),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _age(obj, now),
        names,
        images,
        selector_text(selector) if is_label_selector else _map_text(selector),
    ]


STATEFUL_SET_COLUMNS = [
    NAME,
    _column("Ready", "Number of the pod with ready state."),
    AGE,
    CONTAINERS,
    IMAGES,
]


def stateful_set_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    status = _dict(obj.get("status"))
    names, images = _template(obj, "template", "spec")
    return [
        _name(obj),
        f"{_int(status.get('readyReplicas'))}/{_replicas(obj)}",
        _age(obj, now),
        names,
        images,
    ]


DAEMON_SET_COLUMNS = [
    NAME,
    _column("Desired", "Nodes that should run the daemon pod.", kind="integer"),
    _column("Current", "Nodes running at least one daemon pod.", kind="integer"),
    _column("Ready", "Nodes whose daemon pod is ready.", kind="integer"),
    _column("Up-to-date", "Nodes running the updated daemon pod.", kind="integer"),
    _column("Available", "Nodes whose daemon pod is available.", kind="integer"),
    _column("Node Selector", "The pod template's node selector."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
]


def daemon_set_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    status, spec = _dict(obj.get("status")), _dict(obj.get("spec"))
    names, images = _template(obj, "template", "spec")
    template_spec = _dict(_dict(spec.get("template")).get("spec"))
    return [
        _name(obj),
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        _map_text(template_spec.get("nodeSelector")),
        _age(obj, now),
        names,
        images,
        selector_text(spec.get("selector")),
    ]


# -- services and configuration -------------------------------------------------------------------

SERVICE_COLUMNS = [
    NAME,
    _column("Type", "How the Service is exposed."),
    _column("Cluster-IP", "The IP address of the service inside the cluster."),
    _column("External-IP", "IP addresses the service accepts traffic on from outside."),
    _column("Port(s)", "The ports the service exposes."),
    AGE,
    _column("Selector", "The labels of the pods the service routes to.", priority=1),
]


def _service_external_ip(spec: JSON, status: JSON) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if kind == "ExternalName":
        return str(spec.get("externalName") or "<none>")
    if kind == "LoadBalancer":
        ingress = [
            str(_dict(i).get("ip") or _dict(i).get("hostname") or "")
            for i in _list(_dict(status.get("loadBalancer")).get("ingress"))
        ]
        addresses = [a for a in ingress + external if a]
        return ",".join(addresses) if addresses else "<pending>"
    return ",".join(external) if external else "<none>"


def _service_ports(spec: JSON) -> str:
    ports = []
    for port in _list(spec.get("ports")):
        port = _dict(port)
        text = str(port.get("port", ""))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(ports) if ports else "<none>"


def service_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    return [
        _name(obj),
        spec.get("type") or "ClusterIP",
        spec.get("clusterIP") or "<none>",
        _service_external_ip(spec, status),
        _service_ports(spec),
        _age(obj, now),
        _map_text(spec.get("selector")),
    ]


CONFIG_MAP_COLUMNS = [NAME, _column("Data", "Number of keys.", kind="integer"), AGE]


def config_map_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    data = len(_dict(obj.get("data"))) + len(_dict(obj.get("binaryData")))
    return [_name(obj), data, _age(obj, now)]


SECRET_COLUMNS = [
    NAME,
    _column("Type", "The type of the secret."),
    _column("Data", "Number of keys.", kind="integer"),
    AGE,
]


def secret_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    data = len(_dict(obj.get("data")) | _dict(obj.get("stringData")))
    return [
        _name(obj),
        obj.get("type") or "Opaque",
        data,
        _age(obj, now),
    ]


NAMESPACE_COLUMNS = [NAME, _column("Status", "The status of the namespace."), AGE]


def namespace_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    phase = _dict(obj.get("status")).get("phase") or ""
    return [_name(obj), phase, _age(obj, now)]


ENDPOINTS_COLUMNS = [NAME, _column("Endpoints", "Endpoints of the service."), AGE]


def _with_more(shown: list[str], count: int, limit: int = 3) -> str:
    """printers.go listWithMoreString: the first ``limit`` items, then ``+ N more...``."""
    text = ",".join(shown)
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


def endpoints_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    """formatEndpoints: ``ip:port`` for each ready address and port, three at most."""
    subsets = _list(obj.get("subsets"))
    if not subsets:
        return [_name(obj), "<none>", _age(obj, now)]
    shown: list[str] = []
    count = 0
    for subset in subsets:
        subset = _dict(subset)
        ips = [str(_dict(a).get("ip", "")) for a in _list(subset.get("addresses"))]
        ports = [_dict(p).get("port") for p in _list(subset.get("ports"))] or [None]
        for port in ports:
            count += len(ips)
            for ip in ips:
                if len(shown) < 3:
                    host = f"[{ip}]" if ":" in ip else ip
                    shown.append(ip if port is None else f"{host}:{port}")
    text = ",".join(shown)
    if count > 3:
        text = f"{text} + {count - 3} more..."
    return [_name(obj), text, _age(obj, now)]


ENDPOINT_SLICE_COLUMNS = [
    NAME,
    _column("AddressType", "The type of address carried by the EndpointSlice."),
    _column("Ports", "Port numbers of the EndpointSlice."),
    _column("Endpoints", "Addresses of the EndpointSlice."),
    AGE,
]


def endpoint_slice_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    ports = [_dict(p) for p in _list(obj.get("ports"))]
    port_text = [
        str(p["port"]) if p.get("port") is not None else str(p.get("name") or "*") for p in ports
    ]
    addresses = [
        str(a)
        for endpoint in _list(obj.get("endpoints"))
        for a in _list(_dict(endpoint).get("addresses"))
    ]
    return [
        _name(obj),
        str(obj.get("addressType", "")),
        _with_more(port_text[:3], len(port_text)),
        _with_more(addresses[:3], len(addresses)),
        _age(obj, now),
    ]


EVENT_COLUMNS = [
    _column("Last Seen", "The time at which the most recent occurrence was recorded."),
    _column("Type", "Type of this event (Normal, Warning)."),
    _column("Reason", "Why the action was taken."),
    _column("Object", "The object that this event is about."),
    _column("Subobject", "The part of the object the event is about.", priority=1),
    _column("Source", "The component reporting this event.", priority=1),
    _column("Message", "A description of the status of this operation."),
    _column("First Seen", "The time at which the event was first recorded.", priority=1),
    _column("Count", "The number of times this event has occurred.", kind="integer", priority=1),
    {**NAME, "priority": 1},
]


def event_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    """printEvent: the object as ``kind/name``, the source as ``component, host``."""
    involved, source = _dict(obj.get("involvedObject")), _dict(obj.get("source"))
    last = obj.get("lastTimestamp") or obj.get("eventTime")
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    origin = ", ".join(str(p) for p in (source.get("component"), source.get("host")) if p)
    return [
        since(last, now),
        str(obj.get("type", "")),
        str(obj.get("reason", "")),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        str(involved.get("fieldPath", "")),
        origin,
        str(obj.get("message", "")).strip(),
        since(first, now),
        _int(obj.get("count")),
        _name(obj),
    ]


NODE_COLUMNS = [
    NAME,
    _column("Status", "The status of the node."),
    _column("Roles", "The roles of the node."),
    AGE,
    _column("Version", "Kubelet Version reported by the node."),
    _column("Internal-IP", "List of internal IPs attached to the node.", priority=1),
    _column("External-IP", "List of external IPs attached to the node.", priority=1),
    _column("OS-Image", "OS image reported by the node.", priority=1),
    _column("Kernel-Version", "Kernel version reported by the node.", priority=1),
    _column("Container-Runtime", "Container runtime reported by the node.", priority=1),
]

# The label prefix a node's roles are read from, and the older single-role label.
_ROLE_PREFIX = "node-role.kubernetes.io/"
_ROLE_LABEL = "kubernetes.io/role"


def node_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    states = []
    for condition in _list(status.get("conditions")):
        condition = _dict(condition)
        if condition.get("type") == "Ready":
            states.append("Ready" if condition.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = _dict(_dict(obj.get("metadata")).get("labels"))
    roles = {key[len(_ROLE_PREFIX) :] for key in labels if key.startswith(_ROLE_PREFIX)}
    if labels.get(_ROLE_LABEL):
        roles.add(str(labels[_ROLE_LABEL]))
    roles.discard("")
    info = _dict(status.get("nodeInfo"))

    def address(kind: str) -> str:
        for entry in _list(status.get("addresses")):
            if _dict(entry).get("type") == kind:
                return str(_dict(entry).get("address", ""))
        return "<none>"

    return [
        _name(obj),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _age(obj, now),
        str(info.get("kubeletVersion", "")),
        address("InternalIP"),
        address("ExternalIP"),
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]


SERVICE_ACCOUNT_COLUMNS = [
    NAME,
    _column("Secrets", "Number of secrets the account names.", kind="integer"),
    AGE,
]


def service_account_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    secrets = len(_list(obj.get("secrets")))
    return [_name(obj), secrets, _age(obj, now)]


# pkg/printers/internalversion componentStatusColumnDefinitions and printComponentStatus.
COMPONENT_STATUS_COLUMNS = [
    NAME,
    _column("Status", "Status of the component conditions"),
    _column("Message", "Message of the component conditions"),
    _column("Error", "Error of the component conditions"),
]


def component_status_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    status, message, error = "Unknown", "", ""
    for condition in _list(obj.get("conditions")):
        condition = _dict(condition)
        if condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = str(condition.get("message", "")), str(condition.get("error", ""))
            break
    return [_name(obj), status, message, error]


# -- batch ----------------------------------------------------------------------------------------

JOB_COLUMNS = [
    NAME,
    _column("Status", "Status of the job."),
    _column("Completions", "The desired number of successfully finished pods."),
    _column("Duration", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
]


def _job_status(status: JSON) -> str:
    """The job's finished or suspended condition, else ``Running``."""
    true = {
        _dict(c).get("type")
        for c in _list(status.get("conditions"))
        if _dict(c).get("status") == "True"
    }
    for condition in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if condition in true:
            return condition
    return "Running"


def job_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    succeeded = _int(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{_int(spec['completions'])}"
    elif _int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    started, finished = (
        parse_time(status.get("startTime")),
        parse_time(status.get("completionTime")),
    )
    duration = ""
    if started is not None:
        duration = human_duration(((finished or now) - started).total_seconds())
    names, images = _template(obj, "template", "spec")
    return [
        _name(obj),
        _job_status(status),
        completions,
        duration,
        _age(obj, now),
        names,
        images,
        selector_text(spec.get("selector")),
    ]


CRON_JOB_COLUMNS = [
    NAME,
    _column("Schedule", "The schedule in Cron format."),
    _column("Timezone", "The time zone the schedule is read in."),
    _column("Suspend", "Whether new runs are suspended.", kind="boolean"),
    _column("Active", "Number of running jobs.", kind="integer"),
    _column("Last Schedule", "When a job was last scheduled."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
]


def cron_job_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    job_spec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
    names, images = _template({"spec": job_spec}, "template", "spec")
    last = status.get("lastScheduleTime")
    return [
        _name(obj),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        bool(spec.get("suspend")),
        len(_list(status.get("active"))),
        since(last, now) if last else "<none>",
        _age(obj, now),
        names,
        images,
        selector_text(job_spec.get("selector")),
    ]


# -- autoscaling ----------------------------------------------------------------------------------

HPA_COLUMNS = [
    NAME,
    _column("Reference", "The scaled object, as Kind/name."),
    _column("Targets", "Each metric's current value against its target."),
    _column("MinPods", "Lower limit of replicas.", kind="integer"),
    _column("MaxPods", "Upper limit of replicas.", kind="integer"),
    _column("Replicas", "Current number of replicas.", kind="integer"),
    AGE,
]


def _hpa_targets(spec: JSON, status: JSON) -> str:
    current = {
        (m.get("type"), _dict(m.get("resource")).get("name")): _dict(
            _dict(m.get("resource")).get("current")
        )
        for m in (_dict(x) for x in _list(status.get("currentMetrics")))
    }
    texts = []
    for metric in (_dict(m) for m in _list(spec.get("metrics"))):
        if metric.get("type") != "Resource":
            texts.append("<unknown>")
            continue
        resource = _dict(metric.get("resource"))
        target = _dict(resource.get("target"))
        now = current.get(("Resource", resource.get("name")), {})
        if target.get("averageUtilization") is not None:
            have = now.get("averageUtilization")
            value = f"{'<unknown>' if have is None else f'{have}%'}/{target['averageUtilization']}%"
        else:
            have = now.get("averageValue")
            value = f"{'<unknown>' if have is None else have}/{target.get('averageValue', '')}"
        texts.append(f"{resource.get('name', '')}: {value}")
    if not texts:
        return "<none>"
    if len(texts) > 2:
        return f"{', '.join(texts[:2])} + {len(texts) - 2} more..."
    return ", ".join(texts)


def hpa_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    ref = _dict(spec.get("scaleTargetRef"))
    return [
        _name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_targets(spec, status),
        _int(spec.get("minReplicas")) or 1,
        _int(spec.get("maxReplicas")),
        _int(status.get("currentReplicas")),
        _age(obj, now),
    ]


# pkg/printers/internalversion podDisruptionBudgetColumnDefinitions.
PDB_COLUMNS = [
    NAME,
    _column("Min Available", "The minimum number of pods that must be available."),
    _column("Max Unavailable", "The maximum number of pods that may be unavailable."),
    _column(
        "Allowed Disruptions",
        "Calculated number of pods that may be disrupted at this time.",
        kind="integer",
    ),
    AGE,
]


def pdb_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    spec = _dict(obj.get("spec"))
    least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _name(obj),
        "N/A" if least is None else str(least),
        "N/A" if most is None else str(most),
        _int(_dict(obj.get("status")).get("disruptionsAllowed")),
        _age(obj, now),
    ]


API_SERVICE_COLUMNS = [
    NAME,
    _column("Service", "The reference to the service that hosts this API endpoint."),
    _column("Available", "Whether this service is available."),
    AGE,
]


def api_service_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    """kube-aggregator's table: ``Local`` or ``namespace/name``; the ``Available`` condition's
    status, with its reason when it is not True, ``Unknown`` without one."""
    spec = _dict(obj.get("spec"))
    service = _dict(spec.get("service"))
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = "Unknown"
    for condition in _list(_dict(obj.get("status")).get("conditions")):
        if _dict(condition).get("type") == "Available":
            status, reason = str(condition.get("status", "")), condition.get("reason")
            available = status if status == "True" or not reason else f"{status} ({reason})"
            break
    return [_name(obj), where, available, _age(obj, now)]


Printer = tuple[list[JSON], Cells]

#: (group, kind) -> (column definitions, cells of one object).
PRINTERS: dict[tuple[str, str], Printer] = {
    ("apps", "Deployment"): (DEPLOYMENT_COLUMNS, deployment_cells),
    ("apps", "ReplicaSet"): (REPLICA_SET_COLUMNS, replica_set_cells),
    ("", "ReplicationController"): (REPLICA_SET_COLUMNS, replica_set_cells),
    ("apps", "StatefulSet"): (STATEFUL_SET_COLUMNS, stateful_set_cells),
    ("apps", "DaemonSet"): (DAEMON_SET_COLUMNS, daemon_set_cells),
    ("", "Service"): (SERVICE_COLUMNS, service_cells),
    ("", "ConfigMap"): (CONFIG_MAP_COLUMNS, config_map_cells),
    ("", "Secret"): (SECRET_COLUMNS, secret_cells),
    ("", "Namespace"): (NAMESPACE_COLUMNS, namespace_cells),
    ("", "ServiceAccount"): (SERVICE_ACCOUNT_COLUMNS, service_account_cells),
    ("", "ComponentStatus"): (COMPONENT_STATUS_COLUMNS, component_status_cells),
    ("", "Node"): (NODE_COLUMNS, node_cells),
    ("", "Event"): (EVENT_COLUMNS, event_cells),
    ("", "Endpoints"): (ENDPOINTS_COLUMNS, endpoints_cells),
    ("discovery.k8s.io", "EndpointSlice"): (ENDPOINT_SLICE_COLUMNS, endpoint_slice_cells),
    ("batch", "Job"): (JOB_COLUMNS, job_cells),
    ("batch", "CronJob"): (CRON_JOB_COLUMNS, cron_job_cells),
    ("autoscaling", "HorizontalPodAutoscaler"): (HPA_COLUMNS, hpa_cells),
    ("policy", "PodDisruptionBudget"): (PDB_COLUMNS, pdb_cells),
    ("apiregistration.k8s.io", "APIService"): (API_SERVICE_COLUMNS, api_service_cells),
}
