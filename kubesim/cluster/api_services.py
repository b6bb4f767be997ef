"""APIService objects, as kube-apiserver's aggregator registers them.

A cluster lists an ``apiregistration.k8s.io/v1`` APIService for every group-version it serves
(``kubectl get apiservices``), and clients read them: an operator that asks whether the
metrics API is there gets ``v1beta1.metrics.k8s.io`` and looks at its ``Available``
condition. What kube-apiserver does, and this module with it:

- **At start-up** (the autoregister controller, ``automanaged: onstart``): one APIService per
  built-in group-version, named ``{version}.{group}`` (``v1.`` for the core group), with the
  group and version priorities of kube-apiserver's table (:data:`PRIORITIES`). A
  group-version the table does not name gets none, as upstream skips it. The aggregator's own
  group, ``apiregistration.k8s.io``, never has one.
- **For custom resources** (the CRD registration controller, ``automanaged: "true"``): an
  APIService per group-version some CustomResourceDefinition serves, at priority 1000/100,
  deleted when no CRD serves it any more.
- **The metrics API** (``metrics_server=True``) is registered as metrics-server's manifest
  registers it: backed by the ``kube-system/metrics-server`` Service, priority 100/100.

The registry strategy drops a status sent with a create and marks a local APIService (one
without a Service) ``Available`` (``Local``) at once, whoever creates it; a Service-backed one
gets ``Available`` (``Passed``) from the availability controller, in a write of its own
(kubesim serves the metrics API itself, so it is always reachable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver.api_groups import (
    CRD_PRIORITY,
    METRICS_PRIORITY,
    PRIORITIES,
    available,
    name_of,
)

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"
ON_START = "onstart"  # synced once, when the API server starts
CONTINUOUSLY = "true"  # kept in step with the CRDs

METRICS_SERVICE = {"namespace": "kube-system", "name": "metrics-server", "port": 443}


def _object(group: str, version: str, priority: tuple[int, int], managed: str | None) -> JSON:
    spec: JSON = {}
    if group:
        spec["group"] = group
    spec["version"] = version
    if managed is None:  # registered by a manifest: Service-backed
        spec["service"] = dict(METRICS_SERVICE)
        spec["insecureSkipTLSVerify"] = True
    spec["groupPriorityMinimum"] = priority[0]
    spec["versionPriority"] = priority[1]
    metadata: JSON = {"name": name_of(group, version)}
    metadata["labels"] = (
        {AUTOMANAGED_LABEL: managed} if managed is not None else {"k8s-app": "metrics-server"}
    )
    return {"metadata": metadata, "spec": spec}


def _register(server: APIServer, body: JSON) -> None:
    """Create the APIService; a Service-backed one is then found available, in a write of the
    availability controller's."""
    resource = server.resource("apiservices")
    created = server.registry.create(resource, body, None).obj
    if "service" in body["spec"]:
        now = server.clock.timestamp()
        updated = {**created, "status": available("Passed", "all checks passed", now)}
        server.registry.update(resource, None, created["metadata"]["name"], updated, "status")


def install(server: APIServer) -> None:
    """Register an APIService for every built-in group-version served (and the metrics API)."""
    seen: set[tuple[str, str]] = set()
    for resource in server.resources:
        group_version = (resource.group, resource.version)
        if group_version in seen or resource.list_items_have_type:
            continue
        seen.add(group_version)
        if resource.metrics:
            _register(server, _object(*group_version, METRICS_PRIORITY, None))
        elif group_version in PRIORITIES:
            body = _object(*group_version, PRIORITIES[group_version], ON_START)
            _register(server, body)


def _custom_group_versions(server: APIServer) -> set[tuple[str, str]]:
    return {(r.group, r.version) for r in server.resources if _is_custom(r)}


def _is_custom(resource: ResourceType) -> bool:
    return resource.list_items_have_type and not resource.metrics


def sync_custom(server: APIServer) -> None:
    """After a CRD's write: an APIService for each group-version the CRDs serve, none for the
    ones they no longer serve (the CRD registration controller)."""
    resource = server.resource("apiservices")
    wanted = _custom_group_versions(server) - set(PRIORITIES)
    registered: dict[str, JSON] = {}
    for _, stored in server.storage.items(resource):
        labels = stored.obj["metadata"].get("labels") or {}
        if labels.get(AUTOMANAGED_LABEL) == CONTINUOUSLY:
            registered[stored.obj["metadata"]["name"]] = stored.obj
    for group, version in sorted(wanted):
        if name_of(group, version) not in registered:
            _register(server, _object(group, version, CRD_PRIORITY, CONTINUOUSLY))
    names = {name_of(g, v) for g, v in wanted}
    for name in sorted(set(registered) - names):
        server.registry.delete(resource, None, name, {})
