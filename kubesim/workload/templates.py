"""Objects of any kind for a workload: realistic templates of the common kinds, the rest from
their schema, or cloned from an object the user gave.

A scenario's workload steps create, change and delete objects of every kind the store lists
and watches (:mod:`kubesim.scenario.workload`). Each new object comes from, in this order:

1. a **model** of that kind from the user's starting world (``--objects``, ``Setup(objects=)``):
   the object is cloned under a new name, so the labels, annotations and fields the store
   filters on are the ones it meets;
2. a **template** of a common kind (:data:`TEMPLATES`): pods shaped like a Deployment's, Jobs,
   Services, EndpointSlices, ConfigMaps, Secrets, Nodes, Deployments, ReplicaSets,
   StatefulSets, DaemonSets, PersistentVolumeClaims, ServiceAccounts, Ingresses;
3. the kind's **schema** (a custom resource's ``openAPIV3Schema``): every required field,
   recursively, with the simplest value its type allows (the first of an ``enum``, the
   ``minimum`` of a number), and a ``spec`` when the schema has one;
4. else the bare object (``apiVersion``, ``kind``, ``metadata``), which many kinds accept
   (Roles, ConfigMaps, Leases, ...). The workload tries it on the server with a dry run first:
   a kind that refuses it (a RoleBinding needs its ``roleRef``) is a :class:`NoTemplate`
   error naming the way out (``--objects``).

Every template is a pure function of the key and a number: no randomness, so the same scenario
writes the same bytes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kubesim.apiserver.resources import ResourceType
from kubesim.workload.manifests import PINNED_ANNOTATION
from kubesim.workload.pods import make_pod

JSON = dict[str, Any]
Template = Callable[[str, str | None, int, dict[str, str]], JSON]


class NoTemplate(ValueError):
    """kubesim cannot build objects of a kind: no template, no schema, no model given."""


def _container(app: str) -> JSON:
    return {
        "name": "app",
        "image": f"registry.example.com/{app}:1.0.0",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }


def _pod_template(labels: dict[str, str], *, restart: str = "Always") -> JSON:
    app = labels.get("app", "web")
    return {
        "metadata": {"labels": dict(labels)},
        "spec": {"containers": [_container(app)], "restartPolicy": restart},
    }


def _meta(name: str, namespace: str | None, labels: dict[str, str]) -> JSON:
    meta: JSON = {"name": name, "labels": dict(labels)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _selector(labels: dict[str, str]) -> dict[str, str]:
    """What a controller of these objects selects its pods by: the app label, or all of them."""
    return {"app": labels["app"]} if "app" in labels else dict(labels)


def pod(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    return make_pod(
        name,
        namespace or "default",
        labels=labels,
        node=f"node-{number % 3}",
        pod_ip=f"10.1.{number // 256 % 256}.{number % 256}",
    )


def job(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 2,
            "template": _pod_template(labels, restart="Never"),
        },
    }


def service(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "selector": _selector(labels),
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


def endpoint_slice(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    service_name = labels.get("app", name)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _meta(name, namespace, {"kubernetes.io/service-name": service_name, **labels}),
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [f"10.1.{number // 256 % 256}.{(number + i) % 256}"],
                "conditions": {"ready": True},
                "nodeName": f"node-{(number + i) % 3}",
            }
            for i in range(2)
        ],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def config_map(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, namespace, labels),
        "data": {f"key-{i}": f"value-{number}-{i}" for i in range(3)},
    }


def secret(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace, labels),
        "type": "Opaque",
        "stringData": {"token": f"token-{number:06d}"},
    }


def node(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(name, None, {"kubernetes.io/hostname": name, **labels}),
        "spec": {"podCIDR": f"10.{100 + number % 100}.0.0/24"},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [
                {"type": "InternalIP", "address": f"192.168.{number // 256 % 256}.{number % 256}"}
            ],
        },
    }


def _replicated(kind: str, api_version: str, replicas: bool = True) -> Template:
    def build(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
        spec: JSON = {
            "selector": {"matchLabels": _selector(labels)},
            "template": _pod_template(labels),
        }
        if replicas:
            spec["replicas"] = 2
        if kind == "StatefulSet":
            spec["serviceName"] = name
        return {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": _meta(name, namespace, labels),
            "spec": spec,
        }

    return build


def persistent_volume_claim(
    name: str, namespace: str | None, number: int, labels: dict[str, str]
) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def service_account(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    meta = _meta(name, namespace, labels)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def ingress(name: str, namespace: str | None, number: int, labels: dict[str, str]) -> JSON:
    backend = {"service": {"name": labels.get("app", name), "port": {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "rules": [
                {
                    "host": f"{name}.example.com",
                    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
                }
            ]
        },
    }


# (group, plural) -> (name prefix, template). The prefixes keep the names of different kinds
# apart (a store keyed by namespace/name alone does not mix a Service with a pod).
TEMPLATES: dict[tuple[str, str], tuple[str, Template]] = {
    ("", "pods"): ("web", pod),
    ("batch", "jobs"): ("job", job),
    ("", "services"): ("svc", service),
    ("discovery.k8s.io", "endpointslices"): ("slice", endpoint_slice),
    ("", "configmaps"): ("config", config_map),
    ("", "secrets"): ("secret", secret),
    ("", "nodes"): ("worker", node),
    ("apps", "deployments"): ("deploy", _replicated("Deployment", "apps/v1")),
    ("apps", "replicasets"): ("rs", _replicated("ReplicaSet", "apps/v1")),
    ("apps", "statefulsets"): ("sts", _replicated("StatefulSet", "apps/v1")),
    ("apps", "daemonsets"): ("ds", _replicated("DaemonSet", "apps/v1", replicas=False)),
    ("", "persistentvolumeclaims"): ("claim", persistent_volume_claim),
    ("", "serviceaccounts"): ("account", service_account),
    ("networking.k8s.io", "ingresses"): ("ingress", ingress),
}


def name_prefix(resource: ResourceType) -> str:
    """The prefix of the names the workload gives objects of ``resource``."""
    known = TEMPLATES.get((resource.group, resource.plural))
    return known[0] if known is not None else resource.singular or resource.kind.lower()


def build(
    resource: ResourceType,
    name: str,
    namespace: str | None,
    number: int,
    labels: dict[str, str],
    *,
    model: Mapping[str, Any] | None = None,
) -> JSON:
    """A new object of ``resource`` named ``name``, carrying ``labels`` (see the module doc)."""
    if model is not None:
        return clone(model, name, namespace, labels)
    known = TEMPLATES.get((resource.group, resource.plural))
    if known is not None:
        return known[1](name, namespace, number, labels)
    obj = from_schema(resource.openapi_schema) if resource.openapi_schema is not None else {}
    obj.update(apiVersion=resource.api_version, kind=resource.kind)
    obj["metadata"] = _meta(name, namespace if resource.namespaced else None, labels)
    return obj


# Fields the server sets: a clone drops them, as `kubectl apply` of an exported object would.
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def clone(
    model: Mapping[str, Any], name: str, namespace: str | None, labels: dict[str, str]
) -> JSON:
    """``model`` under a new name (and namespace), its labels kept and ``labels`` added,
    without what the server sets, its status or a ``generateName``."""
    obj: JSON = copy.deepcopy(dict(model))
    meta: JSON = dict(obj.get("metadata") or {})
    for key in (*_SERVER_SET, "generateName", "deletionTimestamp", "ownerReferences"):
        meta.pop(key, None)
    meta["name"] = name
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    annotations = meta.get("annotations")
    if annotations and PINNED_ANNOTATION in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != PINNED_ANNOTATION}
    obj["metadata"] = meta
    obj.pop("status", None)
    return obj


def from_schema(schema: Mapping[str, Any]) -> JSON:
    """The simplest object an OpenAPI v3 (structural) schema accepts, with its ``spec``."""
    value = _instance(schema, depth=0)
    obj: JSON = value if isinstance(value, dict) else {}
    spec = (schema.get("properties") or {}).get("spec")
    if isinstance(spec, Mapping) and "spec" not in obj:
        obj["spec"] = _instance(spec, depth=1)
    obj.pop("metadata", None)
    obj.pop("status", None)
    return obj


_SCALARS: dict[str, Any] = {"string": "value", "integer": 1, "number": 1, "boolean": False}


def _instance(schema: Mapping[str, Any], *, depth: int) -> Any:
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if schema.get("x-kubernetes-int-or-string"):
        return 1
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        out: JSON = {}
        if depth < 12:
            for key in schema.get("required") or ():
                if key in properties:
                    out[key] = _instance(properties[key], depth=depth + 1)
                else:
                    out[key] = "value"
        return out
    if kind == "array":
        items = schema.get("items")
        count = int(schema.get("minItems") or 0)
        if isinstance(items, Mapping) and depth < 12:
            return [_instance(items, depth=depth + 1) for _ in range(count)]
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", _SCALARS[kind])
    if kind == "string":
        length = int(schema.get("minLength") or 0)
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2026-01-01T00:00:00Z"
        return "value" if length <= 5 else "v" * length
    if kind == "boolean":
        return False
    return {}  # x-kubernetes-preserve-unknown-fields, or untyped
