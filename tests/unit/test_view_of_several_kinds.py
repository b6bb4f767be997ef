"""A store of several kinds keys its view by (resource, namespace, name).

With "namespace/name" keys a Service and a pod of one name are one entry, so such a store had
no usable view and converge and monotone never judged it. Keys that carry the resource make
the server's side carry it too (``services:team-0/svc-000``).
"""

from __future__ import annotations

from typing import Any

import kind_stores
import pytest
from kubernetes import client

from kubesim.checks.recording import normalise_view, object_key
from kubesim.scenario.run import Setup
from kubesim.testing.check import check_store

TWO_KINDS = Setup(kinds=("services", "pods"))


class _Kinds(kind_stores.Several):
    """Services and pods, one reflector each; the view keyed (resource, namespace, name)."""

    def __init__(self, api_client: client.ApiClient, *, forget_service_deletes: bool) -> None:
        core = client.CoreV1Api(api_client)
        services = kind_stores.Reflector(
            core.list_service_for_all_namespaces, forget_deletes=forget_service_deletes
        )
        super().__init__(services, kind_stores.Reflector(core.list_pod_for_all_namespaces))
        self.names = ("Service", "pods")  # as a store may name them: kind or plural

    def view(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        out = {}
        for resource, reflector in zip(self.names, self.reflectors, strict=True):
            for key, obj in reflector.view().items():
                namespace, _, name = key.rpartition("/")
                out[resource, namespace, name] = obj
        return out


def correct(api_client: client.ApiClient) -> _Kinds:
    return _Kinds(api_client, forget_service_deletes=False)


def forgets_service_deletes(api_client: client.ApiClient) -> _Kinds:
    return _Kinds(api_client, forget_service_deletes=True)


def test_a_correct_store_of_two_kinds_is_judged_by_converge_and_monotone() -> None:
    report = check_store(
        correct, spec="test_view_of_several_kinds:correct", examples=30, setup=TWO_KINDS
    )
    assert report.found is None, report.found and report.found.verdict
    assert {"converge", "monotone"} <= report.ran


def test_a_missed_service_delete_is_named_with_its_resource() -> None:
    report = check_store(
        forgets_service_deletes,
        spec="test_view_of_several_kinds:forgets_service_deletes",
        examples=60,
        setup=TWO_KINDS,
    )
    assert report.found is not None
    text = str(report.found.verdict)
    assert "converge" in report.found.properties or "history" in report.found.properties, text
    assert "services:" in text


def test_keys_of_several_kinds_name_their_resource_as_the_server_does() -> None:
    resources = {"Service": "services", "svc": "services", "pods": "pods"}
    view = {("Service", "team-0", "web"): {}, ("pods", "team-0", "web"): {}}
    assert set(normalise_view(view, resources.__getitem__)) == {
        "services:team-0/web",
        "pods:team-0/web",
    }
    assert object_key(("nodes", "", "n1"), {"nodes": "nodes"}.__getitem__) == "nodes:n1"
    with pytest.raises(TypeError, match=r"\(resource, namespace, name\) tuples"):
        object_key(("a", "b", "c", "d"))
