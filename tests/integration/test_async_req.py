"""``async_req=True``: the official client's thread pool, run on threads kubesim controls.

The Kubeflow training SDK and others call the official client with ``async_req=True``: the call
runs on the client's ``multiprocessing.pool.ThreadPool`` and returns a result to ``get()``.
That pool's handler thread waits on a pipe, which no simulated lock can wake: kubesim reported
every such store as blocked outside the simulation, and ``check`` then never exited (the
client's ``atexit`` hook joined the pool). In a run the client now gets
:class:`kubesim.sched.thread_pool.ControlledPool`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubesim import Simulation
from kubesim.sched.thread_pool import ControlledPool
from kubesim.testing.check import check_store

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPEC = os.path.join(HERE, "test_async_req.py:factory")


class AsyncReqPoller:
    """Lists pods every 5 s with ``async_req=True``; an error is retried at the next poll."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[str, Any] = {}
        self.errors = 0

    def run(self) -> None:
        while True:
            try:
                pods = self.core.list_pod_for_all_namespaces(async_req=True).get()
            except client.ApiException:
                self.errors += 1
            else:
                self.cache = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods.items}
            time.sleep(5)

    def view(self) -> dict[str, Any]:
        return {
            key: {
                "metadata": {
                    "namespace": pod.metadata.namespace,
                    "name": pod.metadata.name,
                    "uid": pod.metadata.uid,
                    "resourceVersion": pod.metadata.resource_version,
                }
            }
            for key, pod in self.cache.items()
        }


def factory(api_client: client.ApiClient) -> AsyncReqPoller:
    return AsyncReqPoller(api_client)


def test_a_store_on_async_req_is_judged_not_reported_as_blocked() -> None:
    report = check_store(factory, spec=SPEC, examples=15, seed=0, database=":memory:")
    assert report.ok, str(report.found)
    assert {"converge", "progress", "history"} <= report.ran


def test_check_and_replay_exit_with_the_clients_pool_left_behind(tmp_path: Path) -> None:
    # A store that crashes on its first error (no try/except) fails; the process must still
    # exit, with nothing about simulated conditions waited on after the run.
    crashing = tmp_path / "crashing_poller.py"
    crashing.write_text(
        "from kubernetes import client\n"
        "import time\n"
        "class Poller:\n"
        "    def __init__(self, api_client):\n"
        "        self.core = client.CoreV1Api(api_client)\n"
        "    def run(self):\n"
        "        while True:\n"
        "            self.core.list_pod_for_all_namespaces(async_req=True).get()\n"
        "            time.sleep(5)\n"
        "def factory(api_client):\n"
        "    return Poller(api_client)\n",
        encoding="utf-8",
    )
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), ROOT]))
    command = ["check", "crashing_poller.py:factory", "--examples", "20", "--database", ":memory:"]
    command += ["--faults", "http-error"]
    done = subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", *command],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "crash: StoreCrashed" in done.stdout
    assert "blocked" not in done.stdout
    assert "outside a controlled run" not in done.stderr


def test_the_controlled_pool_runs_tasks_in_order_and_hands_back_values_and_errors() -> None:
    sim = Simulation(seed=1)
    seen: list[Any] = []

    def main() -> None:
        pool = ControlledPool(1)
        done: list[int] = []
        first = pool.apply_async(lambda: done.append(1) or "one", callback=seen.append)
        failing = pool.apply_async(lambda: 1 / 0, error_callback=seen.append)
        second = pool.apply_async(done.append, (2,))
        assert first.get() == "one"
        with pytest.raises(ZeroDivisionError):
            failing.get()
        second.wait()
        assert second.successful()
        assert not failing.successful()
        assert done == [1, 2]  # one worker: in the order given
        assert pool.map(lambda n: n * n, [1, 2, 3]) == [1, 4, 9]
        with pytest.raises(ValueError, match="still running"):
            pool.join()
        pool.close()
        pool.join()
        with pytest.raises(ValueError, match="not running"):
            pool.apply_async(print)
        seen.append("joined")

    sim.spawn(main, name="main")
    sim.settle()
    assert seen[0] == "one"
    assert isinstance(seen[1], ZeroDivisionError)
    assert seen[-1] == "joined"
