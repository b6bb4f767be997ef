"""Resource types the fake API server serves: built-in kinds and registered custom ones.

A :class:`ResourceType` is what discovery advertises (``APIResource``) plus what the storage
layer needs: whether the kind is namespaced, which fields a field selector may name, and
whether DELETE answers with the object or with a ``Status``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
FieldGetter = Callable[[JSON], str]

STANDARD_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


def _path(*keys: str, default: str = "") -> FieldGetter:
    def get(obj: JSON) -> str:
        node: Any = obj
        for key in keys:
            if not isinstance(node, dict):
                return default
            node = node.get(key)
        if node is None:
            return default
        if isinstance(node, bool):  # Go formats bools as "true"/"false"
            return "true" if node else "false"
        return str(node)

    return get


# Every kind supports these two (apimachinery ``fields.ObjectMetaFieldsSet``).
_META_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

# kubernetes/kubernetes pkg/registry/core/pod/strategy.go, ToSelectableFields.
_POD_FIELDS: dict[str, FieldGetter] = {
    **_META_FIELDS,
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.restartPolicy": _path("spec", "restartPolicy"),
    "spec.schedulerName": _path("spec", "schedulerName"),
    "spec.serviceAccountName": _path("spec", "serviceAccountName"),
    "spec.hostNetwork": _path("spec", "hostNetwork", default="false"),
    "status.phase": _path("status", "phase"),
    "status.podIP": _path("status", "podIP"),
    "status.nominatedNodeName": _path("status", "nominatedNodeName"),
}
# pkg/registry/core/node/strategy.go: NodeToSelectableFields.
_NODE_FIELDS = {
    **_META_FIELDS,
    "spec.unschedulable": _path("spec", "unschedulable", default="false"),
}
# pkg/registry/core/namespace/strategy.go.
_NAMESPACE_FIELDS = {**_META_FIELDS, "status.phase": _path("status", "phase")}
# pkg/registry/core/secret/strategy.go.
_SECRET_FIELDS = {**_META_FIELDS, "type": _path("type")}
# pkg/registry/apps/replicaset/strategy.go.
_REPLICASET_FIELDS = {**_META_FIELDS, "status.replicas": _path("status", "replicas", default="0")}

# pkg/registry/core/event/strategy.go ToSelectableFields (``source`` is the source component):
# what ``kubectl describe`` selects a pod's events by.
_EVENT_FIELDS = {
    **_META_FIELDS,
    "involvedObject.kind": _path("involvedObject", "kind"),
    "involvedObject.namespace": _path("involvedObject", "namespace"),
    "involvedObject.name": _path("involvedObject", "name"),
    "involvedObject.uid": _path("involvedObject", "uid"),
    "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _path("source", "component"),
    "type": _path("type"),
}
# Selectable fields of kinds the generated table serves (beyond metadata.name/namespace).
_GENERATED_FIELDS = {("", "events"): _EVENT_FIELDS}

# Legacy field labels converted before matching (pkg/apis/core/v1/conversion.go).
_POD_FIELD_ALIASES = {"spec.host": "spec.nodeName"}


# generation_fields of custom resources (customResourceStrategy.PrepareForUpdate): a change to
# any top-level field but metadata, and status when it is a subresource, bumps generation.
EVERY_FIELD = ("*",)


def generation_changed(
    resource: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]
) -> bool:
    """An update from ``old`` to ``new`` bumps ``metadata.generation``."""
    fields = resource.generation_fields
    if fields != EVERY_FIELD:
        return any(old.get(f) != new.get(f) for f in fields)
    ignored = {"metadata", "status"} if resource.status_subresource else {"metadata"}
    keys = (set(old) | set(new)) - ignored
    return any(old.get(k) != new.get(k) for k in keys)


@dataclass(frozen=True, eq=False)
class ResourceType:
    """One REST resource, e.g. ``pods`` in core/v1 or ``deployments`` in apps/v1.

    Compared and hashed by identity: a server holds exactly one instance per resource.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    selectable_fields: Mapping[str, FieldGetter] = field(default_factory=lambda: dict(_META_FIELDS))
    field_aliases: Mapping[str, str] = field(default_factory=dict)
    # Registry stores that set ReturnDeletedObject (pods, services, ...: the generated table's
    # RETURNS_DELETED_OBJECT) answer a delete with the object; the others with a Status.
    return_deleted_object: bool = False
    # Custom resources: list items keep kind/apiVersion (they are unstructured objects).
    list_items_have_type: bool = False
    # Fields whose change bumps metadata.generation ("spec" for most kinds; EVERY_FIELD for
    # custom resources).
    generation_fields: tuple[str, ...] = ("spec",)
    categories: tuple[str, ...] = ()
    # A /status subresource: main-resource updates keep status, /status updates only status.
    status_subresource: bool = False
    # A /scale subresource (autoscaling/v1 Scale) and, for custom resources, where the
    # replicas and the selector live (the CRD's subresources.scale paths).
    scale_subresource: bool = False
    scale_spec_replicas_path: str = ".spec.replicas"
    scale_status_replicas_path: str = ".status.replicas"
    scale_label_selector_path: str | None = None
    # A custom resource's OpenAPI v3 schema (its CRD's openAPIV3Schema), for /openapi/v3.
    openapi_schema: Mapping[str, Any] | None = None
    # A version served by converting the objects of another resource, which stores them
    # (autoscaling/v1 HorizontalPodAutoscalers, stored as autoscaling/v2): a *view* keeps no
    # objects of its own (kubesim.apiserver.conversion, kubesim.wire.routes).
    stored_as: ResourceType | None = None
    # A create-only resource that stores nothing (TokenReview, SubjectAccessReview, ...): a
    # POST is answered by kubesim.apiserver.reviews.
    review: bool = False
    # Read-only and computed on each request, not stored: the resource metrics API
    # (kubesim.cluster.metrics).
    metrics: bool = False
    # A deprecated version: every answer about it carries this text in a ``Warning`` header
    # (the apiserver's deprecation warnings; a CRD version's ``deprecationWarning``).
    deprecation_warning: str | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def path_prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def fields_of(self, obj: JSON) -> dict[str, str]:
        return {name: get(obj) for name, get in self.selectable_fields.items()}


