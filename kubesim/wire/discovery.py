"""Legacy discovery documents: ``/api``, ``/api/v1``, ``/apis``, ``/apis/<g>``, ``/apis/<g>/<v>``.

kubectl and kopf accept plain ``APIVersions``/``APIGroupList`` JSON in place of aggregated
discovery (client-go ``discovery_client.go`` picks the format by response Content-Type).
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from kubesim.apiserver import api_groups
from kubesim.apiserver.resources import SUBRESOURCES, ResourceType

JSON = dict[str, Any]

SERVER_VERSION: JSON = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-kubesim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-01-01T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions() -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _groups(resources: list[ResourceType]) -> dict[str, list[str]]:
    """Each group's served versions, the preferred first: kube-aware version order."""
    groups: dict[str, list[str]] = {}
    for resource in resources:
        if resource.group:
            versions = groups.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
    return {group: sorted(versions, key=version_priority) for group, versions in groups.items()}


def _ordered_groups(resources: list[ResourceType], *, legacy: bool) -> list[tuple[str, list[str]]]:
    """The groups in the order kube-apiserver's aggregator lists them: its own group first, then
    by their APIServices' ``groupPriorityMinimum``, highest first (:mod:`.api_services`), so
    ``apps`` comes before ``batch`` and custom resources after every built-in group. Ties go by
    APIService name in ``/apis`` (apiregistration's ``ByGroupPriorityMinimum``) and by group
    name in aggregated discovery (aggregated/handler.go)."""
    custom = {r.group for r in resources if r.list_items_have_type and not r.metrics}

    def order(item: tuple[str, list[str]]) -> tuple[int, str]:
        group, versions = item
        priority = api_groups.group_priority(group, versions, group in custom)
        tie = min(api_groups.name_of(group, v) for v in versions) if legacy else group
        return (-priority, tie)

    return sorted(_groups(resources).items(), key=order)


_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key putting versions in apimachinery's ``CompareKubeAwareVersionStrings`` order:
    GA before beta before alpha, higher numbers first (``v2``, ``v1``, ``v1beta2``,
    ``v1beta1``, ``v1alpha1``), then any other name in alphabetical order."""
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[match[2]]
    return (stage, -int(match[1]), -int(match[3] or 0), "")


def _group_doc(group: str, versions: list[str]) -> JSON:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(resources: list[ResourceType]) -> JSON:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_doc(g, v) for g, v in _ordered_groups(resources, legacy=True)],
    }


def api_group(resources: list[ResourceType], group: str) -> JSON | None:
    versions = _groups(resources).get(group)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def storage_version_hash(stored: ResourceType) -> str:
    """The first 8 bytes of SHA-256 over ``group/version/kind`` of the version the resource is
    stored in, base64 (discovery/storageversionhash.go): a client's cue that storage moved."""
    digest = hashlib.sha256(f"{stored.group}/{stored.version}/{stored.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def api_resource_list(resources: list[ResourceType], group: str, version: str) -> JSON | None:
    chosen = [r for r in resources if r.group == group and r.version == version]
    if not chosen:
        return None
    entries: list[JSON] = []
    for r in sorted(chosen, key=lambda r: r.plural):
        entry: JSON = {
            "name": r.plural,
            "singularName": r.singular_name,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        if not (r.review or r.metrics):  # what has storage
            entry["storageVersionHash"] = storage_version_hash(r.stored_as or r)
        entries.append(entry)
        if r.status_subresource:
            entries.append(
                {
                    "name": f"{r.plural}/status",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if r.scale_subresource:
            entries.append(
                {
                    "name": f"{r.plural}/scale",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        for sub in SUBRESOURCES.get((r.group, r.plural), ()):
            other: JSON = {"group": sub.group, "version": sub.version} if sub.group else {}
            entries.append(
                {
                    "name": f"{r.plural}/{sub.name}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    **other,
                    "kind": sub.kind,
                    "verbs": list(sub.verbs),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }


# -- aggregated discovery (apidiscovery.k8s.io) ------------------------------------------------
# kubectl 1.26+ asks /api and /apis for an APIGroupDiscoveryList first (client-go
# discovery/aggregated_discovery.go); the server answers with the first version it serves among
# those the Accept header lists, and says which in the Content-Type, or plain JSON otherwise
# (staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated/negotiation.go).
AGGREGATED_VERSIONS = ("v2", "v2beta1")


def aggregated_version(accept: str) -> str | None:
    """The apidiscovery version to answer with, or None for the legacy documents."""
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0].lower() not in ("application/json", "application/*", "*/*"):
            continue
        params = dict(f.partition("=")[::2] for f in fields[1:])
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in AGGREGATED_VERSIONS
        ):
            return params["v"]
        if not params.get("g"):
            return None  # a plain media type came first: the client prefers it
    return None


def aggregated_content_type(version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def _discovery_resource(r: ResourceType) -> JSON:
    entry: JSON = {
        "resource": r.plural,
        "responseKind": {"group": "", "version": "", "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular_name,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subresources: list[JSON] = []
    if r.scale_subresource:
        subresources.append(
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"],
            }
        )
    if r.status_subresource:
        subresources.append(
            {
                "subresource": "status",
                "responseKind": {"group": "", "version": "", "kind": r.kind},
                "verbs": ["get", "patch", "update"],
            }
        )
    for sub in SUBRESOURCES.get((r.group, r.plural), ()):
        subresources.append(
            {
                "subresource": sub.name,
                "responseKind": {"group": sub.group, "version": sub.version, "kind": sub.kind},
                "verbs": list(sub.verbs),
            }
        )
    if subresources:
        entry["subresources"] = sorted(subresources, key=lambda s: str(s["subresource"]))
    return entry


def aggregated(resources: list[ResourceType], *, legacy: bool, version: str) -> JSON:
    """The APIGroupDiscoveryList for /api (``legacy``) or /apis."""
    items: list[JSON] = []
    groups = [("", ["v1"])] if legacy else _ordered_groups(resources, legacy=False)
    for group, versions in groups:
        entries = []
        for v in versions:
            chosen = sorted(
                (r for r in resources if r.group == group and r.version == v),
                key=lambda r: r.plural,
            )
            entries.append(
                {
                    "version": v,
                    "resources": [_discovery_resource(r) for r in chosen],
                    "freshness": "Current",
                }
            )
        items.append({"metadata": {"name": group} if group else {}, "versions": entries})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
