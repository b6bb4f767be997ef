"""The import graph of ``kubesim/``, drawn from the source: no import circle, no upward import.

Modules that import each other, directly or round a loop, cannot be read, tested or replaced
one at a time; a lower layer that imports a higher one (the API server core importing a
controller, say) is the same knot at the scale of packages. :data:`LAYERS` writes down what
each package may import, as docs/explanation/architecture.md draws it.

An import under ``if TYPE_CHECKING:`` is never executed: it names a type for the checker. It
counts for the layers (a core that names a controller's type knows of it), and the executed
imports form no circle at all. Counted with them, two circles remain, both of one kind: a
class and the helpers it hands itself to, which name its type back (the API server and its
registry, lists, deletion, CRD and namespace helpers; the cluster and its controllers, the
sub-controllers and their ``Controllers``). :data:`TYPE_CIRCLES` lists them as they stand: one
that grows, or a new one, fails here; when one shrinks, shrink its entry.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubesim"

_CORE = "crds deletion extensions lifecycle lists pods registry reviews server"
_CLUSTER = (
    "cluster control_plane cronjobs daemonsets disruption jobs kubelet node_lifecycle "
    "resource_quotas revisions role_aggregation statefulsets workloads"
)
TYPE_CIRCLES = [
    frozenset(f"kubesim.apiserver.{name}" for name in _CORE.split()),
    frozenset(f"kubesim.cluster.{name}" for name in _CLUSTER.split()),
]

# Each package of kubesim and the packages it may import (besides itself), bottom up. The
# server is three layers and a side: the core (apiserver), the admission plugins and the
# cluster above it, and the wire (routes and encodings) beside them, above the core only.
LAYERS: dict[str, set[str]] = {
    "kubesim._core": set(),
    "kubesim._lazy": set(),
    "kubesim._version": set(),
    "kubesim.apiserver": {"kubesim._core"},
    "kubesim.admission": {"kubesim._core", "kubesim.apiserver"},
    "kubesim.cluster": {"kubesim._core", "kubesim.apiserver", "kubesim.admission"},
    "kubesim.wire": {"kubesim._core", "kubesim.apiserver"},
    "kubesim.sched": {"kubesim._core"},
    "kubesim.transport": {"kubesim._core", "kubesim.apiserver", "kubesim.wire", "kubesim.sched"},
    "kubesim.workload": {"kubesim._core", "kubesim.apiserver"},
    "kubesim.checks": {"kubesim._core", "kubesim._lazy", "kubesim.apiserver"},
    "kubesim.sim": {
        "kubesim._core",
        "kubesim.apiserver",
        "kubesim.checks",
        "kubesim.sched",
        "kubesim.transport",
        "kubesim.workload",
    },
}
_BELOW_THE_SIMULATION = set(LAYERS)
# The property layer, the tools and the package's face may use everything below them (the
# scenario imports the cluster only for a run with controllers: tests/unit/test_core_alone.py
# checks that a pod scenario does not).
LAYERS["kubesim.scenario"] = set(_BELOW_THE_SIMULATION)
LAYERS["kubesim.report"] = LAYERS["kubesim.scenario"] | {"kubesim.scenario", "kubesim"}
LAYERS["kubesim.testing"] = LAYERS["kubesim.report"] | {"kubesim.report"}
LAYERS["kubesim.cli"] = _BELOW_THE_SIMULATION | set(LAYERS)
LAYERS["kubesim"] = LAYERS["kubesim.cli"] - {"kubesim.cli"}
LAYERS["kubesim.__main__"] = {"kubesim.cli"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under an ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    return skipped


def import_graph(*, type_only: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at any depth of its code: a function-level
    import is still a dependency). ``type_only=False``: without the imports made only for the
    type checker."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        skipped = set() if type_only else _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
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


def _layer(module: str) -> str:
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        candidate = ".".join(parts[:depth])
        if candidate in LAYERS:
            return candidate
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a package its layer may not import, as ``a -> b``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if _layer(target) != _layer(module) and _layer(target) not in LAYERS[_layer(module)]
    )


def test_the_graph_sees_the_imports_a_module_makes() -> None:
    graph = import_graph()
    assert "kubesim.apiserver.server" in graph["kubesim.wire.routes"]
    # A relative import and an import inside a function count as well.
    assert "kubesim.checks.history" in graph["kubesim.scenario.run"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    # A type named for the checker only is a dependency for the layers, not for circles.
    assert "kubesim.apiserver.server" in graph["kubesim.apiserver.registry"]
    assert (
        "kubesim.apiserver.server"
        not in import_graph(type_only=False)["kubesim.apiserver.registry"]
    )


def test_the_imports_that_run_form_no_circle() -> None:
    assert circles(import_graph(type_only=False)) == []


def test_no_circle_of_type_names_appears_or_grows() -> None:
    new = [
        sorted(circle)
        for circle in circles(import_graph())
        if not any(circle <= known for known in TYPE_CIRCLES)
    ]
    assert not new, f"import circles (type names included) that are new or grew: {new}"


def test_no_package_imports_a_layer_above_it() -> None:
    upward = upward_imports(import_graph())
    assert not upward, "imports from a lower layer into a higher one:\n" + "\n".join(upward)


def test_the_layer_rule_catches_an_upward_import() -> None:
    graph = {
        "kubesim.apiserver.server": {"kubesim.cluster.kubelet"},
        "kubesim.cluster.kubelet": set(),
    }
    assert upward_imports(graph) == ["kubesim.apiserver.server -> kubesim.cluster.kubelet"]
    assert upward_imports({"kubesim.cluster.kubelet": {"kubesim.apiserver.server"}}) == []


def test_every_core_file_is_short_enough_to_read() -> None:
    """The core is split by job: no file of it over about 600 lines (generated tables and the
    JSON Patch / strategic merge implementation, one algorithm each, excepted)."""
    exempt = {"builtin_kinds.py", "patch.py"}
    long = {
        path.name: len(path.read_text().splitlines())
        for path in (PACKAGE / "apiserver").glob("*.py")
        if path.name not in exempt
    }
    assert all(lines <= 640 for lines in long.values()), {
        name: lines for name, lines in long.items() if lines > 640
    }
