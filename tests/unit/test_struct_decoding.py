"""Shape checks against the kinds' Go structs (kubesim.apiserver.struct_decoding): they refuse what
the decoder refuses, and never what a cluster writes (a false alarm would refuse a client's
valid patch of an object kubesim's own controllers wrote)."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.apiserver import struct_decoding
from kubesim.cluster import Cluster
from kubesim.cluster.kubelet import CONTAINER_START_SECONDS
from tests.unit.test_daemonsets import daemonset
from tests.unit.test_statefulsets import statefulset
from tests.unit.test_workloads import deployment

pytest.importorskip("kubernetes", reason="the kinds' schemas come from the official client")


def test_every_object_a_running_cluster_writes_decodes() -> None:
    api = Cluster(
        seed=3,
        nodes=2,
        controllers=True,
        control_plane=True,
        system_pods=True,
        service_accounts=True,
        default_tolerations=True,
        pod_spec_defaults=True,
    )
    api.create("deployments", deployment(), namespace="default")
    api.create("statefulsets", statefulset(replicas=2), namespace="default")
    api.create("daemonsets", daemonset(), namespace="default")
    template = {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}
    job = {"metadata": {"name": "j"}, "spec": {"template": template}}
    api.create("jobs", job, namespace="default")
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    api.create("services", service, namespace="default")
    api.advance(4 * CONTAINER_START_SECONDS)
    checked = 0
    for resource in api.resources:
        if (
            "list" not in resource.verbs
            or resource.review
            or resource.metrics
            or resource.stored_as
        ):
            continue
        for obj in api.list(resource):
            assert struct_decoding.find(resource, obj) is None, (resource.plural, obj)
            checked += 1
    kinds = {
        r.kind for r in api.resources if r.stored_as is None and "list" in r.verbs and api.list(r)
    }
    assert {"Pod", "ReplicaSet", "Node", "Endpoints", "EndpointSlice", "Event"} <= kinds
    assert checked > 50


def test_a_patch_is_checked_where_it_writes_only() -> None:
    pods = APIServer().resource("pods")
    stored = {"metadata": {"name": "p", "labels": "stored-broken"}, "spec": {"containers": []}}
    assert struct_decoding.find(pods, stored) is not None
    # The stored part decoded once; only what the patch names is looked at again.
    assert struct_decoding.find(pods, stored, within={"spec": {"nodeName": "n"}}) is None
    found = struct_decoding.find(pods, stored, within={"metadata": {"labels": "x"}})
    assert found is not None
    assert found.field == "metadata.labels"


def test_the_mismatch_names_map_slice_and_struct_types() -> None:
    pods = APIServer().resource("pods")
    cases = {
        "metadata": ("Pod", "metadata", "v1.ObjectMeta", "struct"),
        "spec": ("Pod", "spec", "v1.PodSpec", "struct"),
    }
    for field, expected in cases.items():
        found = struct_decoding.find(pods, {field: "x"})
        assert found is not None
        assert (found.struct, found.field, found.go_type, found.shape) == expected
    nested = {"spec": {"containers": [{"name": "c", "env": [{"name": "A", "valueFrom": []}]}]}}
    found = struct_decoding.find(pods, nested)
    assert found is not None
    assert (found.struct, found.field, found.go_type) == (
        "EnvVar",
        "spec.containers.env.valueFrom",
        "v1.EnvVarSource",
    )
    assert found.restore_error() == "cannot restore struct from: slice"
    tolerations = struct_decoding.find(pods, {"spec": {"tolerations": {"key": "k"}}})
    assert tolerations is not None
    assert tolerations.go_type == "[]v1.Toleration"


def test_free_form_fields_and_custom_resources_are_not_checked() -> None:
    api = APIServer()
    # IntOrString takes either: a number or a name for a container port.
    service = {
        "spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]}
    }
    assert struct_decoding.find(api.resource("services"), service) is None
    # A number where the struct has a string is not a shape: quantities take both.
    resources = {"limits": {"cpu": 1, "memory": "1Gi"}}
    pod = {"spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}}
    assert struct_decoding.find(api.resource("pods"), pod) is None


def test_the_python_api_refuses_a_patch_that_does_not_decode() -> None:
    api = APIServer()
    api.create("configmaps", {"metadata": {"name": "c"}, "data": {"a": "b"}}, namespace="default")
    with pytest.raises(st.StatusError) as refused:
        api.patch(
            "configmaps",
            "c",
            {"data": ["x"]},
            namespace="default",
            patch_type="application/strategic-merge-patch+json",
        )
    assert refused.value.status["message"] == (
        ' "" is invalid: patch: Invalid value: "map[data:[x]]": cannot restore map from slice'
    )
    assert api.get("configmaps", "c", namespace="default")["data"] == {"a": "b"}