# Built-in kinds served with a /status subresource.
_WITH_STATUS = frozenset(
    {"Pod", "Node", "Namespace", "Service", "Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"}
)


def _core(kind: str, plural: str, **kw: Any) -> ResourceType:
    status = kind in _WITH_STATUS
    return ResourceType(
        group="", version="v1", kind=kind, plural=plural, status_subresource=status, **kw
    )


def _apps(kind: str, plural: str, **kw: Any) -> ResourceType:
    status = kind in _WITH_STATUS
    return ResourceType(
        group="apps", version="v1", kind=kind, plural=plural, status_subresource=status, **kw
    )


def builtin_resources() -> list[ResourceType]:
    """Every stable built-in resource: the kinds below with their fields, selectors and
    defaults as kube-apiserver registers them, then every other kind of the generated table
    (:mod:`kubesim.apiserver.builtin_kinds`) with the generic behaviour of a registry store.

    Built once per process: a ResourceType is frozen, so servers share the same instances (a
    campaign builds a server per example). A server that changes one registers a new one."""
    return list(_builtin_resources())


@functools.cache
def _builtin_resources() -> tuple[ResourceType, ...]:
    rows = _preferred_versions()
    # /scale where the client has a scale operation (deployments, replicasets, statefulsets,
    # replicationcontrollers in this release): their registry storage.go adds a ScaleREST.
    scaled = {(row[0], row[3]) for row in rows if "scale" in row[6]}
    from kubesim.apiserver.builtin_kinds import RETURNS_DELETED_OBJECT

    detailed = [
        dataclasses.replace(
            r,
            scale_subresource=r.scale_subresource or (r.group, r.plural) in scaled,
            return_deleted_object=(r.group, r.plural) in RETURNS_DELETED_OBJECT,
        )
        for r in _detailed_resources()
    ]
    known = {(r.group, r.plural) for r in detailed}
    generated = []
    for group, version, kind, plural, namespaced, verbs, subresources in rows:
        if (group, plural) in known:
            continue
        generated.append(
            ResourceType(
                group=group,
                version=version,
                kind=kind,
                plural=plural,
                namespaced=namespaced,
                verbs=verbs,
                short_names=SHORT_NAMES.get((group, plural), ()),
                selectable_fields=_GENERATED_FIELDS.get((group, plural), _META_FIELDS),
                categories=("all",) if (group, plural) in CATEGORY_ALL else (),
                status_subresource="status" in subresources,
                scale_subresource="scale" in subresources,
                return_deleted_object=(group, plural) in RETURNS_DELETED_OBJECT,
                # Kinds split into spec and status track spec changes in metadata.generation,
                # but for the few whose strategy never sets it.
                generation_fields=(
                    ("spec",)
                    if "status" in subresources and (group, plural) not in _NO_GENERATION
                    else ()
                ),
            )
        )
    served = [
        dataclasses.replace(r, deprecation_warning=DEPRECATED[(r.group, r.version, r.kind)])
        if (r.group, r.version, r.kind) in DEPRECATED
        else r
        for r in (*detailed, *generated)
    ]
    return (*served, *_views(served), *_reviews())


