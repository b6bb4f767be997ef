"""Serving one resource in two versions: HorizontalPodAutoscalers as ``autoscaling/v1`` too.

kube-apiserver stores each object once and converts it to the version a request names. kubesim
stores HorizontalPodAutoscalers as ``autoscaling/v2`` (the preferred version, the one the
Python API and kubectl use) and serves ``autoscaling/v1`` through a *view*: a resource whose
objects live in its storage resource's collection, converted on the way in and out
(:mod:`kubesim.wire.routes`). The conversion follows pkg/apis/autoscaling/v1/conversion.go:

- v1 has one metric, ``targetCPUUtilizationPercentage``: the CPU utilization target among v2's
  ``metrics``. Every other metric travels in the ``autoscaling.alpha.kubernetes.io/metrics``
  annotation, in v1's alpha ``MetricSpec`` shape; the status' ``currentMetrics``, its
  ``conditions`` and the spec's ``behavior`` in three more annotations. Converting back reads
  them and removes them, so a v1 client's read-modify-write loses nothing.
- A v1 object with no metric at all gets the CPU target of 80% that v1 always implied.

Only these annotations' round trip is modelled, not their exact bytes (Go's encoder writes
the same fields in the same order, so they agree in practice).

A custom resource's other served versions are views too (:mod:`kubesim.apiserver.crds`): the
conversion strategy ``None``, which changes ``apiVersion`` and nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kubesim.apiserver.encoding import dumps, loads
from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
)
# autoscaling.DefaultCPUUtilization
DEFAULT_CPU_UTILIZATION = 80


class ConversionError(ValueError):
    """A body that cannot be converted (a round-trip annotation that is not the JSON it must
    be): the server answers 400, as decoding fails on a cluster."""


def _set(out: JSON, key: str, value: Any) -> None:
    """``out[key] = value`` unless the value is unset (Go's ``omitempty``)."""
    if value is not None:
        out[key] = value


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _is_cpu_utilization(metric: JSON) -> bool:
    resource = _dict(metric.get("resource"))
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and _dict(resource.get("target")).get("averageUtilization") is not None
    )


# -- metric specs: v2 <-> v1's alpha shape ------------------------------------------------------


def _metric_to_v1(metric: JSON) -> JSON:
    kind = metric.get("type")
    out: JSON = {"type": kind}
    if kind == "Object":
        source = _dict(metric.get("object"))
        target, ident = _dict(source.get("target")), _dict(source.get("metric"))
        described = _dict(source.get("describedObject"))
        v1: JSON = {
            "target": {k: described[k] for k in ("kind", "name", "apiVersion") if k in described}
        }
        v1["metricName"] = ident.get("name", "")
        v1["targetValue"] = target.get("value", "0")
        _set(v1, "selector", ident.get("selector"))
        _set(v1, "averageValue", target.get("averageValue"))
        out["object"] = v1
    elif kind == "Pods":
        source = _dict(metric.get("pods"))
        target, ident = _dict(source.get("target")), _dict(source.get("metric"))
        v1 = {
            "metricName": ident.get("name", ""),
            "targetAverageValue": target.get("averageValue", "0"),
        }
        _set(v1, "selector", ident.get("selector"))
        out["pods"] = v1
    elif kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = _dict(metric.get(field))
        target = _dict(source.get("target"))
        v1 = {"name": source.get("name", "")}
        _set(v1, "targetAverageUtilization", target.get("averageUtilization"))
        _set(v1, "targetAverageValue", target.get("averageValue"))
        if kind == "ContainerResource":
            v1["container"] = source.get("container", "")
        out[field] = v1
    elif kind == "External":
        source = _dict(metric.get("external"))
        target, ident = _dict(source.get("target")), _dict(source.get("metric"))
        v1 = {"metricName": ident.get("name", "")}
        _set(v1, "metricSelector", ident.get("selector"))
        _set(v1, "targetValue", target.get("value"))
        _set(v1, "targetAverageValue", target.get("averageValue"))
        out["external"] = v1
    return out


