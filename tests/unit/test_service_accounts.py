"""The ServiceAccount controller (``Cluster(service_accounts=True)``, on in ``kubesim serve``):
every namespace has a ``default`` ServiceAccount, made again when deleted, gone with its
namespace; off by default, so simulations write nothing they did not ask for."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.apiserver.server import DEFAULT_NAMESPACES
from kubesim.cluster import Cluster


def accounts(server: APIServer, namespace: str) -> list[str]:
    listed = server.list("serviceaccounts", namespace=namespace)
    return [item["metadata"]["name"] for item in listed]


def test_every_namespace_has_a_default_service_account() -> None:
    server = Cluster(seed=1, service_accounts=True)
    for namespace in DEFAULT_NAMESPACES:
        assert accounts(server, namespace) == ["default"]
    server.create("namespaces", {"metadata": {"name": "team-a"}})
    # Written right after the namespace: the next resourceVersion, nothing in between.
    namespace = server.get("namespaces", "team-a")
    account = server.get("serviceaccounts", "default", namespace="team-a")
    assert int(account["metadata"]["resourceVersion"]) == (
        int(namespace["metadata"]["resourceVersion"]) + 1
    )
    assert "managedFields" not in account["metadata"]


def test_a_deleted_default_account_comes_back_and_others_do_not() -> None:
    server = Cluster(seed=1, service_accounts=True)
    before = server.get("serviceaccounts", "default", namespace="default")
    server.create("serviceaccounts", {"metadata": {"name": "builder"}}, namespace="default")
    server.delete("serviceaccounts", "default", namespace="default")
    server.delete("serviceaccounts", "builder", namespace="default")
    after = server.get("serviceaccounts", "default", namespace="default")
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert accounts(server, "default") == ["default"]


def test_a_deleted_namespace_takes_its_account_along() -> None:
    server = Cluster(seed=1, service_accounts=True)
    server.create("namespaces", {"metadata": {"name": "gone"}})
    server.delete("namespaces", "gone")
    server.advance(10)  # the namespace controller's passes
    with pytest.raises(st.StatusError) as missing:
        server.get("namespaces", "gone")
    assert missing.value.code == 404
    assert server.list("serviceaccounts", namespace="gone") == []


def test_a_dry_run_namespace_gets_no_account_and_the_controller_is_off_by_default() -> None:
    server = Cluster(seed=1, service_accounts=True)
    server.create("namespaces", {"metadata": {"name": "maybe"}}, dry_run=True)
    assert server.list("serviceaccounts", namespace="maybe") == []
    plain = APIServer(seed=1)
    assert plain.list("serviceaccounts") == []
    plain.create("namespaces", {"metadata": {"name": "team-a"}})
    assert plain.list("serviceaccounts") == []


def test_a_pod_runs_as_an_account_that_exists() -> None:
    # ServiceAccount admission: `default` unless the pod names one (the deprecated
    # `serviceAccount` says the same); an account that does not exist is 403.
    server = Cluster(seed=1, service_accounts=True)
    body = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    pod = server.create("pods", body, namespace="default")
    assert (pod["spec"]["serviceAccountName"], pod["spec"]["serviceAccount"]) == (
        "default",
        "default",
    )
    assert "serviceAccountName" not in body["spec"]  # the caller's body is left alone
    named = {**body, "metadata": {"name": "builder"}, "spec": {**body["spec"]}}
    named["spec"]["serviceAccountName"] = "builder"
    with pytest.raises(st.StatusError) as refused:
        server.create("pods", named, namespace="default")
    assert refused.value.code == 403
    assert refused.value.status["message"] == (
        'pods "builder" is forbidden: error looking up service account default/builder: '
        'serviceaccount "builder" not found'
    )
    server.create("serviceaccounts", {"metadata": {"name": "builder"}}, namespace="default")
    assert server.create("pods", named, namespace="default")["spec"]["serviceAccount"] == "builder"
    # Without the controller, pods are stored as sent (simulations' bytes do not change).
    plain = APIServer(seed=1).create("pods", body, namespace="default")
    assert "serviceAccountName" not in plain["spec"]


def test_a_default_account_a_quota_refuses_is_made_again_a_second_later() -> None:
    server = Cluster(seed=1, service_accounts=True, controllers=True)
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"count/serviceaccounts": "1"}}}
    server.create("resourcequotas", quota, namespace="default")
    server.advance(1)
    server.delete("serviceaccounts", "default", namespace="default")  # answered, not a 403
    assert accounts(server, "default") == []
    server.advance(1)
    assert accounts(server, "default") == ["default"]


TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod_body(**spec: object) -> dict:
    containers = [{"name": "app", "image": "nginx"}, {"name": "side", "image": "envoy"}]
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, **spec}}


def test_every_container_mounts_the_projected_token_volume_the_pod_gets() -> None:
    server = Cluster(seed=1, service_accounts=True)
    sent = pod_body(initContainers=[{"name": "init", "image": "busybox"}])
    pod = server.create("pods", sent, namespace="default")
    [volume] = pod["spec"]["volumes"]
    name = volume["name"]
    assert name.startswith("kube-api-access-")
    assert len(name) == len("kube-api-access-") + 5
    assert volume["projected"] == {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
        "defaultMode": 420,
    }
    mount = {"name": name, "readOnly": True, "mountPath": TOKEN_PATH}
    for field in ("initContainers", "containers"):
        for container in pod["spec"][field]:
            assert container["volumeMounts"] == [mount]
    # The client's body is as it sent it.
    assert "volumes" not in sent["spec"]
    assert all("volumeMounts" not in c for c in sent["spec"]["containers"])


def test_a_container_with_its_own_mount_at_the_token_path_and_a_volume_of_the_prefix_are_kept() -> (
    None
):
    server = Cluster(seed=1, service_accounts=True)
    own = {"name": "mine", "mountPath": TOKEN_PATH}
    spec = pod_body()["spec"]
    spec["containers"][0]["volumeMounts"] = [own]
    spec["volumes"] = [
        {"name": "kube-api-access-abcde", "emptyDir": {}},
        {"name": "mine", "emptyDir": {}},
    ]
    pod = server.create("pods", {"metadata": {"name": "p"}, "spec": spec}, namespace="default")
    app, side = pod["spec"]["containers"]
    assert app["volumeMounts"] == [own]
    assert side["volumeMounts"] == [
        {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": TOKEN_PATH}
    ]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["kube-api-access-abcde", "mine"]
    # Nothing to mount anywhere: no volume.
    lone = {"name": "app", "image": "nginx", "volumeMounts": [own]}
    body = {
        "metadata": {"name": "q"},
        "spec": {"containers": [lone], "volumes": [{"name": "mine", "emptyDir": {}}]},
    }
    pod = server.create("pods", body, namespace="default")
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["mine"]


@pytest.mark.parametrize(
    ("pod_says", "account_says", "mounted"),
    [
        (None, None, True),
        (False, None, False),
        (None, False, False),
        (True, False, True),
        (False, True, False),
    ],
)
def test_automount_service_account_token_the_pod_says_wins_over_the_account(
    pod_says: bool | None, account_says: bool | None, mounted: bool
) -> None:
    server = Cluster(seed=1, service_accounts=True)
    account: dict = {"metadata": {"name": "robot"}}
    if account_says is not None:
        account["automountServiceAccountToken"] = account_says
    server.create("serviceaccounts", account, namespace="default")
    spec: dict = {"serviceAccountName": "robot"}
    if pod_says is not None:
        spec["automountServiceAccountToken"] = pod_says
    pod = server.create("pods", pod_body(**spec), namespace="default")
    assert ("volumes" in pod["spec"]) is mounted
    assert all(("volumeMounts" in c) is mounted for c in pod["spec"]["containers"])


def test_the_account_s_image_pull_secrets_go_to_a_pod_that_names_none() -> None:
    server = Cluster(seed=1, service_accounts=True)
    account = {"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "registry"}]}
    server.create("serviceaccounts", account, namespace="default")
    pod = server.create("pods", pod_body(serviceAccountName="puller"), namespace="default")
    assert pod["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    own = pod_body(serviceAccountName="puller", imagePullSecrets=[{"name": "mine"}])
    own["metadata"]["name"] = "q"
    assert server.create("pods", own, namespace="default")["spec"]["imagePullSecrets"] == [
        {"name": "mine"}
    ]


def test_token_volume_names_are_drawn_apart_from_generated_object_names() -> None:
    def generated(service_accounts: bool) -> list[str]:
        server = Cluster(seed=7, service_accounts=service_accounts)
        body = {"metadata": {"generateName": "web-"}, "spec": pod_body()["spec"]}
        return [
            server.create("pods", body, namespace="default")["metadata"]["name"] for _ in range(3)
        ]

    assert generated(True) == generated(False)
    first = Cluster(seed=7, service_accounts=True).create("pods", pod_body(), namespace="default")
    again = Cluster(seed=7, service_accounts=True).create("pods", pod_body(), namespace="default")
    assert first["spec"]["volumes"] == again["spec"]["volumes"]
