"""Legacy discovery documents and ``/version``, as kubectl reads them (k8s-wire.md §4.1, #21).

Shapes: ``APIVersions`` at ``/api``, ``APIResourceList`` at ``/api/v1`` and ``/apis/<g>/<v>``,
``APIGroupList`` at ``/apis``, ``APIGroup`` at ``/apis/<g>`` (apimachinery ``meta/v1`` types).
What discovery advertises must be servable: every resource with the ``list`` verb lists as
``<Kind>List`` and every one with ``watch`` opens a chunked watch.
"""

from __future__ import annotations

from typing import Any

import pytest

from .wire import Endpoint, query

RESOURCE_KEYS = {"name", "singularName", "namespaced", "kind", "verbs"}


def resources_by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in document["resources"]}


def test_api_lists_the_core_version(api: Endpoint) -> None:
    document = api.ok("GET", "/api")
    assert document["kind"] == "APIVersions"
    assert document["versions"] == ["v1"]
    for entry in document["serverAddressByClientCIDRs"]:
        assert set(entry) == {"clientCIDR", "serverAddress"}


def test_api_v1_is_an_api_resource_list_with_pods_namespaces_and_subresources(
    api: Endpoint,
) -> None:
    document = api.ok("GET", "/api/v1")
    assert document["kind"] == "APIResourceList"
    assert document["groupVersion"] == "v1"
    by_name = resources_by_name(document)
    for resource in by_name.values():
        assert set(resource) >= RESOURCE_KEYS, resource
    assert by_name["pods"]["kind"] == "Pod"
    assert by_name["pods"]["namespaced"] is True
    assert by_name["pods"]["singularName"] == "pod"
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(
        by_name["pods"]["verbs"]
    )
    assert "po" in by_name["pods"]["shortNames"]
    assert by_name["pods/status"]["kind"] == "Pod"
    assert by_name["namespaces"]["namespaced"] is False
    assert {"configmaps", "secrets", "services", "nodes"} <= set(by_name)


def test_stored_resources_carry_the_storage_version_hash_a_cluster_computes(
    api: Endpoint,
) -> None:
    # The values a kube-apiserver lists for these (sha256 of "group/version/kind", 8 bytes).
    core = resources_by_name(api.ok("GET", "/api/v1"))
    assert core["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ="
    assert core["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="
    assert "storageVersionHash" not in core["pods/status"]
    apps = resources_by_name(api.ok("GET", "/apis/apps/v1"))
    assert apps["deployments"]["storageVersionHash"] == "8aSe+NMegvE="
    # What kubectl's own discovery test greps for: the hash right after the short names.
    raw = api.request("GET", "/api/v1").body
    assert b'"shortNames":["cm"],"storageVersionHash":' in raw
    reviews = resources_by_name(api.ok("GET", "/apis/authentication.k8s.io/v1"))
    assert "storageVersionHash" not in reviews["tokenreviews"]


def test_apis_is_an_api_group_list_with_apps_preferring_v1(api: Endpoint) -> None:
    document = api.ok("GET", "/apis")
    assert document["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in document["groups"]}
    apps = groups["apps"]
    assert apps["versions"] == [{"groupVersion": "apps/v1", "version": "v1"}]
    assert apps["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert "" not in groups  # the core group is at /api, not /apis


def test_apis_apps_is_the_api_group(api: Endpoint) -> None:
    document = api.ok("GET", "/apis/apps")
    assert document["kind"] == "APIGroup"
    assert document["name"] == "apps"
    assert document["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}


def test_apis_apps_v1_lists_the_workload_resources(api: Endpoint) -> None:
    document = api.ok("GET", "/apis/apps/v1")
    assert document["kind"] == "APIResourceList"
    assert document["groupVersion"] == "apps/v1"
    by_name = resources_by_name(document)
    assert {"deployments", "replicasets", "daemonsets", "statefulsets"} <= set(by_name)
    assert by_name["deployments"]["kind"] == "Deployment"
    assert by_name["deployments"]["namespaced"] is True


def test_version_reports_string_fields(api: Endpoint) -> None:
    version = api.ok("GET", "/version")
    for key in (
        "major",
        "minor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ):
        assert isinstance(version[key], str), key
        assert version[key], key
    assert version["gitVersion"].startswith(f"v{version['major']}.{version['minor']}.")


@pytest.mark.parametrize("path", ["/api/v1", "/apis/apps/v1"])
def test_every_listable_and_watchable_resource_in_discovery_is_served(
    api: Endpoint, ns: str, path: str
) -> None:
    for resource in api.ok("GET", path)["resources"]:
        if "/" in resource["name"]:
            continue
        base = path + (f"/namespaces/{ns}/" if resource["namespaced"] else "/") + resource["name"]
        if "list" in resource["verbs"]:
            listing = api.ok("GET", base)
            assert listing["kind"] == resource["kind"] + "List", resource["name"]
            assert isinstance(listing["items"], list)
        if "watch" in resource["verbs"]:
            rv = str(api.current_rv())
            with api.watch(base + query(watch=1, resourceVersion=rv)) as stream:
                stream.assert_watch_head()
