"""The RBAC roles every cluster has from the start, that clients count on.

kube-apiserver writes its bootstrap policy as it starts (the ``rbac/bootstrap-roles`` post-start
hook, plugin/pkg/auth/authorizer/rbac/bootstrappolicy). ``APIServer(control_plane=True)``
writes the part of it that clients and tests rely on by name, with the labels and annotation
the policy gives them:

- ``cluster-admin`` (every verb on every resource and non-resource URL), bound to the group
  ``system:masters`` (a cluster's superusers) by the ClusterRoleBinding ``cluster-admin``;
  kube-rs' tests read the role;
- ``system:basic-user`` (the self-reviews), ``system:discovery`` (the discovery and version
  URLs) and ``system:public-info-viewer`` (health and version), bound to every authenticated
  user, the last also to unauthenticated ones.

The rules are the policy's as its test fixtures (bootstrappolicy/testdata) list them for
1.28 and later. kubesim enforces none of it: every request is allowed, and the access reviews
say so. The rest of the policy (``admin``, ``edit``, ``view`` and their aggregation, the
components' and the controllers' ``system:*`` roles) is not written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.server.apiserver import APIServer

JSON = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
_VERSION_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

CLUSTER_ROLES: dict[str, list[JSON]] = {
    "cluster-admin": [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "system:basic-user": [
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["selfsubjectreviews"],
            "verbs": ["create"],
        },
    ],
    "system:discovery": [
        {
            "nonResourceURLs": [
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
            "verbs": ["get"],
        }
    ],
    "system:public-info-viewer": [{"nonResourceURLs": _VERSION_URLS, "verbs": ["get"]}],
}
# ClusterRoleBinding (named after its role) -> the groups it binds.
BINDINGS: dict[str, list[str]] = {
    "cluster-admin": ["system:masters"],
    "system:basic-user": ["system:authenticated"],
    "system:discovery": ["system:authenticated"],
    "system:public-info-viewer": ["system:authenticated", "system:unauthenticated"],
}


def _metadata(name: str) -> JSON:
    return {"name": name, "labels": dict(_LABELS), "annotations": dict(_ANNOTATIONS)}


def install(server: APIServer) -> None:
    """Write the roles and bindings above (the server's lock held, before it serves)."""
    roles, bindings = server.resource("clusterroles"), server.resource("clusterrolebindings")
    for name, rules in CLUSTER_ROLES.items():
        server._create(roles, {"metadata": _metadata(name), "rules": rules}, None)
    for name, groups in BINDINGS.items():
        binding = {
            "metadata": _metadata(name),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
        }
        server._create(bindings, binding, None)


__all__ = ["BINDINGS", "CLUSTER_ROLES", "install"]
