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
