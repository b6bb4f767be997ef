"""The official client's leaf functions run untraced in a run, and nothing else changes."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client, watch
from kubernetes.client.api_client import ApiClient
from kubernetes.watch.watch import Watch

from kubesim._core.untraced import leaf_of
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import CreatePods, DeletePods, ExpireWatches, PatchLabels
from kubesim.transport import client_leaves
from kubesim.transport.client_leaves import untraced_leaves

STEPS = [CreatePods(3), PatchLabels(2, "tier", "v2"), ExpireWatches(), DeletePods(1)]


class Informer:
    """Lists into models, watches with ``Watch().stream`` (every event decoded into a V1Pod)."""

    def __init__(self, api_client: ApiClient) -> None:
        self.v1 = client.CoreV1Api(api_client)
        self.pods: dict[str, object] = {}

    def run(self) -> None:
        while True:
            listed = self.v1.list_pod_for_all_namespaces()
            self.pods = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in listed.items}
            since = listed.metadata.resource_version
            try:
                for event in watch.Watch().stream(
                    self.v1.list_pod_for_all_namespaces, resource_version=since
                ):
                    pod = event["object"]
                    key = f"{pod.metadata.namespace}/{pod.metadata.name}"
                    if event["type"] == "DELETED":
                        self.pods.pop(key, None)
                    else:
                        self.pods[key] = pod
            except client.ApiException:
                continue  # 410: list again

    def view(self) -> dict[str, object]:
        return dict(self.pods)


def test_the_leaves_are_wrapped_inside_the_block_and_restored_after() -> None:
    before = ApiClient.__dict__["deserialize"], Watch.__dict__["unmarshal_event"]
    with untraced_leaves():
        assert leaf_of(ApiClient.__dict__["deserialize"]) is before[0]
        assert leaf_of(Watch.__dict__["unmarshal_event"]) is before[1]
        with untraced_leaves():  # a nested block wraps nothing twice
            assert leaf_of(ApiClient.__dict__["deserialize"]) is before[0]
        assert leaf_of(ApiClient.__dict__["deserialize"]) is before[0]
    assert (ApiClient.__dict__["deserialize"], Watch.__dict__["unmarshal_event"]) == before


def test_a_run_with_untraced_leaves_has_the_same_points_and_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The trace records how many scheduling points ran before each quiescent point: a leaf
    # that hid a point of the store's code, or let one through, would change it. The store
    # decodes every event into models through the leaves, in a traced run (the schedule
    # preempts it), so they run inside it.
    def run() -> tuple[str, list[object]]:
        result = run_scenario(
            Informer, STEPS, seed=3, schedule=[5, 40, 200], traced=[sys.modules[__name__]]
        )
        return result.recording.trace_hash, [r.requests for r in result.recording.rounds]

    with_leaves = run()
    monkeypatch.setattr(client_leaves, "LEAVES", ())
    without = run()
    assert with_leaves == without
