"""Events, as the scheduler, the kubelet and the controllers record them.

On a cluster every component reports what it did as a core/v1 ``Event`` about an object
(``kubectl describe`` lists them; event exporters and some caches watch them): the scheduler's
``Scheduled``, the kubelet's ``Pulled``, ``Created``, ``Started`` and ``Killing``, the
ReplicaSet controller's ``SuccessfulCreate``, the Deployment controller's
``ScalingReplicaSet``. kubesim's components record the same reasons, with messages worded as a
1.33 cluster words them, one Event per occurrence (the recorder's aggregation of repeats into
``count`` is not modelled).

An Event is named ``{object}.{hex}`` as client-go's recorder names it (its hex is the virtual
time in nanoseconds, plus a sequence number, so names are unique and a function of the run),
lives in the object's namespace (``default`` for cluster-scoped objects), and is written as the
component's own write, with no field manager.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

NORMAL = "Normal"
WARNING = "Warning"


class Recorder:
    """Writes Events for one server's components."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self._sequence = itertools.count()

    def record(
        self,
        obj: JSON,
        reason: str,
        message: str,
        *,
        component: str,
        kind: str = NORMAL,
        host: str | None = None,
        field_path: str | None = None,
    ) -> None:
        events = self.server.lookup("", "v1", "events")
        if events is None:
            return
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        clock = self.server.clock
        nanoseconds = int(clock.epoch.timestamp() * 1e9 + clock.now() * 1e9)
        involved: JSON = {
            "kind": obj.get("kind", ""),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "apiVersion": obj.get("apiVersion", ""),
            "resourceVersion": meta.get("resourceVersion"),
            "fieldPath": field_path,
        }
        source: JSON = {"component": component}
        if host:
            source["host"] = host
        now = clock.timestamp()
        body: JSON = {
            "metadata": {"name": f"{meta['name']}.{nanoseconds + next(self._sequence):x}"},
            "involvedObject": {k: v for k, v in involved.items() if v},
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": kind,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host or "",
        }
        manager, self.server.field_manager = self.server.field_manager, None
        try:
            self.server.registry.create(events, body, namespace)
        except st.StatusError as exc:
            # As the recorder does, an Event the server refuses (its namespace is terminating)
            # is dropped: the component's work does not depend on it.
            self.server.trace.record("event-dropped", namespace, reason, exc.code)
        finally:
            self.server.field_manager = manager
