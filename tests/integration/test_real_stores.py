"""kubesim check on real stores people use, with a factory of a few lines each.

The finding for the official client's informer is written up, with its replay, in
docs/findings/shared-informer-too-large-rv.md.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kubesim.testing.check import check_store

informer = pytest.importorskip("kubernetes.informer.informer")
cache = pytest.importorskip("kubernetes.informer.cache")


class InformerStore:
    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        core = client.CoreV1Api(api_client)
        self.informer = informer.SharedInformer(core.list_pod_for_all_namespaces)
        self.done = threading.Event()

    def run(self) -> None:
        self.informer.start()
        self.done.wait()

    def view(self) -> dict[str, Any]:
        return {cache._meta_namespace_key(pod): pod for pod in self.informer.cache.list()}

    def read(self) -> list[Any]:
        return list(self.informer.cache.list())

    def stop(self) -> None:
        self.informer.stop()
        self.done.set()


def shared_informer(api_client: Any) -> InformerStore:
    return InformerStore(api_client)


def test_the_shared_informer_rewatches_in_a_hot_loop_on_too_large_resource_version() -> None:
    report = check_store(
        shared_informer,
        spec="tests/integration/test_real_stores.py:shared_informer",
        examples=60,
        seed=0,
        kinds=["create", "delete", "churn", "read", "stall", "crash"],
        database=":memory:",
    )
    assert report.found is not None
    assert report.found.properties == ["progress"], str(report.found)
    lines = report.found.result.lines
    assert lines[0].startswith("stall the watch cache")
    assert "crash and restart the store" in lines[-1]


def test_the_shared_informer_passes_expiries_drops_and_relists() -> None:
    report = check_store(
        shared_informer,
        examples=40,
        seed=0,
        kinds=["create", "delete", "churn", "expire", "drop", "compact", "delete-in-gap", "read"],
        database=":memory:",
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "snapshot-reads", "clean-stop"} <= report.ran


# -- jupyterhub-kubespawner's ResourceReflector (kubernetes_asyncio) --------------------------


class KubeSpawnerPods:
    """kubespawner's pod reflector for one namespace, as KubeSpawner starts it."""

    def __init__(self) -> None:
        from kubespawner.reflector import NamespacedResourceReflector

        class PodReflector(NamespacedResourceReflector):  # type: ignore[misc]
            kind = "pods"

        self.reflector = PodReflector(namespace="team-0")

    async def run(self) -> None:
        await self.reflector.start()
        await self.reflector.watch_task

    def view(self) -> dict[str, Any]:
        return dict(self.reflector.resources)

    def read(self) -> dict[str, Any]:
        return dict(self.reflector.resources)

    async def stop(self) -> None:
        await self.reflector.stop()


async def kubespawner_pods(api_client: Any) -> KubeSpawnerPods:
    # kubespawner builds its own client from the default configuration, as in a hub pod.
    from kubespawner.clients import load_config

    load_config()
    return KubeSpawnerPods()


@pytest.fixture
def kubespawner() -> None:
    pytest.importorskip("kubespawner.reflector", reason="jupyterhub-kubespawner is not installed")


@pytest.mark.usefixtures("kubespawner")
def test_kubespawner_reflector_dies_when_its_first_list_after_a_restart_fails() -> None:
    report = check_store(
        kubespawner_pods,
        spec="tests/integration/test_real_stores.py:kubespawner_pods",
        examples=100,
        seed=0,
        kinds=["create", "http-error", "crash"],
        database=":memory:",
    )
    found = report.found
    assert found is not None
    assert found.properties == ["crash"], str(found)
    assert "raised ApiException: (500)" in str(found), str(found)
    lines = found.result.lines
    assert lines[0].startswith("fail the next"), lines
    assert "crash and restart the store" in lines[-1], lines


@pytest.mark.usefixtures("kubespawner")
def test_kubespawner_reflector_passes_expiries_relists_stale_caches_and_reads() -> None:
    report = check_store(
        kubespawner_pods,
        examples=40,
        seed=2,
        kinds=[
            "create",
            "delete",
            "churn",
            "labels",
            "expire",
            "drop",
            "compact",
            "stall",
            "resume",
            "delete-in-gap",
            "bookmark",
            "read",
            "crash",
        ],
        database=":memory:",
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "snapshot-reads", "isolation", "clean-stop"} <= report.ran
