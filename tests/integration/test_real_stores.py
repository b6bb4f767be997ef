"""kubesim check on real stores people use, with a factory of a few lines each.

The findings are written up, with their replays, in docs/findings/: the official client's
informer (shared-informer-too-large-rv.md), kubespawner's reflector (kubespawner-first-list.md,
kubespawner-relist-from-zero.md, kubespawner-outage-gives-up.md) and kopf's indexes
(kopf-index-relist.md).
"""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any

import pytest

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import AdvanceTime, CrashAndRestart, CreatePods, StallWatchCache
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


def test_the_shared_informer_rewatches_once_per_watch_cache_wait_on_too_large_rv() -> None:
    # The withdrawn finding (shared-informer-too-large-rv.md): after a stalled cache and a
    # restart, the informer re-watches at once after each 504, but each 504 comes after the
    # watch cache's 3 s wait, as kube-apiserver's does: one request per 3 virtual seconds.
    steps = [StallWatchCache(), CreatePods(1), CrashAndRestart(), AdvanceTime(60)]
    result = run_scenario(shared_informer, steps, seed=0)
    verdict = judge(result.recording)
    assert verdict.ok, verdict
    before, after = result.recording.rounds[3], result.recording.rounds[4]
    assert after.time - before.time == 60
    assert 15 <= after.requests - before.requests <= 25, after.requests - before.requests


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
    # The version docs/findings/kubespawner-*.md name (pinned in the test extra): a release
    # that fixes one of them fails its test here, which then needs updating.
    assert importlib.metadata.version("jupyterhub-kubespawner") == "7.1.0"


def _kubespawner_campaign(kinds: list[str], *, examples: int, seed: int) -> Any:
    return check_store(
        kubespawner_pods,
        spec="tests/integration/test_real_stores.py:kubespawner_pods",
        examples=examples,
        seed=seed,
        kinds=kinds,
        database=":memory:",
    )


@pytest.mark.usefixtures("kubespawner")
def test_kubespawner_reflector_dies_when_its_first_list_after_a_restart_fails() -> None:
    report = _kubespawner_campaign(["create", "http-error", "crash"], examples=100, seed=0)
    found = report.found
    assert found is not None
    assert found.properties == ["crash"], str(found)
    assert "raised ApiException: (500)" in str(found), str(found)
    lines = found.result.lines
    assert lines[0].startswith("fail the next"), lines
    assert "crash and restart the store" in lines[-1], lines


@pytest.mark.usefixtures("kubespawner")
def test_kubespawner_reflector_gives_up_for_good_in_a_lasting_outage() -> None:
    # _watch_and_update doubles its delay from 0.1 s and returns once it would pass 30 s: nine
    # failures in a row, about 51 s (docs/findings/kubespawner-outage-gives-up.md).
    report = _kubespawner_campaign(
        ["create", "delete", "churn", "read", "outage"], examples=100, seed=0
    )
    found = report.found
    assert found is not None
    assert found.properties == ["stopped-watching"], str(found)
    assert [line.split(":")[0] for line in found.result.lines] == [
        "a storm of 429s (Retry-After"
    ], found.result.lines


@pytest.mark.usefixtures("kubespawner")
def test_kubespawner_reflector_passes_expiries_relists_and_reads() -> None:
    report = _kubespawner_campaign(
        [
            "create",
            "delete",
            "churn",
            "labels",
            "expire",
            "drop",
            "compact",
            "delete-in-gap",
            "bookmark",
            "read",
            "crash",
        ],
        examples=40,
        seed=2,
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "snapshot-reads", "isolation", "clean-stop"} <= report.ran


