"""RBAC objects' names: path segments (``ValidateRBACName``), so the ``system:`` names of a
cluster's roles are valid and a ``/`` or ``%`` is not."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.server import status as st


@pytest.mark.parametrize(
    ("name", "error"),
    [("a/b", "may not contain '/'"), ("50%", "may not contain '%'"), ("..", "may not be '..'")],
)
def test_rbac_objects_are_named_as_path_segments(name: str, error: str) -> None:
    server = APIServer()
    for plural in ("clusterroles", "clusterrolebindings"):
        body = {"metadata": {"name": "system:my-role"}}
        if plural == "clusterrolebindings":
            body["roleRef"] = {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "x",
            }
        assert server.create(plural, body)["metadata"]["name"] == "system:my-role"
    with pytest.raises(st.StatusError) as refused:
        server.create("roles", {"metadata": {"name": name}, "rules": []}, namespace="default")
    assert refused.value.code == 422
    assert refused.value.status["details"]["causes"][0]["message"].endswith(error)
    # Other kinds keep their DNS names.
    with pytest.raises(st.StatusError):
        server.create("configmaps", {"metadata": {"name": "system:my-map"}}, namespace="default")


def test_a_cluster_starts_with_cluster_admin_bound_to_system_masters() -> None:
    server = APIServer(control_plane=True)
    roles = {r["metadata"]["name"]: r for r in server.list("clusterroles")}
    assert set(roles) == {
        "cluster-admin",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
    }
    admin = roles["cluster-admin"]
    assert admin["rules"] == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    binding = server.get("clusterrolebindings", "cluster-admin")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "cluster-admin",
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}
    ]
    public = server.get("clusterrolebindings", "system:public-info-viewer")["subjects"]
    assert [s["name"] for s in public] == ["system:authenticated", "system:unauthenticated"]
    # Simulations start without them.
    assert APIServer().list("clusterroles") == []
