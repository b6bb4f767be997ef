"""The import graph of ``kubesim/``, drawn from the source: no import circle may appear or grow.

Modules that import each other, directly or round a loop, cannot be read, tested or replaced
one at a time. The circles the package still has are listed in :data:`KNOWN_CIRCLES`, the debt
being paid down (the server's circle is taken apart into a core, the cluster around it and the
wire); a circle that is not inside one of them, or a known one that gained a module, fails here.
When a circle shrinks or goes, shrink or delete its entry: the test then holds the new line.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubesim"

# The modules of each circle as it stood when this test was written.
_SERVER = (
    "api_services apiserver control_plane crds cronjobs daemonsets defaults discovery "
    "disruption endpoints events field_validation jobs kubelet lifecycle limit_ranges metrics "
    "node_lifecycle openapi rbac resource_quotas retries reviews revisions role_aggregation "
    "root_ca service_accounts statefulsets struct_decoding workloads"
)
# Resource types name the versions served by conversion, whose watch streams wrap watchers of
# stored events.
_STORAGE = "conversion resources storage watch"
KNOWN_CIRCLES = [
    frozenset(f"kubesim.server.{name}" for name in _SERVER.split()),
    frozenset(f"kubesim.server.{name}" for name in _STORAGE.split()),
    # The scheduler installs its patches of threading, which hand blocking back to it.
    frozenset({"kubesim.sched.patches", "kubesim.sched.primitives", "kubesim.sched.scheduler"}),
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at any depth of its code: a function-level
    import is still a dependency)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                # ``from package import module`` depends on that module; ``from module
                # import name`` on the module.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_the_graph_sees_the_imports_a_module_makes() -> None:
    graph = import_graph()
    assert "kubesim.server.apiserver" in graph["kubesim.server.routes"]
    # A relative import and an import inside a function count as well.
    assert "kubesim.checks.history" in graph["kubesim.scenario.run"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_import_circle_appears_or_grows() -> None:
    new = [
        sorted(circle)
        for circle in circles(import_graph())
        if not any(circle <= known for known in KNOWN_CIRCLES)
    ]
    assert not new, f"import circles that are new or grew: {new}"
