"""A fleet sharing one example database: a worker process fuzzes a buggy model against a real
Redis server and saves the failure there; a second worker and a plain pytest run, each in a
process of its own, then fail at once, replaying the saved failure before generating anything.

Needs ``redis-server`` (Debian's package; ``.ci/run`` installs it) and the ``redis`` package
(test extra); skips cleanly without them. Loopback only, bounded in time.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server")
redis = pytest.importorskip("redis", reason="the redis package is not installed")
pytestmark = [
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed"),
    pytest.mark.timeout(600),
]
ROOT = Path(__file__).resolve().parents[2]
TARGET = """
from kubesim.testing import fuzz_test

# KubeArmor's endpoint leak: every re-sent ADDED appends endpoints.
test_kubearmor = fuzz_test("models.kubearmor:before_pr1553", max_examples=200)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    assert REDIS_SERVER is not None
    port = _free_port()
    server = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        deadline = time.monotonic() + 30
        while True:  # hang guard while the server starts
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(30)


def _pytest(directory: Path, url: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "KUBESIM_DATABASE": url, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_fleet_target.py",
            *args,
        ],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_workers_share_a_failure_through_redis_and_a_plain_run_replays_it_first(
    tmp_path: Path, redis_url: str
) -> None:
    (tmp_path / "test_fleet_target.py").write_text(TARGET)
    client = redis.Redis.from_url(redis_url)
    assert client.dbsize() == 0
    started = time.monotonic()
    first = _pytest(
        tmp_path, redis_url
    )  # no --hypothesis-seed: a fixed seed turns the database off
    first_output = first.communicate(timeout=300)[0]
    found_after = time.monotonic() - started
    assert "StoreViolation" in first_output, first_output[-3000:]
    assert "replay: kubesim replay ks1." in first_output, first_output[-3000:]
    saved = client.dbsize()
    assert saved > 0, "the failure was not saved to the shared database"

    # A second worker, elsewhere, starts from what the first saved: it fails on the replay of
    # the saved example (reuse phase) without generating anything.
    for name in ("second worker", "plain run"):
        again = _pytest(tmp_path, redis_url, "--hypothesis-show-statistics")
        output = again.communicate(timeout=300)[0]
        assert again.returncode == 1, (name, output[-3000:])
        statistics = output[output.find("Hypothesis Statistics") :]
        assert "reuse phase" in statistics, (name, output[-3000:])
        assert "generate phase" not in statistics, (name, statistics)
    print(f"fleet: first failure saved after {found_after:.1f} s; two later runs replayed it first")
