"""Server-side printing: ``Table`` answers for ``Accept: application/json;as=Table;...``.

kubectl asks for human-readable output as a ``meta.k8s.io`` ``Table``
(``application/json;as=Table;v=v1;g=meta.k8s.io,...;v=v1beta1;...,application/json``; k8s-wire.md
§4.1). When the server answers with a plain list, kubectl prints ``NAME AGE`` with an AGE taken
from the *wall* clock; with a Table it prints the server's cells as they are. The cells here are
computed against the server's *virtual* clock, so ``kubectl get`` output is deterministic.

What a Table looks like follows kube-apiserver:

* list, get: ``metadata.resourceVersion`` (and ``continue``/``remainingItemCount`` of a page),
  ``columnDefinitions``, and one row per object whose ``object`` is, by default, a
  ``PartialObjectMetadata`` with the object's metadata (``?includeObject=Object`` embeds the
  whole object, ``None`` nothing; apiserver ``handlers/response.go`` ``asTable``);
* watch: every ADDED/MODIFIED/DELETED event carries a one-row Table; column definitions only in
  the first such event (``watchEmbeddedEncoder``). ERROR events keep their ``Status``; BOOKMARK
  events carry an empty Table with the bookmark's resourceVersion.

Columns: pods as kube-apiserver's pod printer (``pkg/printers/internalversion/printers.go``:
Name, Ready, Status, Restarts, Age, and the ``-o wide`` columns IP, Node, Nominated Node,
Readiness Gates); the workload kinds, Services, ConfigMaps, Secrets, Namespaces,
ServiceAccounts and autoscalers as :mod:`kubesim.wire.printers` has them; every other kind
NAME and AGE. Init-container states are not folded into the pod STATUS column.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kubesim.apiserver.encoding import dumps, loads
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.watch import StreamServer, WatchStream
from kubesim.wire import negotiation
from kubesim.wire.ages import human_duration, parse_time, since
from kubesim.wire.printers import PRINTERS

__all__ = ["build_table", "human_duration", "negotiate", "parse_time", "requested", "since"]

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer
    from kubesim.apiserver.storage import Stored

JSON = dict[str, Any]

TABLE_GROUP = negotiation.META_GROUP
INCLUDE_OBJECT = ("None", "Metadata", "Object")

_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _column(name: str, description: str, *, priority: int = 0, fmt: str = "") -> JSON:
    return {
        "name": name,
        "type": "string",
        "format": fmt,
        "description": description,
        "priority": priority,
    }


DEFAULT_COLUMNS: list[JSON] = [
    _column("Name", _NAME_DESCRIPTION, fmt="name"),
    _column("Age", _AGE_DESCRIPTION),
]
POD_COLUMNS: list[JSON] = [
    _column("Name", _NAME_DESCRIPTION, fmt="name"),
    _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _column("Status", "The aggregate status of the containers in this pod."),
    _column(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the last "
        "container in this pod has restarted.",
    ),
    _column("Age", _AGE_DESCRIPTION),
    _column(
        "IP", "IP address allocated to the pod. Routable at least within the cluster.", priority=1
    ),
    _column("Node", "Name of the node this pod is scheduled on.", priority=1),
    _column("Nominated Node", "Name of the node this pod is nominated to run on.", priority=1),
    _column("Readiness Gates", "Pod readiness gates, as true/total.", priority=1),
]


# -- content negotiation -----------------------------------------------------------------------
def negotiate(accept: str) -> str | None:
    """The Table version (``v1``/``v1beta1``) the Accept header asks for, or None when the first
    range the server can produce is not a Table (:func:`kubesim.wire.negotiation.negotiate`)."""
    conversion = negotiation.negotiate(accept)
    if conversion is None or conversion.kind != "Table":
        return None
    return conversion.version


# -- cells -------------------------------------------------------------------------------------
def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def pod_cells(pod: JSON, now: _dt.datetime) -> list[Any]:
    """The pod printer's cells (main containers only; init containers are not looked at)."""
    metadata, spec, status = (
        _dict(pod.get("metadata")),
        _dict(pod.get("spec")),
        _dict(pod.get("status")),
    )
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in _list(status.get("conditions")):
        condition = _dict(condition)
        if condition.get("type") == "PodScheduled" and condition.get("reason") == (
            "SchedulingGated"
        ):
            reason = "SchedulingGated"
    restarts = 0
    ready = 0
    last_restart: _dt.datetime | None = None
    has_running = False
    for container in reversed(_list(status.get("containerStatuses"))):
        container = _dict(container)
        count = container.get("restartCount")
        restarts += count if isinstance(count, int) else 0
        finished = parse_time(
            _dict(_dict(container.get("lastState")).get("terminated")).get("finishedAt")
        )
        if finished is not None and (last_restart is None or finished > last_restart):
            last_restart = finished
        state = _dict(container.get("state"))
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = waiting["reason"]
        elif isinstance(terminated, dict) and terminated.get("reason"):
            reason = terminated["reason"]
        elif isinstance(terminated, dict):
            signal = terminated.get("signal") or 0
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif container.get("ready") is True and isinstance(state.get("running"), dict):
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        pod_ready = any(
            _dict(c).get("type") == "Ready" and _dict(c).get("status") == "True"
            for c in _list(status.get("conditions"))
        )
        reason = "Running" if pod_ready else "NotReady"
    if metadata.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    pod_ips = _list(status.get("podIPs"))
    # The printer reads podIPs[0]; objects written without podIPs (kubesim's workload) have podIP.
    pod_ip = _dict(pod_ips[0]).get("ip") if pod_ips else status.get("podIP")
    gates = _list(spec.get("readinessGates"))
    gates_text = "<none>"
    if gates:
        true_conditions = {
            _dict(c).get("type")
            for c in _list(status.get("conditions"))
            if _dict(c).get("status") == "True"
        }
        met = sum(1 for g in gates if _dict(g).get("conditionType") in true_conditions)
        gates_text = f"{met}/{len(gates)}"
    return [
        metadata.get("name", ""),
        f"{ready}/{len(_list(spec.get('containers')))}",
        reason,
        restarts_text,
        since(metadata.get("creationTimestamp"), now),
        pod_ip or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


def default_cells(obj: JSON, now: _dt.datetime) -> list[Any]:
    metadata = _dict(obj.get("metadata"))
    return [metadata.get("name", ""), since(metadata.get("creationTimestamp"), now)]


_Printer = Callable[[JSON, _dt.datetime], list[Any]]


def _printer(resource: ResourceType) -> tuple[list[JSON], _Printer]:
    if resource.group == "" and resource.kind == "Pod":
        return POD_COLUMNS, pod_cells
    return PRINTERS.get((resource.group, resource.kind), (DEFAULT_COLUMNS, default_cells))


def _row_conditions(resource: ResourceType, obj: JSON) -> list[JSON] | None:
    if resource.group != "" or resource.kind != "Pod":
        return None
    phase = _dict(obj.get("status")).get("phase")
    if phase == "Succeeded":
        message = "The pod has completed successfully."
    elif phase == "Failed":
        message = "The pod failed."
    else:
        return None
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


# -- tables ------------------------------------------------------------------------------------
class TableOptions:
    """What one request asked for: the Table version and what each row embeds."""

    def __init__(self, version: str, include_object: str | None = None) -> None:
        self.version = version
        self.include_object = include_object or "Metadata"

    @property
    def api_version(self) -> str:
        return f"{TABLE_GROUP}/{self.version}"


def requested(accept: str, include_object: str | None) -> TableOptions | None:
    """The Table a request asks for (Accept plus ``?includeObject=``), or None for plain JSON."""
    version = negotiate(accept)
    if version is None:
        return None
    return TableOptions(version, include_object if include_object in INCLUDE_OBJECT else None)


def now_of(server: StreamServer) -> _dt.datetime:
    """The server's virtual "now" as an instant (the epoch its timestamps are written from)."""
    clock = server.clock
    return clock.epoch + _dt.timedelta(seconds=clock.now())


def build_table(
    resource: ResourceType,
    objects: Iterable[JSON],
    options: TableOptions,
    now: _dt.datetime,
    metadata: JSON,
    *,
    headers: bool = True,
) -> JSON:
    columns, printer = _printer(resource)
    rows: list[JSON] = []
    for obj in objects:
        row: JSON = {"cells": printer(obj, now)}
        conditions = _row_conditions(resource, obj)
        if conditions is not None:
            row["conditions"] = conditions
        if options.include_object == "Object":
            row["object"] = obj
        elif options.include_object == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": options.api_version,
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": options.api_version,
        "metadata": metadata,
        "columnDefinitions": columns if headers else None,
        "rows": rows,
    }


