"""ResourceQuotas: the ResourceQuota admission plugin, and what it shares with the controller.

What a cluster does with a ResourceQuota (pkg/controller/resourcequota, plugin/pkg/admission/
resourcequota, pkg/quota/v1/evaluator/core), as kubesim does it:

- **The controller** (:mod:`kubesim.cluster.resource_quotas`) keeps ``status.hard`` equal to
  ``spec.hard`` and ``status.used`` the namespace's usage of each resource named there:
  object counts (``pods``, ``services``, ``services.loadbalancers``, ``services.nodeports``,
  ``secrets``, ``configmaps``, ``persistentvolumeclaims``, ``replicationcontrollers``,
  ``resourcequotas``, and ``count/<resource>[.<group>]`` for any kind), the compute resources
  of the pods that are not finished (``requests.cpu`` or ``cpu``, ``requests.memory`` or
  ``memory``, ``limits.cpu``, ``limits.memory``, the ``ephemeral-storage`` ones: the sum of
  the containers', at least the largest init container's), and ``requests.storage`` of the
  claims. Quantities print as apimachinery's (:mod:`kubesim.apiserver.quantity`), ``0`` when
  nothing is used. The scopes ``Terminating``, ``NotTerminating``, ``BestEffort`` and
  ``NotBestEffort`` narrow which pods count.
- **Admission**, on every create once the controller has written the quota's status: an
  object that would take a resource past ``hard`` is 403 ``pods "web" is forbidden: exceeded
  quota: compute, requested: limits.cpu=2, used: limits.cpu=0, limited: limits.cpu=1``
  (resources in name order); a pod that names no value for a compute resource the quota limits
  is 403 ``failed quota: compute: must specify limits.cpu for: app``.

Not modelled: ``scopeSelector`` and the ``PriorityClass`` and ``CrossNamespacePodAffinity``
scopes (such a quota is left without usage and never refuses), extended resources, and checks
on updates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import quantity
from kubesim.apiserver import status as st
from kubesim.apiserver.objects import as_dict, deleting

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

# Legacy count names -> the resource they count.
_COUNTS = {
    "pods": ("", "pods"),
    "services": ("", "services"),
    "secrets": ("", "secrets"),
    "configmaps": ("", "configmaps"),
    "persistentvolumeclaims": ("", "persistentvolumeclaims"),
    "replicationcontrollers": ("", "replicationcontrollers"),
    "resourcequotas": ("", "resourcequotas"),
}
# Compute resource names -> (the pod's resource list, the resource).
COMPUTE = {
    "cpu": ("requests", "cpu"),
    "memory": ("requests", "memory"),
    "ephemeral-storage": ("requests", "ephemeral-storage"),
    "requests.cpu": ("requests", "cpu"),
    "requests.memory": ("requests", "memory"),
    "requests.ephemeral-storage": ("requests", "ephemeral-storage"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
    "limits.ephemeral-storage": ("limits", "ephemeral-storage"),
}
_SUPPORTED_SCOPES = frozenset({"Terminating", "NotTerminating", "BestEffort", "NotBestEffort"})
ZERO = quantity.parse("0")


def count_target(name: str) -> tuple[str, str] | None:
    """The (group, plural) a count resource counts: ``pods``, ``count/deployments.apps``."""
    if name in _COUNTS:
        return _COUNTS[name]
    if name.startswith("count/"):
        plural, _, group = name[len("count/") :].partition(".")
        return group, plural
    return None


def quota_applies(quota: JSON) -> bool:
    spec = as_dict(quota.get("spec"))
    if spec.get("scopeSelector"):
        return False
    return all(scope in _SUPPORTED_SCOPES for scope in spec.get("scopes") or [])


def pod_matches(quota: JSON, pod: JSON) -> bool:
    scopes = as_dict(quota.get("spec")).get("scopes") or []
    spec = as_dict(pod.get("spec"))
    terminating = spec.get("activeDeadlineSeconds") is not None
    best_effort = not any(
        as_dict(as_dict(c).get("resources")).get(kind)
        for field in ("containers", "initContainers")
        for c in spec.get(field) or []
        for kind in ("requests", "limits")
    )
    checks = {
        "Terminating": terminating,
        "NotTerminating": not terminating,
        "BestEffort": best_effort,
        "NotBestEffort": not best_effort,
    }
    return all(checks.get(scope, False) for scope in scopes)


def counted_pod(pod: JSON) -> bool:
    """QuotaV1Pod: a pod counts until it has finished or is being deleted."""
    phase = as_dict(pod.get("status")).get("phase")
    return phase not in ("Succeeded", "Failed") and not deleting(pod)


def pod_usage(pod: JSON, key: str) -> quantity.Quantity | None:
    """A pod's use of compute resource ``key``: its containers' sum, at least its largest init
    container's (PodUsageFunc); None when no container names it."""
    kind, name = COMPUTE[key]
    spec = as_dict(pod.get("spec"))

    def value(container: Any) -> quantity.Quantity | None:
        raw = as_dict(as_dict(as_dict(container).get("resources")).get(kind)).get(name)
        return quantity.parse_or_none(raw)

    total: quantity.Quantity | None = None
    for container in spec.get("containers") or []:
        used = value(container)
        if used is not None:
            total = used if total is None else total + used
    for container in spec.get("initContainers") or []:
        used = value(container)
        if used is not None and (total is None or used.value > total.value):
            total = used
    return total


