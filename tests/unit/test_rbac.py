"""RBAC: objects' names are path segments (``ValidateRBACName``), so the ``system:`` names of a
cluster's roles are valid and a ``/`` or ``%`` is not; a control plane writes the bootstrap
policy; the ClusterRole aggregation controller fills in ``admin``, ``edit`` and ``view``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.cluster import Cluster
from kubesim.cluster.rbac import PLURALS, bootstrap_policy

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
READ = ["get", "list", "watch"]


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


def _names(server: APIServer, plural: str) -> list[str]:
    return [obj["metadata"]["name"] for obj in server.list(plural)]


def _rules(server: APIServer, name: str) -> list[Any]:
    rules: list[Any] = server.get("clusterroles", name).get("rules") or []
    return rules


def _rule(group: str, resource: str, verbs: list[str] | None = None) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": [resource], "verbs": verbs or READ}


def test_a_cluster_starts_with_the_whole_bootstrap_policy() -> None:
    server = Cluster(control_plane=True)
    policy = bootstrap_policy()
    for plural in PLURALS:
        stored = {
            (obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj
            for obj in server.list(plural)
        }
        assert len(stored) == len(policy[plural]) > 0
        for wanted in policy[plural]:
            meta = wanted["metadata"]
            got = stored[(meta.get("namespace"), meta["name"])]
            assert got["metadata"]["labels"] == meta["labels"]
            assert got["metadata"]["annotations"] == AUTOUPDATE
            for field in ("rules", "aggregationRule", "roleRef", "subjects"):
                assert got.get(field) == wanted.get(field), (plural, meta["name"], field)
    roles = _names(server, "clusterroles")
    # What clients and test suites name: kubectl's own tests page through more than ten.
    assert {"admin", "edit", "view", "cluster-admin", "system:node"} <= set(roles)
    assert "system:controller:deployment-controller" in roles
    assert len(roles) > 60
    assert _rules(server, "cluster-admin") == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]
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
    controller = server.get("clusterrolebindings", "system:controller:deployment-controller")
    assert controller["subjects"] == [
        {"kind": "ServiceAccount", "name": "deployment-controller", "namespace": "kube-system"}
    ]
    assert "system::leader-locking-kube-scheduler" in _names(server, "roles")
    assert server.list("roles", namespace="kube-public")[0]["metadata"]["name"] == (
        "system:controller:bootstrap-signer"
    )
    # Without the aggregation controller, the aggregated roles have no rules of their own.
    assert _rules(server, "admin") == []
    # Simulations start without any of it.
    assert APIServer().list("clusterroles") == []


def test_installing_the_policy_leaves_the_generated_policy_as_it_was() -> None:
    text = (ROOT / "kubesim/cluster/rbac_bootstrap_policy.json").read_text()
    for _ in range(2):
        Cluster(control_plane=True, controllers=True)
    assert bootstrap_policy() == json.loads(text)


def test_the_policy_binds_only_what_it_defines() -> None:
    policy = bootstrap_policy()
    cluster_roles = {r["metadata"]["name"] for r in policy["clusterroles"]}
    roles = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in policy["roles"]}
    for binding in policy["clusterrolebindings"]:
        assert binding["roleRef"]["kind"] == "ClusterRole"
        assert binding["roleRef"]["name"] in cluster_roles
    for binding in policy["rolebindings"]:
        ref, namespace = binding["roleRef"], binding["metadata"]["namespace"]
        if ref["kind"] == "ClusterRole":
            assert ref["name"] in cluster_roles
        else:
            assert (namespace, ref["name"]) in roles
    for obj in (obj for plural in PLURALS for obj in policy[plural]):
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert "creationTimestamp" not in obj["metadata"]
        for subject in obj.get("subjects") or []:
            if subject["kind"] == "ServiceAccount":
                assert subject["namespace"] == "kube-system"


def test_the_generator_writes_objects_as_they_are_created() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_rbac_bootstrap_policy", ROOT / "tools/gen_rbac_bootstrap_policy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fixture = {
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {VIEW: "true"}}]},
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "annotations": AUTOUPDATE,
            "creationTimestamp": None,
            "labels": BOOTSTRAP_LABELS,
            "name": "view",
        },
        "rules": None,
    }
    assert gen.created(fixture) == {
        "metadata": {"name": "view", "labels": BOOTSTRAP_LABELS, "annotations": AUTOUPDATE},
        "aggregationRule": fixture["aggregationRule"],
    }


# -- the ClusterRole aggregation controller -----------------------------------------------


def test_view_edit_and_admin_gather_the_roles_labelled_for_them() -> None:
    server = Cluster(control_plane=True, controllers=True)
    view, edit, admin = (_rules(server, n) for n in ("view", "edit", "admin"))
    assert view == _rules(server, "system:aggregate-to-view")
    # By name: edit gathers system:aggregate-to-edit, then view (labelled aggregate-to-edit);
    # admin gathers edit (labelled aggregate-to-admin), then system:aggregate-to-admin.
    to_edit, to_admin = (
        _rules(server, "system:aggregate-to-edit"),
        _rules(server, "system:aggregate-to-admin"),
    )
    assert edit == to_edit + [rule for rule in view if rule not in to_edit]
    assert admin == edit + [rule for rule in to_admin if rule not in edit]
    assert len(admin) == len({json.dumps(rule, sort_keys=True) for rule in admin})
    # A settled controller writes nothing more.
    before = server.get("clusterroles", "admin")["metadata"]["resourceVersion"]
    server.create("configmaps", {"metadata": {"name": "unrelated"}}, namespace="default")
    assert server.get("clusterroles", "admin")["metadata"]["resourceVersion"] == before


def test_an_operators_role_labelled_for_view_reaches_view_edit_and_admin_and_leaves_them() -> None:
    server = Cluster(control_plane=True, controllers=True)
    widgets = _rule("example.com", "widgets")
    role = {"metadata": {"name": "widgets-view", "labels": {VIEW: "true"}}, "rules": [widgets]}
    server.create("clusterroles", role)
    for name in ("view", "edit", "admin"):
        assert widgets in _rules(server, name), name
    # Relabelled away: the rule goes from all three.
    role = server.get("clusterroles", "widgets-view")
    role["metadata"]["labels"] = {"team": "widgets"}
    server.update("clusterroles", role)
    for name in ("view", "edit", "admin"):
        assert widgets not in _rules(server, name), name
    # Labelled again, then deleted: gone again.
    role = server.get("clusterroles", "widgets-view")
    role["metadata"]["labels"] = {EDIT: "true"}
    server.update("clusterroles", role)
    assert widgets in _rules(server, "edit")
    assert widgets in _rules(server, "admin")
    assert widgets not in _rules(server, "view")
    server.delete("clusterroles", "widgets-view")
    assert widgets not in _rules(server, "admin")


def test_a_custom_aggregation_follows_its_selectors_in_order_each_rule_once() -> None:
    server = Cluster(controllers=True)
    pods, secrets, leases = _rule("", "pods"), _rule("", "secrets"), _rule("coordination", "leases")
    server.create(
        "clusterroles", {"metadata": {"name": "b", "labels": {"x": "1"}}, "rules": [secrets, pods]}
    )
    server.create(
        "clusterroles", {"metadata": {"name": "a", "labels": {"x": "1", "y": "1"}}, "rules": [pods]}
    )
    server.create(
        "clusterroles",
        {"metadata": {"name": "c", "labels": {"y": "1"}}, "rules": [leases, secrets]},
    )
    own = _rule("", "configmaps")
    server.create(
        "clusterroles",
        {
            # Labelled like what it selects: it does not gather its own rules.
            "metadata": {"name": "gatherer", "labels": {"y": "1"}},
            "aggregationRule": {
                "clusterRoleSelectors": [
                    {"matchLabels": {"y": "1"}},
                    {"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                ]
            },
            "rules": [own],
        },
    )
    # Selector by selector, the selected roles by name (a, c; then a, b), each rule once.
    assert _rules(server, "gatherer") == [pods, leases, secrets]


def test_an_aggregation_that_selects_no_rules_leaves_the_roles_own() -> None:
    server = Cluster(controllers=True)
    own = _rule("", "configmaps")
    server.create(
        "clusterroles",
        {
            "metadata": {"name": "lonely"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"nobody": "here"}}]},
            "rules": [own],
        },
    )
    assert _rules(server, "lonely") == [own]