def list_table(
    server: APIServer,
    page: Any,
    options: TableOptions,
) -> bytes:
    """A list page (:class:`~kubesim.apiserver.server.ListResult`) as an encoded Table."""
    metadata: JSON = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        metadata["continue"] = page.continue_token
        if page.remaining is not None:
            metadata["remainingItemCount"] = page.remaining
    stored: list[Stored] = page.items
    with server.lock:
        now = now_of(server)
    return dumps(build_table(page.resource, (s.obj for s in stored), options, now, metadata))


def object_table(
    server: APIServer, resource: ResourceType, stored: Stored, options: TableOptions
) -> bytes:
    """One object (a GET) as an encoded Table whose resourceVersion is the object's."""
    metadata = {"resourceVersion": str(stored.obj.get("metadata", {}).get("resourceVersion", ""))}
    with server.lock:
        now = now_of(server)
    return dumps(build_table(resource, [stored.obj], options, now, metadata))


class TableWatchStream(WatchStream):
    """A watch whose events carry Tables: column definitions in the first event only."""

    def __init__(self, stream: WatchStream, options: TableOptions) -> None:
        super().__init__(stream.server, stream.watcher, max_lines_per_chunk=stream.max_lines)
        self.options = options
        self._headers_sent = False

    def poll(self) -> bytes | None:
        chunk = super().poll()
        if not chunk:
            return chunk
        with self.server.lock:
            now = now_of(self.server)
        lines = [self._convert(line, now) for line in chunk.split(b"\n") if line]
        return b"".join(lines)

    def _convert(self, line: bytes, now: _dt.datetime) -> bytes:
        event = loads(line)
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict) or kind == "ERROR":
            return line + b"\n"
        resource = self.watcher.resource
        metadata_in = _dict(obj.get("metadata"))
        metadata: JSON = {"resourceVersion": str(metadata_in.get("resourceVersion", ""))}
        if kind == "BOOKMARK":
            table: JSON = {
                "kind": "Table",
                "apiVersion": self.options.api_version,
                "metadata": metadata,
                "columnDefinitions": None,
                "rows": None,
            }
        else:
            table = build_table(
                resource, [obj], self.options, now, metadata, headers=not self._headers_sent
            )
            self._headers_sent = True
        return dumps({"type": kind, "object": table}) + b"\n"


__all__ = [
    "DEFAULT_COLUMNS",
    "POD_COLUMNS",
    "TableOptions",
    "TableWatchStream",
    "build_table",
    "human_duration",
    "list_table",
    "negotiate",
    "object_table",
    "pod_cells",
    "requested",
]
