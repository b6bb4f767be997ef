"""Generate kubesim/cluster/rbac_bootstrap_policy.json from kube-apiserver's bootstrap policy.

kube-apiserver writes its RBAC bootstrap policy as it starts: the ``admin``, ``edit`` and
``view`` roles and what they aggregate, the components' ``system:*`` roles, one role per
controller of kube-controller-manager, their bindings, and a few Roles in ``kube-system`` and
``kube-public``. Kubernetes keeps the whole policy, as the API server writes it, in the test
fixtures of plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata (the policy tests compare
the Go code with them). This script reads the fixtures for the default feature gates:

    python tools/gen_rbac_bootstrap_policy.py --testdata .../bootstrappolicy/testdata \\
        --source "kubernetes/kubernetes@<commit>"

and writes, in the fixtures' order, each object as it is created (``metadata`` with its name,
namespace, labels and annotations; an ``aggregationRule``; ``rules``, left out where the
fixture has none, as for the aggregated roles, whose rules the aggregation controller fills
in). Commit the JSON it writes; tests/unit/test_rbac.py checks what the server makes of it.

The controllers' bindings are made from the controllers' roles, as the policy makes them
(``ControllerRoleBindings``: each ``system:controller:{name}`` role bound, under its own name,
to the ServiceAccount ``{name}`` in ``kube-system``), and compared with the bindings fixture:
a fixture stored from another revision than the roles' names a controller more or less, and
the script says which rather than writing a binding to a role that does not exist. Every
other binding must name a role of the policy.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

# The fixtures for the default feature gates (the ``-featuregates`` ones add alpha roles).
FILES = {
    "clusterroles": ("cluster-roles.yaml", "controller-roles.yaml"),
    "clusterrolebindings": ("cluster-role-bindings.yaml",),
    "roles": ("namespace-roles.yaml",),
    "rolebindings": ("namespace-role-bindings.yaml",),
}
CONTROLLER_ROLES, CONTROLLER_BINDINGS = "controller-roles.yaml", "controller-role-bindings.yaml"
CONTROLLER_PREFIX = "system:controller:"
CONTROLLER_NAMESPACE = "kube-system"
GROUP = "rbac.authorization.k8s.io"
METADATA = ("name", "namespace", "labels", "annotations")
BODY = ("aggregationRule", "rules", "roleRef", "subjects")


def created(item: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server is asked to create it (no kind, no null fields)."""
    meta = item["metadata"]
    obj: dict[str, Any] = {"metadata": {k: meta[k] for k in METADATA if meta.get(k)}}
    obj.update((k, item[k]) for k in BODY if item.get(k) is not None)
    return obj


def _items(testdata: Path, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = yaml.safe_load((testdata / name).read_text())["items"]
    return items


def controller_binding(role: dict[str, Any]) -> dict[str, Any]:
    """The binding the policy makes for one controller's role."""
    name = role["metadata"]["name"]
    return {
        "metadata": {k: role["metadata"][k] for k in ("name", "labels", "annotations")},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": name.removeprefix(CONTROLLER_PREFIX),
                "namespace": CONTROLLER_NAMESPACE,
            }
        ],
    }


def policy(testdata: Path, source: str) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source}
    for plural, names in FILES.items():
        out[plural] = [created(item) for name in names for item in _items(testdata, name)]
    made = [controller_binding(created(role)) for role in _items(testdata, CONTROLLER_ROLES)]
    fixture = {b["metadata"]["name"]: created(b) for b in _items(testdata, CONTROLLER_BINDINGS)}
    for binding in made:
        name = binding["metadata"]["name"]
        if name not in fixture:
            print(f"note: {CONTROLLER_BINDINGS} has no binding for {name}; made from its role")
        elif fixture.pop(name) != binding:
            raise SystemExit(f"{CONTROLLER_BINDINGS}: {name} is not bound as the policy binds it")
    for name in fixture:
        print(f"note: {CONTROLLER_BINDINGS} binds {name}, which has no role; left out")
    out["clusterrolebindings"] += made
    roles = {r["metadata"]["name"] for r in out["clusterroles"]}
    for binding in out["clusterrolebindings"] + out["rolebindings"]:
        ref = binding["roleRef"]
        if ref["kind"] == "ClusterRole" and ref["name"] not in roles:
            raise SystemExit(f"{binding['metadata']['name']} binds a missing role {ref['name']}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--testdata", type=Path, required=True)
    parser.add_argument("--source", required=True, help="where the fixtures came from")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "kubesim/cluster/rbac_bootstrap_policy.json",
    )
    args = parser.parse_args()
    document = policy(args.testdata, args.source)
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    counts = ", ".join(f"{len(v)} {k}" for k, v in document.items() if isinstance(v, list))
    print(f"wrote {args.out}: {counts}")


if __name__ == "__main__":
    main()