def _metric_to_v2(metric: JSON) -> JSON:
    kind = metric.get("type")
    out: JSON = {"type": kind}
    if kind == "Object":
        v1 = _dict(metric.get("object"))
        value, average = v1.get("targetValue"), v1.get("averageValue")
        target: JSON = {"type": "Value" if average is None else "AverageValue"}
        _set(target, "value", value)
        _set(target, "averageValue", average)
        out["object"] = {
            "describedObject": _dict(v1.get("target")),
            "target": target,
            "metric": _identifier(v1.get("metricName"), v1.get("selector")),
        }
    elif kind == "Pods":
        v1 = _dict(metric.get("pods"))
        target = {"type": "AverageValue", "averageValue": v1.get("targetAverageValue", "0")}
        out["pods"] = {
            "metric": _identifier(v1.get("metricName"), v1.get("selector")),
            "target": target,
        }
    elif kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        v1 = _dict(metric.get(field))
        utilization, average = v1.get("targetAverageUtilization"), v1.get("targetAverageValue")
        target = {"type": "Utilization" if utilization is not None else "AverageValue"}
        _set(target, "averageValue", average)
        _set(target, "averageUtilization", utilization)
        source: JSON = {"name": v1.get("name", ""), "target": target}
        if kind == "ContainerResource":
            source["container"] = v1.get("container", "")
        out[field] = source
    elif kind == "External":
        v1 = _dict(metric.get("external"))
        value, average = v1.get("targetValue"), v1.get("targetAverageValue")
        target = {"type": "AverageValue" if value is None else "Value"}
        _set(target, "value", value)
        _set(target, "averageValue", average)
        out["external"] = {
            "metric": _identifier(v1.get("metricName"), v1.get("metricSelector")),
            "target": target,
        }
    return out


def _identifier(name: Any, selector: Any) -> JSON:
    out: JSON = {"name": name or ""}
    _set(out, "selector", selector)
    return out


# -- metric statuses ------------------------------------------------------------------------------


def _status_to_v1(metric: JSON) -> JSON:
    kind = metric.get("type")
    out: JSON = {"type": kind}
    if kind == "Object":
        source = _dict(metric.get("object"))
        current, ident = _dict(source.get("current")), _dict(source.get("metric"))
        described = _dict(source.get("describedObject"))
        v1: JSON = {
            "target": {k: described[k] for k in ("kind", "name", "apiVersion") if k in described}
        }
        v1["metricName"] = ident.get("name", "")
        v1["currentValue"] = current.get("value", "0")
        _set(v1, "selector", ident.get("selector"))
        _set(v1, "averageValue", current.get("averageValue"))
        out["object"] = v1
    elif kind == "Pods":
        source = _dict(metric.get("pods"))
        current, ident = _dict(source.get("current")), _dict(source.get("metric"))
        v1 = {
            "metricName": ident.get("name", ""),
            "currentAverageValue": current.get("averageValue", "0"),
        }
        _set(v1, "selector", ident.get("selector"))
        out["pods"] = v1
    elif kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = _dict(metric.get(field))
        current = _dict(source.get("current"))
        v1 = {"name": source.get("name", "")}
        _set(v1, "currentAverageUtilization", current.get("averageUtilization"))
        v1["currentAverageValue"] = current.get("averageValue", "0")
        if kind == "ContainerResource":
            v1["container"] = source.get("container", "")
        out[field] = v1
    elif kind == "External":
        source = _dict(metric.get("external"))
        current, ident = _dict(source.get("current")), _dict(source.get("metric"))
        v1 = {"metricName": ident.get("name", "")}
        _set(v1, "metricSelector", ident.get("selector"))
        v1["currentValue"] = current.get("value", "0")
        _set(v1, "currentAverageValue", current.get("averageValue"))
        out["external"] = v1
    return out