def service_usage(services: list[JSON], key: str) -> int:
    count = 0
    for service in services:
        spec = as_dict(service.get("spec"))
        kind = spec.get("type", "ClusterIP")
        if key == "services.loadbalancers" and kind == "LoadBalancer":
            count += 1
        elif key == "services.nodeports" and kind in ("NodePort", "LoadBalancer"):
            count += len(spec.get("ports") or [])
    return count


def admit(server: APIServer, resource: ResourceType, obj: JSON, namespace: str, name: str) -> None:
    """The ResourceQuota plugin on a create of ``obj`` into ``namespace``."""
    quotas = server.resource("resourcequotas")
    for _, stored in server.storage.items(quotas, namespace=namespace):
        quota = stored.obj
        status = as_dict(quota.get("status"))
        hard, used = as_dict(status.get("hard")), as_dict(status.get("used"))
        if not hard or not quota_applies(quota):
            continue
        is_pod = (resource.group, resource.plural) == ("", "pods")
        if is_pod and not pod_matches(quota, obj):
            continue
        delta = _delta(resource, obj, hard)
        if is_pod:
            missing = _missing(obj, hard)
            if missing:
                qname = quota["metadata"]["name"]
                why = f"failed quota: {qname}: must specify {missing}"
                raise st.forbidden(resource.plural, resource.group, name, why)
        exceeded = []
        for key, amount in sorted(delta.items()):
            limit = quantity.parse_or_none(hard.get(key))
            current = quantity.parse_or_none(used.get(key)) or ZERO
            if limit is not None and current.value + amount.value > limit.value:
                exceeded.append(key)
        if exceeded:
            why = (
                f"exceeded quota: {quota['metadata']['name']}, "
                f"requested: {_listed(exceeded, {k: str(v) for k, v in delta.items()})}, "
                f"used: {_listed(exceeded, used)}, limited: {_listed(exceeded, hard)}"
            )
            raise st.forbidden(resource.plural, resource.group, name, why)


def _listed(keys: list[str], values: JSON) -> str:
    """prettyPrint of a resource list masked to ``keys``: ``k=v`` in name order."""
    return ",".join(f"{k}={values.get(k, '0')}" for k in keys)


def _delta(resource: ResourceType, obj: JSON, hard: JSON) -> dict[str, quantity.Quantity]:
    one = quantity.parse("1")
    delta: dict[str, quantity.Quantity] = {}
    for key in hard:
        target = count_target(key)
        if target == (resource.group, resource.plural):
            delta[key] = one
        elif resource.plural == "pods" and resource.group == "" and key in COMPUTE:
            used = pod_usage(obj, key)
            if used is not None:
                delta[key] = used
        elif resource.plural == "services" and key in (
            "services.loadbalancers",
            "services.nodeports",
        ):
            count = service_usage([obj], key)
            if count:
                delta[key] = quantity.parse(str(count))
        elif resource.plural == "persistentvolumeclaims" and key == "requests.storage":
            raw = as_dict(as_dict(as_dict(obj.get("spec")).get("resources")).get("requests")).get(
                "storage"
            )
            parsed = quantity.parse_or_none(raw)
            if parsed is not None:
                delta[key] = parsed
    return delta


# The compute resources every container must name when a quota limits them (the pod
# evaluator's validationSet: not ephemeral storage).
_MUST_SPECIFY = ("cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory")


def _missing(pod: JSON, hard: JSON) -> str:
    """The containers that name no value for a compute resource the quota limits, as the pod
    evaluator's Constraints words them (``limits.cpu for: app; memory for: app,side``)."""
    spec = as_dict(pod.get("spec"))
    containers = [
        as_dict(c) for field in ("containers", "initContainers") for c in spec.get(field) or []
    ]
    parts = []
    for key in sorted(k for k in hard if k in _MUST_SPECIFY):
        kind, name = COMPUTE[key]
        lacking = sorted(
            {
                str(c.get("name"))
                for c in containers
                if name not in as_dict(as_dict(c.get("resources")).get(kind))
            }
        )
        if lacking:
            parts.append(f"{key} for: {','.join(lacking)}")
    return "; ".join(parts)


class ResourceQuotaAdmission:
    """The ResourceQuota plugin in a server's admission chain: it acts only in namespaces
    where a quota exists (a live count of quotas makes that one test per create)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self._any_quota = server.storage.live_objects(server.resource("resourcequotas"))

    def admit_create(
        self, resource: ResourceType, obj: JSON, namespace: str, sent_name: str
    ) -> None:
        if self._any_quota:
            admit(self.server, resource, obj, namespace, sent_name)

    def admit_update(
        self, resource: ResourceType, old: JSON, obj: JSON, subresource: str | None
    ) -> None:
        """Updates are not checked (the module's "Not modelled")."""


__all__ = ["ResourceQuotaAdmission", "admit", "pod_usage"]
