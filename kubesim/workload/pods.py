"""Realistic, deterministic objects for workloads: pods shaped like a Deployment's.

A pod here is about 1.8 KB of JSON with one container and 3 KB with two, close to the 3 to 4 KB
of a typical Deployment's pod as a real API server returns it. Every varying field
(labels, node, IPs) is drawn from a :class:`~kubesim._core.ChoiceSource`.
"""

from __future__ import annotations

from typing import Any

from kubesim._core import ChoiceSource, choose
from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

TIERS = ("frontend", "backend")


def make_pod(
    name: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    containers: int = 1,
    node: str = "node-0",
    pod_ip: str = "10.0.0.1",
    phase: str = "Running",
) -> JSON:
    """A realistic pod as the server stores it (wire JSON, no server-set metadata yet).

    Labels (``app`` from the name by default), ``containers`` containers with images, ports,
    probes, env and resources, a node, a pod IP and container statuses for ``phase``: the size
    and shape of a real pod, so memory figures are realistic. Pass it to
    ``server.create("pods", pod, namespace=...)``.
    """
    if containers < 1:
        raise ValueError(f"a pod needs at least one container, got containers={containers}")
    app = (labels or {}).get("app", name.rsplit("-", 1)[0])
    specs = []
    statuses = []
    for index in range(containers):
        cname = "app" if index == 0 else f"sidecar-{index}"
        specs.append(
            {
                "name": cname,
                "image": f"registry.example.com/{app}/{cname}:1.{index}.0",
                "ports": [{"containerPort": 8080 + index, "protocol": "TCP"}],
                "env": [{"name": f"ENV_{n}", "value": f"value-{n}"} for n in range(7)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080 + index}},
                "livenessProbe": {"httpGet": {"path": "/live", "port": 8080 + index}},
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    }
                ],
            }
        )
        statuses.append(
            {
                "name": cname,
                "containerID": f"containerd://{namespace}-{name}-{cname}",
                "image": specs[-1]["image"],
                "imageID": f"registry.example.com/{app}/{cname}@sha256:{index:064d}",
                "ready": phase == "Running",
                "restartCount": 0,
                "started": phase == "Running",
                "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {"app": app})},
        "spec": {
            "containers": specs,
            "nodeName": node,
            "serviceAccountName": "default",
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
                }
            ],
        },
        "status": {
            "phase": phase,
            "podIP": pod_ip,
            "hostIP": "192.168.0.10",
            "conditions": [
                {"type": t, "status": "True"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": statuses,
        },
    }


def populate_pods(
    server: APIServer,
    choices: ChoiceSource,
    *,
    pods: int,
    containers: int = 1,
    namespaces: int = 1,
    nodes: int = 3,
) -> list[tuple[str, str]]:
    """Create ``namespaces`` namespaces and ``pods`` pods spread over them; return their keys."""
    if pods < 0 or namespaces < 1 or nodes < 1:
        raise ValueError(
            f"populate_pods needs pods >= 0, namespaces >= 1, nodes >= 1; got pods={pods}, "
            f"namespaces={namespaces}, nodes={nodes}"
        )
    names = [f"team-{n}" for n in range(namespaces)]
    for ns in names:
        server.create("namespaces", {"metadata": {"name": ns}})
    keys = []
    for index in range(pods):
        namespace = names[index % namespaces]
        app = f"app-{index % 10}"
        name = f"{app}-{index:05d}"
        labels = {"app": app, "tier": choose(choices, TIERS)}
        pod = make_pod(
            name,
            namespace,
            labels=labels,
            containers=containers,
            node=f"node-{choices.integer(0, nodes - 1)}",
            pod_ip=f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}",
        )
        server.create("pods", pod, namespace=namespace)
        keys.append((namespace, name))
    return keys
