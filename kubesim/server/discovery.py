"""Legacy discovery documents: ``/api``, ``/api/v1``, ``/apis``, ``/apis/<g>``, ``/apis/<g>/<v>``.

kubectl and kopf accept plain ``APIVersions``/``APIGroupList`` JSON in place of aggregated
discovery (client-go ``discovery_client.go`` picks the format by response Content-Type).
"""

from __future__ import annotations

from typing import Any

from kubesim.server.resources import ResourceType

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
    groups: dict[str, list[str]] = {}
    for resource in resources:
        if resource.group:
            versions = groups.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
    return groups


def _group_doc(group: str, versions: list[str]) -> JSON:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(resources: list[ResourceType]) -> JSON:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_doc(g, v) for g, v in sorted(_groups(resources).items())],
    }


def api_group(resources: list[ResourceType], group: str) -> JSON | None:
    versions = _groups(resources).get(group)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


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
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }
