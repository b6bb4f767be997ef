"""APIService objects as kube-apiserver's aggregator registers them (kubesim.cluster.api_services),
and the group order of discovery that follows from their priorities."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver.status import StatusError
from kubesim.cluster import Cluster, api_services
from kubesim.wire import discovery, printers

JSON = dict[str, Any]
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"


def _crd(group: str, *versions: tuple[str, bool]) -> JSON:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": name, "served": served, "storage": index == 0, "schema": schema}
                for index, (name, served) in enumerate(versions)
            ],
        },
    }


def _by_name(server: APIServer) -> dict[str, JSON]:
    return {o["metadata"]["name"]: o for o in server.list("apiservices")}


def test_the_control_plane_registers_one_local_apiservice_per_built_in_group_version() -> None:
    server = Cluster(control_plane=True)
    registered = _by_name(server)
    served = {
        (r.group, r.version)
        for r in server.resources
        if not r.list_items_have_type and r.group != "apiregistration.k8s.io"
    }
    assert set(registered) == {api_services.name_of(g, v) for g, v in served}
    assert "v1." in registered
    assert "v2.autoscaling" in registered
    core, apps = registered["v1."], registered["v1.apps"]
    assert core["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert apps["spec"] == {
        "group": "apps",
        "version": "v1",
        "groupPriorityMinimum": 17800,
        "versionPriority": 15,
    }
    assert apps["metadata"]["labels"] == {AUTOMANAGED: "onstart"}
    assert "generation" not in apps["metadata"]  # the strategy never sets one
    [condition] = apps["status"]["conditions"]
    assert condition == {
        "type": "Available",
        "status": "True",
        "lastTransitionTime": apps["metadata"]["creationTimestamp"],
        "reason": "Local",
        "message": "Local APIServices are always available",
    }


def test_no_apiservices_without_the_control_plane() -> None:
    assert APIServer().list("apiservices") == []


def test_the_metrics_api_is_registered_as_metrics_server_s_manifest_registers_it() -> None:
    server = Cluster(
        control_plane=True, metrics_server=True, nodes=1, controllers=True, system_pods=True
    )
    metrics = _by_name(server)["v1beta1.metrics.k8s.io"]
    assert metrics["spec"]["service"] == {
        "namespace": "kube-system",
        "name": "metrics-server",
        "port": 443,
    }
    assert (metrics["spec"]["groupPriorityMinimum"], metrics["spec"]["versionPriority"]) == (
        100,
        100,
    )
    assert [(c["reason"], c["status"]) for c in metrics["status"]["conditions"]] == [
        ("Passed", "True")
    ]
    # What it points at exists, as metrics-server's manifest creates it.
    service = server.get("services", "metrics-server", namespace="kube-system")
    assert service["spec"]["ports"][0]["port"] == 443


def test_crds_get_an_apiservice_per_served_group_version_while_they_serve_it() -> None:
    server = Cluster(control_plane=True)
    server.create("customresourcedefinitions", _crd("example.com", ("v1", True), ("v2", False)))
    registered = _by_name(server)
    assert "v2.example.com" not in registered  # not served
    custom = registered["v1.example.com"]
    assert custom["metadata"]["labels"] == {AUTOMANAGED: "true"}
    assert (custom["spec"]["groupPriorityMinimum"], custom["spec"]["versionPriority"]) == (
        1000,
        100,
    )
    assert custom["status"]["conditions"][0]["reason"] == "Local"
    server.delete("customresourcedefinitions", "widgets.example.com")
    assert "v1.example.com" not in _by_name(server)
    assert "v1.apps" in _by_name(server)  # the built-in ones are left alone


def test_a_created_apiservice_is_validated_and_its_status_is_the_server_s() -> None:
    server = APIServer()
    body = {
        "metadata": {"name": "v1.example.com"},
        "spec": {
            "group": "example.com",
            "version": "v1",
            "groupPriorityMinimum": 10,
            "versionPriority": 10,
        },
        "status": {"conditions": [{"type": "Available", "status": "False"}]},
    }
    created = server.create("apiservices", body)
    assert [(c["status"], c["reason"]) for c in created["status"]["conditions"]] == [
        ("True", "Local")
    ]
    misnamed = {**body, "metadata": {"name": "v2.example.com"}}
    with pytest.raises(StatusError) as refused:
        server.create("apiservices", misnamed)
    assert refused.value.status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "v2.example.com": must be `spec.version+"."+spec.group`: '
            '"v1.example.com"',
            "field": "metadata.name",
        }
    ]
    too_high = {**body, "spec": {**body["spec"], "groupPriorityMinimum": 20001}}
    with pytest.raises(StatusError) as refused:
        server.create("apiservices", {**too_high, "metadata": {"name": "v1.example.com"}})
    assert refused.value.status["details"]["causes"][0]["field"] == "spec.groupPriorityMinimum"


def test_discovery_lists_groups_by_priority_with_the_aggregator_s_own_group_first() -> None:
    server = Cluster(metrics_server=True)
    server.create("customresourcedefinitions", _crd("aaa.example.com", ("v1", True)))
    legacy = [g["name"] for g in discovery.api_group_list(server.resources)["groups"]]
    aggregated = [
        g["metadata"]["name"]
        for g in discovery.aggregated(server.resources, legacy=False, version="v2")["items"]
    ]
    assert legacy[:8] == [
        "apiregistration.k8s.io",
        "apps",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
    ]
    # Custom resources (1000) after every built-in group, the metrics API (100) last.
    assert legacy[-2:] == ["aaa.example.com", "metrics.k8s.io"]
    assert aggregated == legacy


def test_groups_of_equal_priority_are_ordered_by_apiservice_name_or_by_group_name() -> None:
    server = APIServer()
    server.create("customresourcedefinitions", _crd("a.example.com", ("v1beta1", True)))
    server.create("customresourcedefinitions", _crd("b.example.com", ("v1", True)))
    legacy = [g["name"] for g in discovery.api_group_list(server.resources)["groups"]]
    aggregated = [
        g["metadata"]["name"]
        for g in discovery.aggregated(server.resources, legacy=False, version="v2")["items"]
    ]
    # /apis sorts APIServices by name ("v1.b..." < "v1beta1.a..."); aggregated by group.
    assert legacy[-2:] == ["b.example.com", "a.example.com"]
    assert aggregated[-2:] == ["a.example.com", "b.example.com"]


def test_kubectl_get_apiservices_prints_the_service_and_availability() -> None:
    now = _dt.datetime(2024, 1, 1, 0, 5, tzinfo=_dt.timezone.utc)
    created = {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": "2024-01-01T00:00:00Z"}
    remote = {
        "metadata": created,
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {
            "conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]
        },
    }
    assert [c["name"] for c in printers.API_SERVICE_COLUMNS] == [
        "Name",
        "Service",
        "Available",
        "Age",
    ]
    assert printers.api_service_cells(remote, now) == [
        "v1beta1.metrics.k8s.io",
        "kube-system/metrics-server",
        "False (MissingEndpoints)",
        "5m",
    ]
    local = {"metadata": {**created, "name": "v1.apps"}, "spec": {}, "status": {}}
    assert printers.api_service_cells(local, now)[1:3] == ["Local", "Unknown"]
