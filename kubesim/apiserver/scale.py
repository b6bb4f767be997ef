"""The ``/scale`` subresource: an ``autoscaling/v1`` ``Scale`` view of an object's replicas.

Built-in kinds: pkg/registry/apps/deployment/storage/storage.go (ScaleREST), and the same in
replicaset, statefulset and core/replicationcontroller storage. Custom resources: the paths a
CRD declares in ``subresources.scale`` (staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
customresource/etcd.go, ScaleREST). A Scale carries the parent's name, namespace, uid,
resourceVersion and creationTimestamp; writing it changes only the parent's replicas.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.go_values import json_kind
from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]


def _get_path(obj: JSON, path: str) -> Any:
    node: Any = obj
    for key in path.lstrip(".").split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _set_path(obj: JSON, path: str, value: Any) -> None:
    keys = path.lstrip(".").split(".")
    node = obj
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[keys[-1]] = value


def label_selector_string(selector: Any) -> str:
    """metav1.LabelSelectorAsSelector(selector).String(), or a map selector's String()."""
    if not isinstance(selector, dict):
        return ""
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        # ReplicationController: spec.selector is a plain map (labels.SelectorFromSet).
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    terms: list[tuple[str, str]] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        terms.append((key, f"{key}={value}"))
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            continue
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op), "")
        if text:
            terms.append((key, text))
    # labels.internalSelector sorts its requirements by key.
    return ",".join(text for _, text in sorted(terms, key=lambda t: t[0]))


def scale_of(resource: ResourceType, obj: JSON) -> JSON:
    """The Scale for ``obj``, as GET .../scale answers."""
    meta = obj.get("metadata") or {}
    scale_meta = {
        key: meta[key]
        for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if key in meta
    }
    spec_replicas = _get_path(obj, resource.scale_spec_replicas_path)
    status_replicas = _get_path(obj, resource.scale_status_replicas_path)
    if resource.group == "":  # ReplicationController: a map selector
        selector = label_selector_string((obj.get("spec") or {}).get("selector"))
    elif resource.scale_label_selector_path is not None:
        found = _get_path(obj, resource.scale_label_selector_path)
        selector = found if isinstance(found, str) else ""
    else:
        selector = label_selector_string((obj.get("spec") or {}).get("selector"))
    status: JSON = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if selector:
        status["selector"] = selector
    spec: JSON = {}
    if isinstance(spec_replicas, int):
        spec["replicas"] = spec_replicas
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": spec,
        "status": status,
    }


def apply_scale(resource: ResourceType, obj: JSON, scale: Any, name: str) -> JSON:
    """``obj`` with the replicas ``scale`` asks for; raises the Status the apiserver sends."""
    if not isinstance(scale, dict):
        raise st.bad_request("the body of the request must be a Scale object")
    kind = scale.get("kind")
    if kind not in (None, "", "Scale"):
        raise st.bad_request(f"the kind of the provided object ({kind}) is not Scale")
    meta = scale.get("metadata") or {}
    if not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    if meta.get("name") not in (None, "", name):
        raise st.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )
    spec = scale.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        # The body does not decode into autoscaling/v1 Scale: a decoding error is 400.
        raise st.bad_request(
            "json: cannot unmarshal "
            f"{json_kind(spec)} into Go struct field Scale.spec of type v1.ScaleSpec"
        )
    replicas = spec.get("replicas", 0)
    if replicas is None:
        replicas = 0
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise st.bad_request(
            "json: cannot unmarshal "
            f"{json_kind(replicas)} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    if replicas < 0 or replicas > 2**31 - 1:
        # pkg/apis/autoscaling/validation ValidateScale: spec.replicas >= 0.
        raise st.invalid(
            "Scale",
            "autoscaling",
            name,
            [
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "field": "spec.replicas",
                }
            ],
        )
    updated = deep_copy(obj)
    if meta.get("resourceVersion"):
        # The Scale's resourceVersion is a precondition on the parent (scaleUpdatedObjectInfo).
        updated["metadata"]["resourceVersion"] = str(meta["resourceVersion"])
    else:
        updated["metadata"].pop("resourceVersion", None)
    _set_path(updated, resource.scale_spec_replicas_path, replicas)
    return updated
