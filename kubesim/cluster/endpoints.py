"""The Endpoints and EndpointSlice controllers: a Service's selector, resolved to pod addresses.

On a cluster, kube-controller-manager keeps, for every Service with a selector, an Endpoints
object of the same name (pkg/controller/endpoint) and one or more EndpointSlices labelled
``kubernetes.io/service-name`` (pkg/controller/endpointslice) listing the pods the selector
picks: ready ones as addresses, the others as not ready. Service meshes, ingress controllers
and many caches watch exactly these, so kubesim writes them as pods come, become ready and go.

What is written, for each pod of the namespace that the selector matches and that has an IP:

- **Endpoints**: pods grouped into subsets by the ports they resolve (a named ``targetPort``
  looked up in the pod's container ports; a pod without it is left out of that port), each
  subset's ``addresses`` (ready) and ``notReadyAddresses`` sorted by IP, with ``nodeName`` and a
  ``targetRef`` to the pod; the labels are the Service's.
- **EndpointSlices**: one per port set, ``generateName: {service}-``, owned by the Service,
  labelled ``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by``,
  ``addressType: IPv4``, each endpoint's ``ready``/``serving``/``terminating`` conditions (a
  pod in its grace period stays, ``terminating`` and not ``ready``, ``serving`` while its
  containers still run; Endpoints leave it out),
  ``nodeName`` and ``targetRef``; updated in place, and, as the reconciler does, a slice whose
  port set went away is reused for a new one rather than deleted while another is created.
  The 100-endpoints-per-slice split is not modelled (one slice per port set).

A Service without a selector is left alone (its Endpoints are the user's), an ``ExternalName``
one gets none, and a deleted Service's Endpoints are deleted (its slices go with it, through
their owner reference). The writes come from the controllers' queue (kubesim.cluster.workloads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesim.apiserver.storage import Key

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]
Write = Callable[..., Any]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def selects(service: JSON, labels: Any) -> bool:
    """Whether the Service's selector (a plain map; empty selects nothing) picks ``labels``."""
    selector = _dict(_dict(service.get("spec")).get("selector"))
    labels = _dict(labels)
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _ready(pod: JSON) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in _dict(pod.get("status")).get("conditions") or []
    )


def _terminating(pod: JSON) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _target_port(port: JSON, pod: JSON) -> int | None:
    """The pod's port number for a Service port (``podutil.FindPort``)."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = port.get("protocol", "TCP")
    for container in _dict(pod.get("spec")).get("containers") or []:
        for declared in _dict(container).get("ports") or []:
            declared = _dict(declared)
            if declared.get("name") == target and declared.get("protocol", "TCP") == protocol:
                number = declared.get("containerPort")
                return number if isinstance(number, int) else None
    return None


def _pod_ports(service: JSON, pod: JSON) -> tuple[tuple[str, int, str], ...]:
    ports = []
    for port in _dict(service.get("spec")).get("ports") or []:
        port = _dict(port)
        number = _target_port(port, pod)
        if number is not None:
            ports.append((str(port.get("name", "")), number, str(port.get("protocol", "TCP"))))
    return tuple(ports)


def _target_ref(pod: JSON) -> JSON:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}


def _ip_key(ip: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in ip.split("."))


def _port_list(ports: tuple[tuple[str, int, str], ...]) -> list[JSON]:
    out = []
    for name, number, protocol in ports:
        entry: JSON = {"port": number, "protocol": protocol}
        if name:
            entry = {"name": name, **entry}
        out.append(entry)
    return out


def sync_service(server: APIServer, write: Write, key: Key) -> None:
    """Bring the Service's Endpoints and EndpointSlices in line with its pods."""
    services = server.resource("services")
    stored = server.storage.get(services, key)
    endpoints = server.resource("endpoints")
    current = server.storage.get(endpoints, key)
    service = stored.obj if stored is not None else None
    spec = _dict(service.get("spec")) if service is not None else {}
    if service is None or not spec.get("selector") or spec.get("type") == "ExternalName":
        if service is None and current is not None:
            write(server.registry.delete, endpoints, key[0], key[1], {})
        return
    pods = [
        s.obj
        for _, s in server.storage.items(server.resource("pods"), namespace=key[0])
        if selects(service, s.obj["metadata"].get("labels"))
        and _dict(s.obj.get("status")).get("podIP")
    ]
    groups: dict[tuple[tuple[str, int, str], ...], list[JSON]] = {}
    for pod in pods:
        ports = _pod_ports(service, pod)
        if ports or not spec.get("ports"):
            groups.setdefault(ports, []).append(pod)
    # Endpoints leave terminating pods out; slices keep them, marked terminating.
    live = {ports: [p for p in pods if not _terminating(p)] for ports, pods in groups.items()}
    _write_endpoints(server, write, key, service, {k: v for k, v in live.items() if v}, current)
    _write_slices(server, write, key, service, groups)


