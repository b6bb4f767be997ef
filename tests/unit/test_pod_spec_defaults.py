"""Defaults a real API server writes that clients read back: pod specs in full (under
``pod_spec_defaults``, as ``kubesim serve`` runs), Secrets' ``stringData`` and type, and a
ReplicationController's selector taken from its template."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.apiserver.pod_spec_defaults import image_pull_policy

JSON = dict[str, Any]


def _pod(**spec: Any) -> JSON:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "ports": [{"containerPort": 80}],
                    "env": [
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                    ],
                    "readinessProbe": {"httpGet": {"port": 80}},
                    "resources": {"limits": {"cpu": "1"}},
                }
            ],
            "volumes": [{"name": "scratch"}, {"name": "conf", "configMap": {"name": "c"}}],
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("localhost:5000/nginx", "Always"),
        ("localhost:5000/nginx:1.25", "IfNotPresent"),
        ("nginx@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_the_pull_policy_follows_the_image_tag_as_docker_references_parse(
    image: str, policy: str
) -> None:
    assert image_pull_policy(image) == policy


def test_a_pod_gets_its_containers_probes_env_and_volumes_defaulted() -> None:
    server = APIServer(pod_spec_defaults=True)
    sent = _pod()
    before = copy.deepcopy(sent)
    spec = server.create("pods", sent, namespace="default")["spec"]
    assert sent == before  # the caller's body is never written
    [container] = spec["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["env"][0]["valueFrom"]["fieldRef"] == {
        "fieldPath": "metadata.name",
        "apiVersion": "v1",
    }
    probe = container["readinessProbe"]
    assert probe["httpGet"] == {"port": 80, "path": "/", "scheme": "HTTP"}
    assert (probe["timeoutSeconds"], probe["periodSeconds"]) == (1, 10)
    assert (probe["successThreshold"], probe["failureThreshold"]) == (1, 3)
    assert container["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert spec["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "conf", "configMap": {"name": "c", "defaultMode": 420}},
    ]
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    assert (spec["restartPolicy"], spec["dnsPolicy"]) == ("Always", "ClusterFirst")


def test_what_the_client_set_is_kept_and_updates_are_defaulted_too() -> None:
    server = APIServer(pod_spec_defaults=True)
    chosen = _pod(enableServiceLinks=False)
    chosen["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    spec = server.create("pods", chosen, namespace="default")["spec"]
    assert spec["enableServiceLinks"] is False
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    added = {"name": "side", "image": "busybox"}
    patched = server.patch(
        "pods",
        "p",
        {"spec": {"containers": [spec["containers"][0], added]}},
        namespace="default",
    )
    assert patched["spec"]["containers"][1]["imagePullPolicy"] == "Always"
    assert patched["spec"]["containers"][1]["resources"] == {}


def test_workload_templates_are_defaulted_but_only_pods_get_service_links() -> None:
    server = APIServer(pod_spec_defaults=True)
    template = {"metadata": {"labels": {"app": "w"}}, "spec": _pod()["spec"]}
    deployment = {
        "metadata": {"name": "w"},
        "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": template},
    }
    stored = server.create("deployments", deployment, namespace="default")
    spec = stored["spec"]["template"]["spec"]
    assert spec["containers"][0]["terminationMessagePolicy"] == "File"
    assert spec["schedulerName"] == "default-scheduler"
    assert "enableServiceLinks" not in spec
    # Requests come from limits on pods alone (SetDefaults_Pod), not in templates.
    assert "requests" not in spec["containers"][0]["resources"]
    cron = {
        "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
    }
    job_spec = server.create("cronjobs", cron, namespace="default")["spec"]["jobTemplate"]["spec"]
    assert job_spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_simulations_keep_their_pods_bytes_without_the_option() -> None:
    spec = APIServer().create("pods", _pod(), namespace="default")["spec"]
    assert "terminationMessagePath" not in spec["containers"][0]
    assert spec["volumes"][0] == {"name": "scratch"}


def test_string_data_is_merged_into_data_and_never_stored() -> None:
    server = APIServer()
    secret = {"metadata": {"name": "s"}, "data": {"k1": "djE=", "k2": ""}}
    secret["stringData"] = {"k2": "v2", "a": "x"}
    stored = server.create("secrets", secret, namespace="default")
    assert "stringData" not in stored
    assert stored["type"] == "Opaque"
    assert stored["data"] == {"a": "eA==", "k1": "djE=", "k2": base64.b64encode(b"v2").decode()}
    assert list(stored["data"]) == ["a", "k1", "k2"]
    patched = server.patch("secrets", "s", {"stringData": {"k1": "new"}}, namespace="default")
    assert patched["data"]["k1"] == base64.b64encode(b"new").decode()
    assert "stringData" not in server.get("secrets", "s", namespace="default")


def test_a_replication_controller_selects_and_is_labelled_by_its_template_labels() -> None:
    server = APIServer()
    template = {"metadata": {"labels": {"app": "front"}}, "spec": _pod()["spec"]}
    rc = server.create(
        "replicationcontrollers",
        {"metadata": {"name": "front"}, "spec": {"template": template}},
        namespace="default",
    )
    assert rc["spec"]["selector"] == {"app": "front"}
    assert rc["metadata"]["labels"] == {"app": "front"}
    assert rc["spec"]["replicas"] == 1
    chosen = server.create(
        "replicationcontrollers",
        {
            "metadata": {"name": "own", "labels": {"mine": "yes"}},
            "spec": {"selector": {"app": "front"}, "template": template},
        },
        namespace="default",
    )
    assert chosen["metadata"]["labels"] == {"mine": "yes"}


def test_a_pod_without_containers_is_still_refused_with_the_defaults_on() -> None:
    with pytest.raises(st.StatusError):
        APIServer(pod_spec_defaults=True).create(
            "pods", {"metadata": {"name": "x"}}, namespace="default"
        )
