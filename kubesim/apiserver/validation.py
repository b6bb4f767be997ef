"""Object validation: the subset of kube-apiserver's checks that store code can run into.

Each check returns ``StatusCause`` dicts (``reason``, ``message``, ``field``) with the texts of
apimachinery ``pkg/util/validation`` and ``pkg/util/validation/field``; the caller turns a
non-empty list into a 422 ``Invalid`` Status.
"""

from __future__ import annotations

import re
from typing import Any

from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL + r"\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN + r"\Z")
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME + r"\Z")
_LABEL_VALUE_RE = re.compile(r"(" + _QUALIFIED_NAME + r")?\Z")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '" + _DNS1123_SUBDOMAIN + "')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '" + _DNS1123_LABEL + "')"
)
_QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '" + _QUALIFIED_NAME + "')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',"
    "  or '12345', regex used for validation is '(" + _QUALIFIED_NAME + ")?')"
)

# Kinds whose names must be DNS-1123 labels rather than subdomains (apiserver ValidateXName).
_LABEL_NAMED_KINDS = {"Namespace", "Service"}


def _quote(value: Any) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return str(value)


def required(field: str, detail: str = "") -> JSON:
    message = "Required value" + (f": {detail}" if detail else "")
    return {"reason": "FieldValueRequired", "message": message, "field": field}


def invalid_value(field: str, value: Any, detail: str) -> JSON:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {_quote(value)}: {detail}",
        "field": field,
    }


def _qualified_name_errors(key: str) -> list[str]:
    errors: list[str] = []
    name = key
    if "/" in key:
        prefix, _, name = key.partition("/")
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
            errors.append("prefix part " + _SUBDOMAIN_MSG)
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME_RE.match(name):
        errors.append(_QUALIFIED_MSG)
    return errors


# Label pairs already found valid: workloads reuse a handful of them on every write, and the
# regular expressions were a tenth of a create. Bounded; cleared when full.
_VALID_LABELS: set[tuple[str, str]] = set()
_VALID_LABELS_MAX = 4096


def _labels_known_valid(labels: dict[Any, Any]) -> bool:
    """Every pair of ``labels`` was found valid before: one set operation in C, the common case
    on every write. A value that cannot be hashed (a list, say) is not known: the full check
    reports it."""
    try:
        return _VALID_LABELS.issuperset(labels.items())
    except TypeError:
        return False


def validate_labels(labels: Any, field: str) -> list[JSON]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [invalid_value(field, labels, "must be a map of string keys to string values")]
    causes: list[JSON] = []
    for key, value in labels.items():
        if type(value) is str and (key, value) in _VALID_LABELS:
            continue
        before = len(causes)
        for detail in _qualified_name_errors(key):
            causes.append(invalid_value(field, key, detail))
        if not isinstance(value, str):
            causes.append(invalid_value(f"{field}", value, "label values must be strings"))
        elif len(value) > 63:
            causes.append(invalid_value(field, value, "must be no more than 63 characters"))
        elif not _LABEL_VALUE_RE.match(value):
            causes.append(invalid_value(field, value, _LABEL_VALUE_MSG))
        if len(causes) == before:
            if len(_VALID_LABELS) >= _VALID_LABELS_MAX:
                _VALID_LABELS.clear()
            _VALID_LABELS.add((key, value))
    return causes


# RBAC objects are named as path segments (ValidateRBACName): `system:basic-user` is valid.
_PATH_SEGMENT_NAMED_KINDS = {
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "APIService",  # kube-aggregator's ValidateAPIService, which also wants version.group
}


def _path_segment_errors(name: str) -> list[str]:
    """apimachinery path.IsValidPathSegmentName."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def validate_name(kind: str, name: str) -> list[JSON]:
    if kind in _PATH_SEGMENT_NAMED_KINDS:
        return [invalid_value("metadata.name", name, e) for e in _path_segment_errors(name)]
    if kind in _LABEL_NAMED_KINDS:
        if len(name) > 63 or not _DNS1123_LABEL_RE.match(name):
            return [invalid_value("metadata.name", name, _LABEL_MSG)]
    elif len(name) > 253 or not _DNS1123_SUBDOMAIN_RE.match(name):
        return [invalid_value("metadata.name", name, _SUBDOMAIN_MSG)]
    return []


def validate_object(resource: ResourceType, obj: JSON) -> list[JSON]:
    """The causes that make ``obj`` invalid for ``resource``; empty when it is acceptable.

    Every write runs this, so the common case (a DNS subdomain name, labels seen before, string
    annotations) is checked with as few calls as it takes; anything else takes the full checks,
    which word the causes.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [required("metadata.name", "name or generateName is required")]
    causes: list[JSON] = []
    name = meta.get("name")
    kind = resource.kind
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    elif not isinstance(name, str):
        causes.append(invalid_value("metadata.name", name, "must be a string"))
    elif len(name) > 253 or kind in _NAMED_OTHERWISE or _DNS1123_SUBDOMAIN_RE.match(name) is None:
        causes.extend(validate_name(kind, name))
    labels = meta.get("labels")
    if labels is not None and not (type(labels) is dict and _labels_known_valid(labels)):
        causes.extend(validate_labels(labels, "metadata.labels"))
    annotations = meta.get("annotations")
    if annotations is not None and (
        not isinstance(annotations, dict)
        or not all(isinstance(v, str) for v in annotations.values())
    ):
        causes.append(
            invalid_value("metadata.annotations", annotations, "must be a map of strings")
        )
    check = _KIND_CHECKS.get((resource.group, kind))
    if check is not None:
        causes.extend(check(obj))
    return causes


