"""LimitRanges: their defaults, and the LimitRanger admission plugin on pods.

Every kube-apiserver runs the ``LimitRanger`` admission plugin (plugin/pkg/admission/limitranger),
so a namespace with a LimitRange of ``type: Container`` changes the pods created in it:

- **The LimitRange itself** is defaulted (``SetDefaults_LimitRangeItem``): a Container item's
  ``default`` (limits) takes ``max`` where unset, its ``defaultRequest`` takes ``default``,
  then ``min``.
- **Mutation** on a pod's create: each container (and init container) gets the ``default``
  limits and ``defaultRequest`` requests it does not set, and the pod the annotation
  ``kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory request for container app;
  cpu limit for container app``.
- **Validation**, after: every container's requests and limits against each Container item's
  ``min``, ``max`` and ``maxLimitRequestRatio``, refused with 403 Forbidden and the plugin's
  words (``pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2``;
  several are listed in brackets, resources in name order).

Quantities are compared and printed as apimachinery does (:mod:`kubesim.apiserver.quantity`).
Not modelled: ``type: Pod`` (the sum over a pod's containers) and ``type:
PersistentVolumeClaim`` items, and checks on updates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubesim.apiserver import quantity
from kubesim.apiserver import status as st
from kubesim.apiserver.objects import as_dict
from kubesim.apiserver.quantity import Quantity

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

ANNOTATION = "kubernetes.io/limit-ranger"
CONTAINER = "Container"


def admit_pod(
    server: APIServer, resource: ResourceType, pod: JSON, namespace: str, name: str
) -> None:
    """The plugin's mutation then validation of a pod being created in ``namespace`` (refused
    by ``name``, as it was sent; ``resource`` is the server's limitranges). ``pod`` is the
    server's own copy at its top level and in metadata and spec; whatever nested value changes
    is rebuilt, never written into."""
    ranges = [stored.obj for _, stored in server.storage.items(resource, namespace=namespace)]
    items = [
        item
        for limit_range in ranges
        for item in as_dict(limit_range.get("spec")).get("limits") or []
        if isinstance(item, dict) and item.get("type") == CONTAINER
    ]
    if not items:
        return
    spec = pod["spec"] = dict(as_dict(pod.get("spec")))
    notes: list[str] = []
    for field, what in (("containers", "container"), ("initContainers", "init container")):
        if isinstance(spec.get(field), list):
            spec[field] = [_merge(c, items, what, notes) for c in spec[field]]
    if notes:
        meta = pod["metadata"]
        meta["annotations"] = {
            **as_dict(meta.get("annotations")),
            ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes),
        }
    errors = [
        error
        for item in items
        for field in ("containers", "initContainers")
        for container in spec.get(field) or []
        if isinstance(container, dict)
        for error in _violations(item, container)
    ]
    if errors:
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise st.forbidden("pods", "", name, message)


def _merge(container: Any, items: list[JSON], what: str, notes: list[str]) -> Any:
    """mergeContainerResources: the defaults the container lacks, noted for the annotation."""
    if not isinstance(container, dict):
        return container
    resources = as_dict(container.get("resources"))
    limits, requests = (
        dict(as_dict(resources.get("limits"))),
        dict(as_dict(resources.get("requests"))),
    )
    set_limits: list[str] = []
    set_requests: list[str] = []
    for item in items:
        for key, value in as_dict(item.get("default")).items():
            if key not in limits:
                limits[key] = value
                set_limits.append(key)
        for key, value in as_dict(item.get("defaultRequest")).items():
            if key not in requests:
                requests[key] = value
                set_requests.append(key)
    if not set_limits and not set_requests:
        return container
    name = container.get("name")
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {what} {name}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {what} {name}")
    merged = {**resources}
    if limits:
        merged["limits"] = limits
    if requests:
        merged["requests"] = requests
    return {**container, "resources": merged}


def _bounds(
    bounds: Any, requests: JSON, limits: JSON
) -> Iterator[tuple[str, Quantity, Quantity | None, Quantity | None]]:
    """Each resource a ``min``, ``max`` or ``maxLimitRequestRatio`` map bounds (in key order,
    unparsable bounds skipped), with the container's request and limit for it."""
    for key, bound in sorted(as_dict(bounds).items()):
        enforced = quantity.parse_or_none(bound)
        if enforced is not None:
            request = quantity.parse_or_none(requests.get(key))
            yield key, enforced, request, quantity.parse_or_none(limits.get(key))


def _violations(item: JSON, container: JSON) -> list[str]:
    """minConstraint, maxConstraint and limitRequestRatioConstraint of one item."""
    resources = as_dict(container.get("resources"))
    requests, limits = as_dict(resources.get("requests")), as_dict(resources.get("limits"))
    errors: list[str] = []
    for key, enforced, request, limit in _bounds(item.get("min"), requests, limits):
        if request is None:
            errors.append(
                f"minimum {key} usage per {CONTAINER} is {enforced}.  No request is specified"
            )
        elif request.value < enforced.value:
            errors.append(
                f"minimum {key} usage per {CONTAINER} is {enforced}, but request is {request}"
            )
        elif limit is not None and limit.value < enforced.value:
            errors.append(
                f"minimum {key} usage per {CONTAINER} is {enforced}, but limit is {limit}"
            )
    for key, enforced, request, limit in _bounds(item.get("max"), requests, limits):
        if limit is None:
            errors.append(
                f"maximum {key} usage per {CONTAINER} is {enforced}.  No limit is specified"
            )
        elif limit.value > enforced.value:
            errors.append(
                f"maximum {key} usage per {CONTAINER} is {enforced}, but limit is {limit}"
            )
        elif request is not None and request.value > enforced.value:
            errors.append(
                f"maximum {key} usage per {CONTAINER} is {enforced}, but request is {request}"
            )
    ratios = item.get("maxLimitRequestRatio")
    for key, enforced, request, limit in _bounds(ratios, requests, limits):
        prefix = f"{key} max limit to request ratio per {CONTAINER} is {enforced}"
        if request is None or request.value == 0:
            errors.append(f"{prefix}, but no request is specified or request is 0")
        elif limit is None or limit.value == 0:
            errors.append(f"{prefix}, but no limit is specified or limit is 0")
        elif limit.value / request.value > enforced.value:
            errors.append(f"{prefix}, but provided ratio is {float(limit.value / request.value):f}")
    return errors


class LimitRanger:
    """The LimitRanger plugin in a server's admission chain: it acts on pods, only in
    namespaces where a LimitRange exists (a live count makes that one test per create)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.limit_ranges = server.resource("limitranges")
        self._any_limit_range = server.storage.live_objects(self.limit_ranges)

    def admit_create(
        self, resource: ResourceType, obj: JSON, namespace: str, sent_name: str
    ) -> None:
        if self._any_limit_range and resource.group == "" and resource.kind == "Pod":
            admit_pod(self.server, self.limit_ranges, obj, namespace, sent_name)

    def admit_update(
        self, resource: ResourceType, old: JSON, obj: JSON, subresource: str | None
    ) -> None:
        """Updates are not checked (kubesim models the plugin on creates)."""


__all__ = ["ANNOTATION", "LimitRanger", "admit_pod"]
