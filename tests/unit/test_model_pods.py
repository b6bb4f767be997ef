"""Steps acting on pods cloned from the user's manifests (Setup(objects=...))."""

from __future__ import annotations

from kubesim.checks.store import judge
from kubesim.scenario.run import Setup, run_scenario
from kubesim.scenario.steps import AdvanceTime, CreatePods, ReusePodIP
from tests.unit.property_stores import reflector

# A pod as an operator's generator writes it: no status (the server and the kubelet fill it).
BARE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "task-0", "namespace": "default", "labels": {"app": "task"}},
    "spec": {"containers": [{"name": "base", "image": "busybox"}]},
}


def test_an_ip_reuse_step_brings_up_a_clone_of_a_pod_written_without_a_status() -> None:
    # The kubelets give the pods their addresses; the step hands one on to a new clone.
    steps = [CreatePods(1), AdvanceTime(60), ReusePodIP(index=0, delete_old=True)]
    setup = Setup(objects=(BARE_POD,), controllers=True)
    result = run_scenario(reflector, steps, seed=0, setup=setup)
    assert "gets its podIP (10." in result.lines[2], result.lines
    assert judge(result.recording).ok
