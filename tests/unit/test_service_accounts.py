"""The ServiceAccount controller (``APIServer(service_accounts=True)``, on in ``kubesim serve``):
every namespace has a ``default`` ServiceAccount, made again when deleted, gone with its
namespace; off by default, so simulations write nothing they did not ask for."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.server import status as st
from kubesim.server.apiserver import DEFAULT_NAMESPACES


def accounts(server: APIServer, namespace: str) -> list[str]:
    listed = server.list("serviceaccounts", namespace=namespace)
    return [item["metadata"]["name"] for item in listed]


def test_every_namespace_has_a_default_service_account() -> None:
    server = APIServer(seed=1, service_accounts=True)
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
    server = APIServer(seed=1, service_accounts=True)
    before = server.get("serviceaccounts", "default", namespace="default")
    server.create("serviceaccounts", {"metadata": {"name": "builder"}}, namespace="default")
    server.delete("serviceaccounts", "default", namespace="default")
    server.delete("serviceaccounts", "builder", namespace="default")
    after = server.get("serviceaccounts", "default", namespace="default")
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert accounts(server, "default") == ["default"]


def test_a_deleted_namespace_takes_its_account_along() -> None:
    server = APIServer(seed=1, service_accounts=True)
    server.create("namespaces", {"metadata": {"name": "gone"}})
    server.delete("namespaces", "gone")
    server.advance(10)  # the namespace controller's passes
    with pytest.raises(st.StatusError) as missing:
        server.get("namespaces", "gone")
    assert missing.value.code == 404
    assert server.list("serviceaccounts", namespace="gone") == []


def test_a_dry_run_namespace_gets_no_account_and_the_controller_is_off_by_default() -> None:
    server = APIServer(seed=1, service_accounts=True)
    server.create("namespaces", {"metadata": {"name": "maybe"}}, dry_run=True)
    assert server.list("serviceaccounts", namespace="maybe") == []
    plain = APIServer(seed=1)
    assert plain.list("serviceaccounts") == []
    plain.create("namespaces", {"metadata": {"name": "team-a"}})
    assert plain.list("serviceaccounts") == []


def test_a_pod_runs_as_an_account_that_exists() -> None:
    # ServiceAccount admission: `default` unless the pod names one (the deprecated
    # `serviceAccount` says the same); an account that does not exist is 403.
    server = APIServer(seed=1, service_accounts=True)
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
    server = APIServer(seed=1, service_accounts=True, controllers=True)
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"count/serviceaccounts": "1"}}}
    server.create("resourcequotas", quota, namespace="default")
    server.advance(1)
    server.delete("serviceaccounts", "default", namespace="default")  # answered, not a 403
    assert accounts(server, "default") == []
    server.advance(1)
    assert accounts(server, "default") == ["default"]