def _status_to_v2(metric: JSON) -> JSON:
    kind = metric.get("type")
    out: JSON = {"type": kind}
    if kind == "Object":
        v1 = _dict(metric.get("object"))
        current: JSON = {}
        _set(current, "value", v1.get("currentValue"))
        _set(current, "averageValue", v1.get("averageValue"))
        out["object"] = {
            "metric": _identifier(v1.get("metricName"), v1.get("selector")),
            "current": current,
            "describedObject": _dict(v1.get("target")),
        }
    elif kind == "Pods":
        v1 = _dict(metric.get("pods"))
        current = {"averageValue": v1.get("currentAverageValue", "0")}
        out["pods"] = {
            "metric": _identifier(v1.get("metricName"), v1.get("selector")),
            "current": current,
        }
    elif kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        v1 = _dict(metric.get(field))
        current = {"averageValue": v1.get("currentAverageValue", "0")}
        _set(current, "averageUtilization", v1.get("currentAverageUtilization"))
        source: JSON = {"name": v1.get("name", ""), "current": current}
        if kind == "ContainerResource":
            source["container"] = v1.get("container", "")
        out[field] = source
    elif kind == "External":
        v1 = _dict(metric.get("external"))
        current = {"value": v1.get("currentValue", "0")}
        _set(current, "averageValue", v1.get("currentAverageValue"))
        out["external"] = {
            "metric": _identifier(v1.get("metricName"), v1.get("metricSelector")),
            "current": current,
        }
    return out


# -- whole objects --------------------------------------------------------------------------------


def hpa_to_v1(obj: JSON) -> JSON:
    """An ``autoscaling/v2`` HorizontalPodAutoscaler as ``autoscaling/v1`` serves it."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    meta = dict(_dict(obj.get("metadata")))
    annotations = {k: v for k, v in _dict(meta.get("annotations")).items() if k not in _ROUND_TRIP}
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    others = [_metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS_ANNOTATION] = dumps(others).decode()
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = dumps(
            [_status_to_v1(m) for m in current]
        ).decode()
    if status.get("conditions"):
        annotations[CONDITIONS_ANNOTATION] = dumps(status["conditions"]).decode()
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR_ANNOTATION] = dumps(spec["behavior"]).decode()
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    v1_spec: JSON = {}
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
        _set(v1_spec, key, spec.get(key))
    for metric in metrics:  # the first CPU metric, whatever its target (conversion.go breaks)
        resource = _dict(metric.get("resource"))
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            target = _dict(resource.get("target")).get("averageUtilization")
            _set(v1_spec, "targetCPUUtilizationPercentage", target)
            break
    out: JSON = {**obj, "apiVersion": "autoscaling/v1", "metadata": meta, "spec": v1_spec}
    if "status" in obj:
        v1_status: JSON = {}
        for key in ("observedGeneration", "lastScaleTime"):
            _set(v1_status, key, status.get(key))
        v1_status["currentReplicas"] = status.get("currentReplicas", 0)
        v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        for metric in current:  # the last CPU utilization wins, as in conversion.go
            resource = _dict(metric.get("resource"))
            utilization = _dict(resource.get("current")).get("averageUtilization")
            if metric.get("type") == "Resource" and resource.get("name") == "cpu":
                _set(v1_status, "currentCPUUtilizationPercentage", utilization)
        out["status"] = v1_status
    return out


def hpa_to_v2(obj: JSON) -> JSON:
    """An ``autoscaling/v1`` HorizontalPodAutoscaler (a request body) as ``autoscaling/v2``
    stores it. Raises :class:`ConversionError` for a round-trip annotation that is no JSON
    list (or, for the behavior, object)."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    meta = dict(_dict(obj.get("metadata")))
    annotations = dict(_dict(meta.get("annotations")))
    others = _annotation(annotations, METRICS_ANNOTATION, list)
    current = _annotation(annotations, CURRENT_METRICS_ANNOTATION, list)
    conditions = _annotation(annotations, CONDITIONS_ANNOTATION, list)
    behavior = _annotation(annotations, BEHAVIOR_ANNOTATION, dict)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    metrics = [_metric_to_v2(m) for m in others or [] if isinstance(m, dict)]
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None or not metrics:
        metrics.append(_cpu_target(DEFAULT_CPU_UTILIZATION if cpu is None else cpu))
    v2_spec: JSON = {}
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
        _set(v2_spec, key, spec.get(key))
    v2_spec["metrics"] = metrics
    _set(v2_spec, "behavior", behavior)
    out: JSON = {**obj, "apiVersion": "autoscaling/v2", "metadata": meta, "spec": v2_spec}
    if "status" in obj:
        v2_status: JSON = {}
        for key in ("observedGeneration", "lastScaleTime"):
            _set(v2_status, key, status.get(key))
        if status.get("currentReplicas"):  # omitempty in v2, always written in v1
            v2_status["currentReplicas"] = status["currentReplicas"]
        v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        if current is not None:  # more than currentCPUUtilizationPercentage can say
            v2_status["currentMetrics"] = [_status_to_v2(m) for m in current if isinstance(m, dict)]
        elif status.get("currentCPUUtilizationPercentage") is not None:
            utilization = status["currentCPUUtilizationPercentage"]
            v2_status["currentMetrics"] = [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": utilization}},
                }
            ]
        _set(v2_status, "conditions", conditions)
        out["status"] = v2_status
    return out


