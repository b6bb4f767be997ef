"""The resource metrics API (``metrics.k8s.io/v1beta1``), as metrics-server serves it.

Most clusters run metrics-server (k3s, minikube's add-on, the managed services), and clients
and their tests read it: ``kubectl top pods`` and ``top nodes``, the official client's
``utils.get_pods_metrics``, autoscalers. ``Cluster(metrics_server=True)`` (``kubesim serve``
with nodes) serves it, read-only, computed on each request from what is stored:

- ``pods`` (PodMetrics, namespaced and across namespaces, with label and field selectors) for
  every running pod: per container, a CPU (nanocores) and memory (Ki) usage;
- ``nodes`` (NodeMetrics) for every node: a base usage plus its running pods'.

There are no containers to measure, so a usage is a function of the pod's uid and the
container's name (a few millicores, some MiB: small and stable), and the same seed gives the
same numbers. ``timestamp`` is the server's clock, ``window`` metrics-server's 15 s resolution.
Pods that are not running are not listed (metrics-server has no sample for them), and a get of
one is 404, as is a get of anything unknown.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st
from kubesim.apiserver.resources import ResourceType

if TYPE_CHECKING:
    from kubesim.apiserver.selectors import FieldSelector, LabelSelector
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
WINDOW = "15s"
# What a node uses besides its pods (the kubelet, the runtime, the system).
NODE_BASE_CPU_NANOCORES = 80_000_000
NODE_BASE_MEMORY_KI = 600 * 1024


def resources() -> list[ResourceType]:
    """PodMetrics and NodeMetrics, served read-only (``get`` and ``list``)."""
    return [
        ResourceType(
            group=GROUP,
            version=VERSION,
            kind=kind,
            plural=plural,
            namespaced=namespaced,
            verbs=("get", "list"),
            generation_fields=(),
            metrics=True,
        )
        for kind, plural, namespaced in (
            ("PodMetrics", "pods", True),
            ("NodeMetrics", "nodes", False),
        )
    ]


def container_usage(pod_uid: str, container: str) -> tuple[int, int]:
    """(CPU nanocores, memory Ki) of one container: 1 to 10 millicores, 4 to 64 MiB."""
    digest = hashlib.sha256(f"{pod_uid}/{container}".encode()).digest()
    cpu = (1_000_000 + int.from_bytes(digest[:4], "big") % 9_000_000) // 1000 * 1000
    memory = (4 + digest[4] % 61) * 1024 + digest[5] * 4
    return cpu, memory


def _running(pod: JSON) -> bool:
    status = pod.get("status")
    return (
        isinstance(status, dict)
        and status.get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    )


def _meta(obj: JSON, namespaced: bool) -> JSON:
    meta = obj["metadata"]
    out: JSON = {"name": meta["name"]}
    if namespaced:
        out["namespace"] = meta["namespace"]
    out["creationTimestamp"] = meta.get("creationTimestamp")
    if meta.get("labels"):
        out["labels"] = meta["labels"]
    return out


def pod_metrics(server: APIServer, pod: JSON) -> JSON:
    containers = []
    for container in pod.get("spec", {}).get("containers") or []:
        if isinstance(container, dict) and container.get("name"):
            cpu, memory = container_usage(str(pod["metadata"]["uid"]), str(container["name"]))
            containers.append(
                {"name": container["name"], "usage": {"cpu": f"{cpu}n", "memory": f"{memory}Ki"}}
            )
    return {
        "metadata": _meta(pod, namespaced=True),
        "timestamp": server.clock.timestamp(),
        "window": WINDOW,
        "containers": containers,
    }


def node_metrics(server: APIServer, node: JSON, pods: list[JSON]) -> JSON:
    cpu, memory = NODE_BASE_CPU_NANOCORES, NODE_BASE_MEMORY_KI
    for pod in pods:
        if pod.get("spec", {}).get("nodeName") == node["metadata"]["name"] and _running(pod):
            for container in pod["spec"].get("containers") or []:
                if isinstance(container, dict) and container.get("name"):
                    used = container_usage(str(pod["metadata"]["uid"]), str(container["name"]))
                    cpu, memory = cpu + used[0], memory + used[1]
    return {
        "metadata": _meta(node, namespaced=False),
        "timestamp": server.clock.timestamp(),
        "window": WINDOW,
        "usage": {"cpu": f"{cpu}n", "memory": f"{memory}Ki"},
    }


def answer(
    server: APIServer,
    resource: ResourceType,
    namespace: str | None,
    name: str | None,
    labels: LabelSelector,
    fields: FieldSelector,
) -> JSON:
    """A get (``name``) or a list of PodMetrics or NodeMetrics; the lock must be held."""
    pods = [stored.obj for _, stored in server.storage.items(server.resource("pods"))]
    objects: list[JSON]
    if resource.kind == "PodMetrics":
        objects = [
            pod
            for pod in pods
            if _running(pod) and (namespace is None or pod["metadata"]["namespace"] == namespace)
        ]
    else:
        objects = [stored.obj for _, stored in server.storage.items(server.resource("nodes"))]

    def make(obj: JSON) -> JSON:
        if resource.kind == "PodMetrics":
            return pod_metrics(server, obj)
        return node_metrics(server, obj, pods)

    if name is not None:
        for obj in objects:
            if obj["metadata"]["name"] == name:
                return {"kind": resource.kind, "apiVersion": f"{GROUP}/{VERSION}", **make(obj)}
        raise st.not_found(resource.plural, GROUP, name)
    items = [
        make(obj)
        for obj in objects
        if labels.matches(obj["metadata"].get("labels") or {})
        and fields.matches(
            {
                "metadata.name": obj["metadata"]["name"],
                "metadata.namespace": obj["metadata"].get("namespace", ""),
            }
        )
    ]
    return {
        "kind": f"{resource.kind}List",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {},
        "items": items,
    }