#: Kinds with a status subresource whose registry strategy leaves metadata.generation unset.
_NO_GENERATION = frozenset({("apiregistration.k8s.io", "apiservices")})


#: The built-in versions this release serves but has deprecated, with the warning every request
#: to them gets (the types' prerelease-lifecycle or registry deprecation, as kubectl prints it).
DEPRECATED: dict[tuple[str, str, str], str] = {
    ("", "v1", "ComponentStatus"): "v1 ComponentStatus is deprecated in v1.19+",
    ("", "v1", "Endpoints"): (
        "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    ),
}


def _reviews() -> list[ResourceType]:
    """The create-only kinds of the generated table (``REVIEW_KINDS``)."""
    from kubesim.apiserver.builtin_kinds import REVIEW_KINDS

    return [
        ResourceType(
            group=group,
            version=version,
            kind=kind,
            plural=plural,
            namespaced=namespaced,
            verbs=("create",),
            generation_fields=(),
            review=True,
        )
        for group, version, kind, plural, namespaced in REVIEW_KINDS
    ]


@dataclass(frozen=True)
class Subresource:
    """A subresource served beyond ``/status`` and ``/scale``, as discovery lists it."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""  # the answer's group and version when they are not the parent's
    version: str = ""


# (group, plural) -> the other subresources kubesim serves for it (kubesim.wire.routes).
SUBRESOURCES: dict[tuple[str, str], tuple[Subresource, ...]] = {
    ("", "pods"): (
        Subresource("binding", "Binding", ("create",)),
        Subresource("ephemeralcontainers", "Pod", ("get", "patch", "update")),
        Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
        Subresource("log", "Pod", ("get",)),
    ),
    ("certificates.k8s.io", "certificatesigningrequests"): (
        Subresource("approval", "CertificateSigningRequest", ("get", "patch", "update")),
    ),
    ("", "serviceaccounts"): (
        Subresource("token", "TokenRequest", ("create",), "authentication.k8s.io", "v1"),
    ),
}


# The built-in (group, kind, version)s served by converting the stored version: the keys of
# kubesim.apiserver.conversion.CONVERSIONS, which holds the conversions and checks it has one
# for each.
CONVERTED_VERSIONS = frozenset({("autoscaling", "HorizontalPodAutoscaler", "v1")})


def _views(served: list[ResourceType]) -> list[ResourceType]:
    """The other versions of a resource that kubesim serves by conversion: each a copy of the
    stored resource in that version, ``stored_as`` it (:data:`CONVERTED_VERSIONS`)."""
    from kubesim.apiserver.builtin_kinds import BUILTIN_KINDS

    stored = {(r.group, r.plural): r for r in served}
    views = []
    for group, version, kind, plural, _, verbs, subresources in BUILTIN_KINDS:
        storage = stored.get((group, plural))
        if storage is None or storage.version == version:
            continue
        if (group, kind, version) not in CONVERTED_VERSIONS:
            continue
        views.append(
            dataclasses.replace(
                storage,
                version=version,
                verbs=verbs,
                status_subresource="status" in subresources,
                scale_subresource="scale" in subresources,
                stored_as=storage,
            )
        )
    return views


def _preferred_versions() -> list[
    tuple[str, str, str, str, bool, tuple[str, ...], tuple[str, ...]]
]:
    """One version per resource, the one kubesim stores: the newest stable one (autoscaling/v2
    over v1). Other versions are served by conversion where kubesim has one (:func:`_views`)."""
    from kubesim.apiserver.builtin_kinds import BUILTIN_KINDS

    newest: dict[tuple[str, str], tuple[str, str, str, str, bool, tuple[str, ...], tuple[str, ...]]]
    newest = {}
    for row in BUILTIN_KINDS:
        group, version, plural = row[0], row[1], row[3]
        seen = newest.get((group, plural))
        if seen is None or int(version[1:]) > int(seen[1][1:]):
            newest[(group, plural)] = row
    return sorted(newest.values(), key=lambda r: (r[0], r[3]))


# Short names and the "all" category, as the registry stores declare them
# (pkg/registry/*/*/storage/storage.go ShortNames() and Categories()).
SHORT_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "componentstatuses"): ("cs",),
    ("", "endpoints"): ("ep",),
    ("", "events"): ("ev",),
    ("", "limitranges"): ("limits",),
    ("", "persistentvolumeclaims"): ("pvc",),
    ("", "persistentvolumes"): ("pv",),
    ("", "replicationcontrollers"): ("rc",),
    ("", "resourcequotas"): ("quota",),
    ("", "serviceaccounts"): ("sa",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("crd", "crds"),
    ("autoscaling", "horizontalpodautoscalers"): ("hpa",),
    ("batch", "cronjobs"): ("cj",),
    ("certificates.k8s.io", "certificatesigningrequests"): ("csr",),
    ("events.k8s.io", "events"): ("ev",),
    ("networking.k8s.io", "ingresses"): ("ing",),
    ("networking.k8s.io", "networkpolicies"): ("netpol",),
    ("policy", "poddisruptionbudgets"): ("pdb",),
    ("scheduling.k8s.io", "priorityclasses"): ("pc",),
    ("storage.k8s.io", "storageclasses"): ("sc",),
}
CATEGORY_ALL = frozenset(
    {
        ("", "replicationcontrollers"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("batch", "cronjobs"),
        ("batch", "jobs"),
    }
)


def _detailed_resources() -> list[ResourceType]:
    return [
        _core(
            "Pod",
            "pods",
            short_names=("po",),
            selectable_fields=_POD_FIELDS,
            field_aliases=_POD_FIELD_ALIASES,
            generation_fields=(),
            categories=("all",),
        ),
        _core(
            "Node",
            "nodes",
            namespaced=False,
            short_names=("no",),
            selectable_fields=_NODE_FIELDS,
            generation_fields=(),
        ),
        _core(
            "Namespace",
            "namespaces",
            namespaced=False,
            short_names=("ns",),
            selectable_fields=_NAMESPACE_FIELDS,
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            generation_fields=(),
        ),
        _core(
            "Service", "services", short_names=("svc",), generation_fields=(), categories=("all",)
        ),
        _core("ConfigMap", "configmaps", short_names=("cm",), generation_fields=()),
        _core("Secret", "secrets", selectable_fields=_SECRET_FIELDS, generation_fields=()),
        _apps("Deployment", "deployments", short_names=("deploy",), categories=("all",)),
        _apps(
            "ReplicaSet",
            "replicasets",
            short_names=("rs",),
            selectable_fields=_REPLICASET_FIELDS,
            categories=("all",),
        ),
        _apps("DaemonSet", "daemonsets", short_names=("ds",), categories=("all",)),
        _apps("StatefulSet", "statefulsets", short_names=("sts",), categories=("all",)),
    ]


def custom_resource(
    *,
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    short_names: tuple[str, ...] = (),
) -> ResourceType:
    """A custom resource type: selectable by ``metadata.name``/``metadata.namespace`` only."""
    if not group:
        raise ValueError("custom_resource() needs a non-empty group, got group=''")
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        short_names=short_names,
        return_deleted_object=True,
        list_items_have_type=True,
    )