def _cpu_target(utilization: Any) -> JSON:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _annotation(annotations: JSON, key: str, shape: type) -> Any:
    """The JSON ``annotations[key]`` holds, removed from ``annotations``; None when absent."""
    text = annotations.pop(key, None)
    if text is None:
        return None
    try:
        value = loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if not isinstance(value, shape):
        raise ConversionError(f"metadata.annotations[{key!r}] must hold a JSON {shape.__name__}")
    return value


Convert = Callable[[JSON], JSON]

#: (group, kind, served version) -> (stored object to served version, request body to stored
#: version). A served version with an entry here is served as a view (resources._views).
CONVERSIONS: dict[tuple[str, str, str], tuple[Convert, Convert]] = {
    ("autoscaling", "HorizontalPodAutoscaler", "v1"): (hpa_to_v1, hpa_to_v2),
}


def for_view(view: ResourceType) -> tuple[Convert, Convert]:
    """(to served, to storage) for a view resource (one with ``stored_as``): a built-in
    version's conversion, or a custom resource's other versions (kubesim.apiserver.crds), which
    differ in ``apiVersion`` alone (the CRD conversion strategy ``None``)."""
    found = CONVERSIONS.get((view.group, view.kind, view.version))
    if found is not None:
        return found
    if view.stored_as is None or not view.list_items_have_type:
        raise KeyError(f"no conversion serves {view.api_version} {view.kind}")
    return _retyped(view.api_version), _retyped(view.stored_as.api_version)


@functools.cache
def _retyped(api_version: str) -> Convert:
    def convert(obj: JSON) -> JSON:
        return {**obj, "apiVersion": api_version}

    return convert


def served_object(view: ResourceType, obj: JSON) -> JSON:
    """A stored object, an object list or anything else as ``view`` serves it: objects and
    list items converted (items keep the type fields they had), lists retyped."""
    kind = obj.get("kind")
    if kind == view.kind:
        return for_view(view)[0](obj)
    if kind != view.list_kind:
        return obj
    to_served = for_view(view)[0]
    items = []
    for item in obj.get("items") or []:
        converted = to_served(item)
        if "apiVersion" not in item:  # a typed list's items carry no type (k8s #63676)
            converted.pop("apiVersion", None)
        items.append(converted)
    return {**obj, "apiVersion": view.api_version, "items": items}
