"""The API server core runs alone: a simulation that does not ask for a cluster loads none of it.

The core (``kubesim.apiserver``) is the small, fast part a simulation needs; the admission
plugins and the controllers around it (``kubesim.admission``, ``kubesim.cluster``) are loaded
only by what assembles a cluster. Checked in a fresh interpreter, whose ``sys.modules`` is what
the code itself imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _modules_after(script: str) -> list[str]:
    code = textwrap.dedent(script) + textwrap.dedent(
        """
        import json, sys
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("kubesim"))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_the_core_serves_writes_lists_and_watches_with_nothing_above_it() -> None:
    loaded = _modules_after(
        """
        from kubesim.apiserver.server import APIServer
        server = APIServer(seed=1)
        spec = {"containers": [{"name": "c", "image": "x"}]}
        server.create("pods", {"metadata": {"name": "a", "namespace": "default"}, "spec": spec})
        server.patch("pods", "a", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
        stream = server.watch(server.resource("pods"), resource_version="0")
        assert b"ADDED" in stream.poll()
        server.expire_watches(with_error=True)
        server.delete("pods", "a", namespace="default")
        assert server.list("pods") == []
        """
    )
    above = [m for m in loaded if not m.startswith(("kubesim.apiserver", "kubesim._core"))]
    # The package's face: lazy names, and the version's one literal.
    assert above == ["kubesim", "kubesim._lazy", "kubesim._version"], above
    assert "kubesim.apiserver.server" in loaded


def test_a_simulation_of_a_client_store_loads_no_admission_or_controller() -> None:
    pytest.importorskip("kubernetes")
    loaded = _modules_after(
        """
        import json
        from kubernetes import client
        from kubernetes.watch.watch import iter_resp_lines
        from kubesim import Simulation
        from kubesim.workload import make_pod

        sim = Simulation(seed=1)
        sim.server.create("pods", make_pod("a", "default"))
        seen = []

        def run():
            core = client.CoreV1Api(api)
            response = core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            for line in iter_resp_lines(response):
                seen.append(json.loads(line)["type"])

        api = sim.kubernetes_client()
        sim.start(run)
        sim.server.expire_watches()
        sim.settle()
        sim.stop()
        assert seen[:1] == ["ADDED"], seen
        """
    )
    assert "kubesim.wire.routes" in loaded  # what the client speaks
    cluster = [m for m in loaded if m.startswith(("kubesim.cluster", "kubesim.admission"))]
    assert cluster == [], cluster


def test_a_scenario_loads_the_cluster_only_when_it_asks_for_controllers() -> None:
    pytest.importorskip("kubernetes")
    script = """
        import sys
        sys.path.insert(0, {here!r})
        import kind_stores
        from kubesim.scenario.run import Setup, run_scenario
        from kubesim.scenario.steps import CreatePods
        run_scenario(kind_stores.jobs, [CreatePods(1)], seed=1, setup=Setup(controllers={on}))
        """
    here = str(Path(__file__).resolve().parent)
    alone = _modules_after(script.format(here=here, on=False))
    assert [m for m in alone if m.startswith(("kubesim.cluster", "kubesim.admission"))] == []
    assert "kubesim.cluster.jobs" in _modules_after(script.format(here=here, on=True))


def test_a_cluster_loads_its_parts() -> None:
    """The check above can fail: assembling a cluster does load them."""
    loaded = _modules_after(
        """
        from kubesim.cluster import Cluster
        Cluster(nodes=1, controllers=True)
        """
    )
    assert "kubesim.cluster.kubelet" in loaded
    assert "kubesim.admission.limit_ranges" in loaded


# The names the core's objects go by outside it (``self.server``, ``api``, ``registry``...).
_CORE_OBJECTS = {"server", "api", "apiserver", "cluster", "registry", "watch_cache", "storage"}


def private_reaches(source: str) -> list[str]:
    """Every ``<core object>._name`` in ``source``: a private attribute of the core used from
    outside it."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__"):
            continue
        base = node.value
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
        if name in _CORE_OBJECTS:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_the_core_uses_its_private_attributes() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert private_reaches("self.server._create(x)\nserver.registry.create(x)") == [
        "1: self.server._create"
    ]
    outside = [
        path
        for folder in ("kubesim", "tests", "models", "bench")
        for path in (root / folder).rglob("*.py")
        if "apiserver" not in path.relative_to(root).parts[:2]
    ]
    reaches = {
        str(path.relative_to(root)): found
        for path in outside
        if path.name != "test_core_alone.py" and (found := private_reaches(path.read_text()))
    }
    assert reaches == {}, reaches