# Kinds named by other rules than a DNS subdomain: validate_name decides for them.
_NAMED_OTHERWISE = frozenset(_PATH_SEGMENT_NAMED_KINDS | _LABEL_NAMED_KINDS)


def _validate_selector(obj: JSON) -> list[JSON]:
    """apps/v1 ValidateDeploymentSpec and its siblings: a selector is required, and it must
    select the pod template's labels (or the controller would never see its own pods)."""
    from kubesim.apiserver.scale import label_selector_string
    from kubesim.apiserver.selectors import LabelSelector, SelectorError

    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    if not isinstance(selector, dict):
        return []
    try:
        parsed = LabelSelector.parse(label_selector_string(selector))
    except SelectorError:
        return []  # the selector's own errors are not modelled
    template = spec.get("template")
    metadata = template.get("metadata") if isinstance(template, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    labels = labels if isinstance(labels, dict) else {}
    if not parsed.requirements() or parsed.matches(labels):
        return []
    shown = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: map[string]string{{{shown}}}: "
            "`selector` does not match template `labels`",
            "field": "spec.template.metadata.labels",
        }
    ]


def _validate_pod(pod: JSON) -> list[JSON]:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return [required("spec.containers")]
    containers = spec.get("containers")
    if not containers:
        return [required("spec.containers")]
    if not isinstance(containers, list):
        return [invalid_value("spec.containers", containers, "must be a list")]
    causes: list[JSON] = []
    seen: set[str] = set()
    for index, container in enumerate(containers):
        if isinstance(container, dict):
            # The common case, checked inline: a new name and an image.
            name = container.get("name")
            if type(name) is str and name and container.get("image") and name not in seen:
                seen.add(name)
                continue
            causes.extend(validate_container(container, f"spec.containers[{index}]", seen))
        else:
            causes.append(
                invalid_value(f"spec.containers[{index}]", container, "must be an object")
            )
    return causes


def _validate_cron_job(cron_job: JSON) -> list[JSON]:
    """ValidateCronJobSpec's schedule and time zone: robfig/cron's parse error, no ``TZ=`` in
    the schedule (``timeZone`` says it), a zone Go's ``time.LoadLocation`` knows."""
    import zoneinfo

    from kubesim.apiserver.cron import ScheduleError, parse

    spec = cron_job.get("spec")
    if not isinstance(spec, dict):
        return []
    causes: list[JSON] = []
    schedule = spec.get("schedule")
    if not schedule:
        causes.append(required("spec.schedule"))
    elif isinstance(schedule, str):
        try:
            parse(schedule)
        except ScheduleError as exc:
            causes.append(invalid_value("spec.schedule", schedule, str(exc)))
        if "TZ" in schedule:
            causes.append(
                invalid_value(
                    "spec.schedule",
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )
            )
    zone = spec.get("timeZone")
    if isinstance(zone, str):
        if not zone:
            message = "timeZone must be nil or non-empty string"
        elif zone.lower() == "local":
            message = (
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones"
            )
        else:
            try:
                zoneinfo.ZoneInfo(zone)
                message = ""
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                message = f"unknown time zone {zone}"
        if message:
            causes.append(invalid_value("spec.timeZone", zone, message))
    return causes


def _validate_api_service(api_service: JSON) -> list[JSON]:
    """kube-aggregator's ValidateAPIService: named ``version.group``, priorities in range."""
    spec = api_service.get("spec")
    spec = spec if isinstance(spec, dict) else {}  # then both priorities are 0: refused
    causes: list[JSON] = []
    name = api_service["metadata"].get("name")
    wanted = f"{spec.get('version') or ''}.{spec.get('group') or ''}"
    if isinstance(name, str) and name and name != wanted:
        detail = f'must be `spec.version+"."+spec.group`: "{wanted}"'
        causes.append(invalid_value("metadata.name", name, detail))
    for field, most in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
        value = spec.get(field) or 0
        if isinstance(value, int) and not 0 < value <= most:
            causes.append(
                invalid_value(f"spec.{field}", value, f"must be positive and less than {most}")
            )
    return causes


# The checks of one kind, after ObjectMeta's, by (group, kind).
_KIND_CHECKS = {
    ("apiregistration.k8s.io", "APIService"): _validate_api_service,
    ("", "Pod"): _validate_pod,
    ("batch", "CronJob"): _validate_cron_job,
    **{
        ("apps", kind): _validate_selector
        for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
    },
}


def duplicate(field: str, value: Any) -> JSON:
    return {
        "reason": "FieldValueDuplicate",
        "message": f"Duplicate value: {_quote(value)}",
        "field": field,
    }


def validate_container(container: JSON, path: str, seen: set[str]) -> list[JSON]:
    """A container's name (required, and unique among ``seen``, which it joins) and image."""
    causes: list[JSON] = []
    name = container.get("name")
    if not name:
        causes.append(required(f"{path}.name"))
    elif isinstance(name, str) and name in seen:
        causes.append(duplicate(f"{path}.name", name))
    elif isinstance(name, str):
        seen.add(name)
    if not container.get("image"):
        causes.append(required(f"{path}.image"))
    return causes
