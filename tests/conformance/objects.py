"""Request bodies and paths for the conformance tests (plain dicts, no client library)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    node: str | None = None,
    image: str = "nginx:1.25",
    containers: list[JSON] | None = None,
) -> JSON:
    metadata: JSON = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    spec: JSON = {"containers": containers or [{"name": "main", "image": image}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def configmap(
    name: str,
    data: dict[str, str] | None = None,
    *,
    labels: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
) -> JSON:
    metadata: JSON = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    if finalizers is not None:
        metadata["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


def deployment(name: str, *, replicas: int = 1, image: str = "nginx:1.25") -> JSON:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def pods(ns: str, name: str | None = None) -> str:
    base = f"/api/v1/namespaces/{ns}/pods"
    return f"{base}/{name}" if name else base


def configmaps(ns: str, name: str | None = None) -> str:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    return f"{base}/{name}" if name else base


def deployments(ns: str, name: str | None = None) -> str:
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    return f"{base}/{name}" if name else base
