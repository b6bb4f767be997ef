"""The resource quota controller: each ResourceQuota's ``status`` (``hard`` and ``used``).

What it counts and how is written down with the admission plugin that reads it
(:mod:`kubesim.admission.resource_quotas`); this is the controller's half, run with the other
controllers (:class:`~kubesim.cluster.workloads.Controllers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.admission.resource_quotas import (
    COMPUTE,
    ZERO,
    count_target,
    counted_pod,
    pod_matches,
    pod_usage,
    quota_applies,
    service_usage,
)
from kubesim.apiserver import quantity
from kubesim.apiserver.objects import as_dict

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer
    from kubesim.apiserver.storage import Key
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]


class QuotaUsage:
    """The usage a quota's status reports, computed from storage."""

    def __init__(self, server: APIServer) -> None:
        self.server = server

    def used(self, quota: JSON, namespace: str) -> JSON:
        hard = as_dict(as_dict(quota.get("spec")).get("hard"))
        return {key: str(self._usage(quota, namespace, key)) for key in sorted(hard)}

    def _objects(self, group: str, plural: str, namespace: str) -> list[JSON]:
        for resource in self.server.resources:
            if (resource.group, resource.plural) == (group, plural) and resource.stored_as is None:
                return [s.obj for _, s in self.server.storage.items(resource, namespace=namespace)]
        return []

    def _usage(self, quota: JSON, namespace: str, key: str) -> quantity.Quantity:
        target = count_target(key)
        if target is not None:
            objects = self._objects(*target, namespace)
            if target == ("", "pods"):
                objects = [p for p in objects if counted_pod(p) and pod_matches(quota, p)]
            return quantity.Quantity(quantity.parse(str(len(objects))).value)
        if key in ("services.loadbalancers", "services.nodeports"):
            services = self._objects("", "services", namespace)
            return quantity.Quantity(quantity.parse(str(service_usage(services, key))).value)
        if key == "requests.storage":
            total: quantity.Quantity | None = None
            for claim in self._objects("", "persistentvolumeclaims", namespace):
                raw = as_dict(
                    as_dict(as_dict(claim.get("spec")).get("resources")).get("requests")
                ).get("storage")
                claimed = quantity.parse_or_none(raw)
                if claimed is not None:
                    total = claimed if total is None else total + claimed
            return total or ZERO
        if key in COMPUTE:
            total = None  # the first pod's format wins, as Quantity.Add keeps the receiver's
            for pod in self._objects("", "pods", namespace):
                if not counted_pod(pod) or not pod_matches(quota, pod):
                    continue
                usage = pod_usage(pod, key)
                if usage is not None:
                    total = usage if total is None else total + usage
            return total or ZERO
        return ZERO


class QuotaController:
    """The resource quota controller of one server's controllers."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.quotas = self.server.resource("resourcequotas")
        self.usage = QuotaUsage(self.server)

    def quotas_in(self, namespace: str) -> list[Key]:
        """The quotas to recompute when something in ``namespace`` changed."""
        if not namespace or not self.server.storage.count(self.quotas):
            return []
        return [key for key, _ in self.server.storage.items(self.quotas, namespace=namespace)]

    def sync(self, key: Key) -> None:
        quota = self.controllers.live(self.quotas, key)
        if quota is None:
            return
        hard = dict(sorted(as_dict(as_dict(quota.get("spec")).get("hard")).items()))
        status: JSON = {"hard": hard}
        if quota_applies(quota):
            status["used"] = self.usage.used(quota, key[0])
        self.controllers.write_status(self.quotas, quota, status)