@pytest.mark.usefixtures("kubespawner")
def test_kubespawner_reflector_relists_from_zero_and_a_stale_watch_cache_takes_it_back() -> None:
    # After any watch error the reflector lists again from resourceVersion "0" (_watch_and_update:
    # "ensure we request a valid resource version on retry"), which the watch cache answers,
    # however far behind it is: pods deleted since come back into its cache (kubernetes#59848).
    report = _kubespawner_campaign(
        [
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
        examples=40,
        seed=2,
    )
    found = report.found
    assert found is not None
    assert found.properties == ["monotone"], str(found)
    assert "came back at round" in str(found), str(found)
    assert any(line.startswith("stall the watch cache") for line in found.result.lines)


# -- kopf's in-memory indexes (an operator run by kopf.operator) -----------------------------


@pytest.fixture
def kopf_index() -> Any:
    pytest.importorskip(
        "kopf", minversion="1.45", reason="kopf 1.45+ (Python 3.11+) is not installed"
    )
    # The version docs/findings/kopf-index-relist.md names (pinned in the test extra).
    assert importlib.metadata.version("kopf") == "1.45.2"
    from tests.integration import kopf_pods_index

    return kopf_pods_index.factory


KOPF_SPEC = "tests/integration/kopf_pods_index.py:factory"


def test_kopf_index_keeps_pods_deleted_while_its_watch_was_down(kopf_index: Any) -> None:
    report = check_store(
        kopf_index,
        spec=KOPF_SPEC,
        examples=60,
        seed=0,
        kinds=["delete-in-gap"],
        database=":memory:",
    )
    found = report.found
    assert found is not None
    # The index keeps the pod: the view says so, and so does the comparison with a fresh
    # operator, which names the index entry.
    assert found.properties == ["converge", "history"], str(found)
    assert "phantom(s) the server no longer has (missed deletes)" in str(found), str(found)
    assert "store.index['team-0/web-000']" in str(found), str(found)
    assert [line.split(" while ")[0] for line in found.result.lines] == ["delete team-0/web-000"]


def test_kopf_operator_outlasts_a_lagging_watch_cache_by_retrying(kopf_index: Any) -> None:
    # After a restart kopf lists (a consistent read: the newest resourceVersion) and watches
    # from there; a watch cache behind that answers 504 "Too large resource version" after its
    # 3 s wait. kopf retries 8 times (1+1+2+3+5+8+13+21 s), logs the error and starts the watch
    # again, for five minutes of lag; then the cache catches up and so does the operator. (The
    # withdrawn finding of kopf-index-relist.md: with the 504 answered at once, it had ended.)
    steps = [StallWatchCache(), CreatePods(1), CrashAndRestart(), AdvanceTime(300)]
    result = run_scenario(kopf_index, steps, seed=0)
    verdict = judge(result.recording)
    assert verdict.ok, verdict
    before, after = result.recording.rounds[3], result.recording.rounds[4]
    assert after.requests - before.requests > 20  # it kept trying, at its backoff's pace


def test_kopf_index_passes_every_fault_without_deletes(kopf_index: Any) -> None:
    # Everything but the two findings' triggers (a delete the operator's watch does not see; a
    # watch cache lagging for a minute): expiries, drops, 410s, compaction, HTTP errors, label
    # and status storms, IP reuse, slow consumers, crash-restarts, readers. Judged by every
    # oracle but snapshot-reads: kopf handles each object's events in a worker of its own, so
    # its index is up to date object by object, never promised to be one resourceVersion of
    # the whole (a read while several pods change may hold one pod's new version and another's
    # old one). Readers still run, for the other oracles to judge.
    from kubesim.checks.store import ORACLES

    report = check_store(
        kopf_index,
        spec=KOPF_SPEC,
        examples=60,
        seed=0,
        kinds=[
            "create",
            "labels",
            "status",
            "ip-reuse",
            "expire",
            "drop",
            "compact",
            "http-error",
            "bookmark",
            "slow-consumer",
            "advance",
            "read",
            "crash",
        ],
        database=":memory:",
        oracles=[oracle.name for oracle in ORACLES if oracle.name != "snapshot-reads"],
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "isolation", "clean-stop"} <= report.ran
