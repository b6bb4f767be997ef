"""A restarted store is started as a kubelet starts a crashed container, and the history
oracle's fresh store is an instrument that meets no fault.

Many controllers read the cluster in their constructor (the namespaces they serve) with no
retry: on a cluster, a process that fails there exits and the kubelet starts it again after
CrashLoopBackOff's delay. Only the first start with no fault pending is the user's setup.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest

from kubesim.apiserver.faults import RequestFailures
from kubesim.apiserver.resources import builtin_resources
from kubesim.checks.store import judge
from kubesim.scenario.run import (
    CRASH_LOOP_BACKOFF,
    CRASH_LOOP_MAX_BACKOFF,
    run_scenario,
)
from kubesim.scenario.steps import AdvanceTime, CrashAndRestart, CreatePods, FailRequests
from kubesim.sim.store import FactoryFailed

kubernetes = pytest.importorskip("kubernetes")
client = kubernetes.client
iter_resp_lines = pytest.importorskip("kubernetes.watch.watch").iter_resp_lines
ProtocolError = pytest.importorskip("urllib3.exceptions").ProtocolError


class NamespacedInformer:
    """Correct: lists the namespaces it serves in its constructor (no retry there), then
    lists pods and watches from the list's resourceVersion, retrying every error with a
    backoff and listing again after a 410."""

    def __init__(self, api_client: Any) -> None:
        self.core = client.CoreV1Api(api_client)
        self.namespaces = [ns.metadata.name for ns in self.core.list_namespace().items]
        self.cache: dict[str, Any] = {}

    def run(self) -> None:
        while True:
            try:
                listed = json.loads(
                    self.core.list_pod_for_all_namespaces(_preload_content=False).data
                )
                self.cache = {_key(p): p for p in listed["items"]}
                version = listed["metadata"]["resourceVersion"]
                while version is not None:
                    version = self._watch(version)
            except client.ApiException:
                time.sleep(1)

    def _watch(self, version: str) -> str | None:
        """One watch from ``version``: the version to watch from next, None to list again."""
        response = self.core.list_pod_for_all_namespaces(
            watch=True, resource_version=version, _preload_content=False
        )
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return None
                pod = event["object"]
                version = pod["metadata"]["resourceVersion"]
                if event["type"] == "DELETED":
                    self.cache.pop(_key(pod), None)
                else:
                    self.cache[_key(pod)] = pod
        except ProtocolError:
            pass
        return version

    def view(self) -> dict[str, Any]:
        return dict(self.cache)


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class ChokesOnMorePods(NamespacedInformer):
    """Its constructor fails on a cluster of more than six pods (at any start)."""

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        pods = self.core.list_pod_for_all_namespaces().items
        if len(pods) > 6:
            raise ValueError(f"cannot serve {len(pods)} pods")


def test_a_restart_while_errors_are_pending_is_retried_with_crashloop_backoff() -> None:
    # Four list errors are pending when the crash step restarts the store: its constructor's
    # list fails at each start, and the kubelet starts it again 10, 20 and 40 s later; the
    # fifth start works. A correct store: no finding, no usage error.
    steps = [FailRequests(count=4, code=503), CrashAndRestart(), AdvanceTime(200)]
    result = run_scenario(NamespacedInformer, steps, seed=1)
    verdict = judge(result.recording)
    assert verdict.ok, verdict
    failed = result.recording.failed_starts
    assert [error.split(":")[0] for _, error in failed] == ["ServiceException"] * 4
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(failed)]
    assert gaps == [CRASH_LOOP_BACKOFF, 2 * CRASH_LOOP_BACKOFF, 4 * CRASH_LOOP_BACKOFF]
    # It came up: the last rounds show its view, equal to the server.
    last = result.recording.rounds[-1]
    assert last.view is not None
    assert not set(last.view) ^ set(last.server)


def test_a_failed_start_is_retried_after_a_counted_http_error_too() -> None:
    steps = [FailRequests(count=1, code=403), CrashAndRestart()]
    result = run_scenario(NamespacedInformer, steps, seed=2)
    assert judge(result.recording).ok
    assert [error.split(":")[0] for _, error in result.recording.failed_starts] == [
        "ForbiddenException"
    ]


def test_the_first_start_is_still_the_users_setup() -> None:
    def broken(api_client: Any) -> Any:
        raise RuntimeError("no config")

    with pytest.raises(FactoryFailed, match="raised RuntimeError: no config"):
        run_scenario(broken, [], seed=1)


def test_a_store_that_never_comes_up_again_is_a_restart_finding_with_its_frames() -> None:
    # After the crash the cluster has eight pods: every start fails, faults or none.
    result = run_scenario(ChokesOnMorePods, [CreatePods(2), CrashAndRestart()], seed=1)
    verdict = judge(result.recording)
    assert [v.property for v in verdict.violations] == ["restart"], verdict
    text = str(verdict.violations[0])
    assert "did not start again after the faults ended" in text
    assert "ValueError: cannot serve 8 pods" in text
    assert "test_crash_loop.py" in text  # the user's frame that raised, with its line
    assert 'raise ValueError(f"cannot serve {len(pods)} pods")' in text
    # One more back-off period after the faults ended: at most the cap apart.
    times = [when for when, _ in result.recording.failed_starts]
    assert len(times) >= 2
    assert times[-1] - times[-2] <= CRASH_LOOP_MAX_BACKOFF


def test_a_fresh_instance_that_cannot_start_is_a_restart_finding() -> None:
    # No crash step: the store keeps running, but a new instance of it (the history
    # oracle's) cannot start on the cluster as the scenario left it.
    result = run_scenario(ChokesOnMorePods, [CreatePods(2)], seed=1)
    verdict = judge(result.recording)
    assert [v.property for v in verdict.violations] == ["restart"], verdict
    assert "a fresh instance of the store" in str(verdict.violations[0])
    assert "cannot serve 8 pods" in str(verdict.violations[0])


def test_exempt_requests_pass_and_consume_no_failure() -> None:
    pods = next(r for r in builtin_resources() if r.plural == "pods")
    failures = RequestFailures()
    failures.add(1, code=500, verbs=["list"], resource=None, retry_after=None)
    exempt = [True]
    failures.exempt = lambda: exempt[0]
    assert failures.take("list", pods, None) is None  # the instrument's request: served
    exempt[0] = False
    assert failures.take("list", pods, None) is not None  # the store's: the rule was left
    assert failures.take("list", pods, None) is None  # and is now used up


def test_the_fresh_store_group_is_exempt_and_its_threads_inherit_it() -> None:
    import threading

    from kubesim.scenario.run import FRESH, ScenarioRun, Setup
    from kubesim.sim.simulation import Simulation

    sim = Simulation(seed=1)
    run = ScenarioRun(NamespacedInformer, seed=1, setup=Setup(), simulation=sim, spec="t")
    seen: dict[str, bool] = {}

    def ask(name: str) -> None:
        seen[name] = run.server.request_failures.exempt()  # type: ignore[misc]

    def fresh_store() -> None:
        ask("fresh store")
        worker = threading.Thread(target=lambda: ask("its worker"))
        worker.start()
        worker.join()

    sim.spawn(fresh_store, name="fresh-store", group=FRESH)
    sim.spawn(lambda: ask("the store"), name="store")
    sim.settle()
    sim.stop()
    assert seen == {"fresh store": True, "its worker": True, "the store": False}


def choker(api_client: Any) -> ChokesOnMorePods:
    return ChokesOnMorePods(api_client)


def test_check_finds_a_store_that_cannot_start_again_and_the_replay_line_gives_its_trace() -> None:
    import os
    import shutil
    import subprocess
    import sys

    from kubesim.testing.check import check_store

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Creates and crashes only: the failure is the cluster's size, and shrinks in a few runs.
    report = check_store(
        choker,
        spec="tests/unit/test_crash_loop.py:choker",
        examples=30,
        seed=1,
        database=":memory:",
        kinds=("create", "crash"),
    )
    assert report.found is not None
    assert "restart" in report.found.properties
    bin_dir = os.path.dirname(sys.executable)
    if shutil.which("kubesim", path=bin_dir) is None:
        pytest.skip("the kubesim console script is not installed beside this interpreter")
    replayed = subprocess.run(
        ["bash", "-c", report.found.replay.command()],
        cwd=root,
        env={**os.environ, "PYTHONPATH": root, "PATH": bin_dir + os.pathsep + os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replayed.returncode == 1, replayed.stderr
    assert f"trace {report.found.result.trace_hash[:16]}" in replayed.stdout
    assert "restart: " in replayed.stdout
    assert "cannot serve" in replayed.stdout


def test_an_async_factory_that_fails_at_a_restart_is_retried_on_its_loop() -> None:
    aio = pytest.importorskip("kubernetes_asyncio")
    import async_stores

    async def listing_factory(api_client: Any) -> Any:
        # Reads the cluster before it builds the store, with no retry (an async constructor).
        await aio.client.CoreV1Api(api_client).list_namespace()
        return await async_stores.reflector(api_client)

    steps = [FailRequests(count=3, code=500), CrashAndRestart(), AdvanceTime(200)]
    result = run_scenario(listing_factory, steps, seed=1)
    assert judge(result.recording).ok
    failed = result.recording.failed_starts
    assert [error.split(":")[0] for _, error in failed] == ["ApiException"] * 3
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(failed)]
    assert gaps == [CRASH_LOOP_BACKOFF, 2 * CRASH_LOOP_BACKOFF]