def _write_endpoints(
    server: APIServer,
    write: Write,
    key: Key,
    service: JSON,
    groups: dict[tuple[tuple[str, int, str], ...], list[JSON]],
    current: Any,
) -> None:
    subsets = []
    for ports, pods in sorted(groups.items()):
        ready: list[JSON] = []
        not_ready: list[JSON] = []
        for pod in sorted(pods, key=lambda p: _ip_key(p["status"]["podIP"])):
            address: JSON = {"ip": pod["status"]["podIP"]}
            if pod["spec"].get("nodeName"):
                address["nodeName"] = pod["spec"]["nodeName"]
            address["targetRef"] = _target_ref(pod)
            (ready if _ready(pod) else not_ready).append(address)
        subset: JSON = {}
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        if ports:
            subset["ports"] = _port_list(ports)
        subsets.append(subset)
    labels = dict(_dict(service["metadata"].get("labels")))
    body: JSON = {"metadata": {"name": key[1], "labels": labels} if labels else {"name": key[1]}}
    if subsets:
        body["subsets"] = subsets
    endpoints = server.resource("endpoints")
    if current is None:
        write(server.registry.create, endpoints, body, key[0])
        return
    if (
        current.obj.get("subsets") == body.get("subsets")
        and _dict(current.obj["metadata"].get("labels")) == labels
    ):
        return
    replaced = {**current.obj, "metadata": {**current.obj["metadata"], "labels": labels}}
    replaced.pop("subsets", None)
    if subsets:
        replaced["subsets"] = subsets
    write(server.registry.update, endpoints, key[0], key[1], replaced, None)


def _write_slices(
    server: APIServer,
    write: Write,
    key: Key,
    service: JSON,
    groups: dict[tuple[tuple[str, int, str], ...], list[JSON]],
) -> None:
    slices = server.resource("endpointslices")
    uid = service["metadata"]["uid"]
    existing = [
        s.obj
        for _, s in server.storage.items(slices, namespace=key[0])
        if _dict(s.obj["metadata"].get("labels")).get(SERVICE_NAME_LABEL) == key[1]
        and _dict(s.obj["metadata"].get("labels")).get(MANAGED_BY_LABEL) == MANAGED_BY
    ]
    by_ports = {
        tuple(
            (str(p.get("name", "")), p.get("port"), str(p.get("protocol", "TCP")))
            for p in s.get("ports") or []
        ): s
        for s in existing
    }
    labels = {
        **_dict(service["metadata"].get("labels")),
        MANAGED_BY_LABEL: MANAGED_BY,
        SERVICE_NAME_LABEL: key[1],
    }
    wanted = groups or {(): []}  # a Service with no pods still has one, empty, slice
    desired = [
        (ports, _slice_endpoints(pods), _port_list(ports)) for ports, pods in sorted(wanted.items())
    ]
    unmatched = []
    for ports, endpoints, port_list in desired:
        old = by_ports.pop(ports, None)
        if old is None:
            unmatched.append((endpoints, port_list))
        elif (old.get("endpoints") or []) != endpoints or old["metadata"].get("labels") != labels:
            _update_slice(server, write, key, old, labels, endpoints, port_list)
    # As the reconciler does, a slice that would be deleted is updated into one that would be
    # created: a Service keeps its slice when its port set changes.
    stale = sorted(by_ports.values(), key=lambda s: str(s["metadata"]["name"]))
    for endpoints, port_list in unmatched:
        if stale:
            _update_slice(server, write, key, stale.pop(0), labels, endpoints, port_list)
            continue
        body: JSON = {
            "metadata": {
                "generateName": f"{key[1]}-",
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "name": key[1],
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": port_list,
        }
        write(server.registry.create, slices, body, key[0])
    for old in stale:
        write(server.registry.delete, slices, key[0], old["metadata"]["name"], {})


def _slice_endpoints(pods: list[JSON]) -> list[JSON]:
    endpoints = []
    for pod in sorted(pods, key=lambda p: _ip_key(p["status"]["podIP"])):
        serving = _ready(pod)
        terminating = _terminating(pod)
        endpoint: JSON = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {
                "ready": serving and not terminating,
                "serving": serving,
                "terminating": terminating,
            },
            "targetRef": _target_ref(pod),
        }
        if pod["spec"].get("nodeName"):
            endpoint["nodeName"] = pod["spec"]["nodeName"]
        endpoints.append(endpoint)
    return endpoints


def _update_slice(
    server: APIServer,
    write: Write,
    key: Key,
    old: JSON,
    labels: JSON,
    endpoints: list[JSON],
    port_list: list[JSON],
) -> None:
    replaced = {
        **old,
        "metadata": {**old["metadata"], "labels": labels},
        "endpoints": endpoints,
        "ports": port_list,
    }
    write(
        server.registry.update,
        server.resource("endpointslices"),
        key[0],
        old["metadata"]["name"],
        replaced,
        None,
    )
