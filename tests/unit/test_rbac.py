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
