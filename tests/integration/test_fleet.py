"""A fleet sharing one example database: a worker process fuzzes a buggy model against a real
Redis server and saves the failure there; a second worker and a plain pytest run, each in a
process of its own, then fail at once, replaying the saved failure before generating anything.

Needs ``redis-server`` (Debian's package; ``.ci/run`` installs it) and the ``redis`` package
(test extra); skips cleanly without them. Loopback only, bounded in time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
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


def _start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], int] | None:
    """``redis-server`` on a free loopback port, answering pings; None if it exited first (the
    port was taken between ``_free_port`` and its bind: another pytest-xdist worker's server)."""
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
            str(directory),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 30
    try:
        while True:  # hang guard while the server starts
            try:
                client.ping()
                return server, port
            except redis.ConnectionError:
                if server.poll() is not None:
                    return None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    except BaseException:
        server.terminate()
        server.wait(30)
        raise
    finally:
        client.close()


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    for _ in range(3):
        started = _start_redis(tmp_path)
        if started is not None:
            break
    else:
        pytest.fail("redis-server exited at start three times (no free port?)")
    server, port = started
    try:
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


HYPOFUZZ_PYTHON = os.environ.get("KUBESIM_HYPOFUZZ_PYTHON", "")


def _ci_variables() -> set[str]:
    """The environment variables by which Hypothesis decides it runs on CI."""
    try:
        from hypothesis._settings import _CI_VARS  # private; stable since 6.104
    except ImportError:
        return {"CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "TF_BUILD", "CIRCLECI"}
    return set(_CI_VARS)


FUZZ_ARGS = ("fuzz", "-n", "2", "--no-dashboard", "--", "test_fleet_target.py")
REPLAY_ARGS = ("test_fleet_target.py", "--hypothesis-show-statistics")
SHRUNK_FAILURE = b".hypofuzz.failures.shrunk."


@pytest.mark.skipif(
    not HYPOFUZZ_PYTHON,
    reason="KUBESIM_HYPOFUZZ_PYTHON names no Python with HypoFuzz (.ci/run sets one up)",
)
def test_hypofuzz_workers_save_a_failure_that_a_plain_pytest_run_replays_first(
    tmp_path: Path, redis_url: str
) -> None:
    # HypoFuzz needs an older Hypothesis than the test install (see the fleet how-to), so it
    # runs from a Python of its own; the replaying pytest run uses that Python too, because
    # saved examples do not carry across those Hypothesis versions.
    python = Path(HYPOFUZZ_PYTHON)
    assert python.exists(), f"KUBESIM_HYPOFUZZ_PYTHON={HYPOFUZZ_PYTHON} does not exist"
    (tmp_path / "test_fleet_target.py").write_text(TARGET)
    env = {**os.environ, "KUBESIM_DATABASE": redis_url, "PYTHONPATH": str(ROOT)}
    # Hypothesis derandomizes on CI machines (its "ci" profile), and HypoFuzz refuses
    # derandomized tests: a fleet is not a CI run, so its workers get no CI variables.
    fleet_env = {k: v for k, v in env.items() if k not in _ci_variables()}
    client = redis.Redis.from_url(redis_url)
    started = time.monotonic()
    fuzzers = subprocess.Popen(
        [str(python.parent / "hypothesis"), *FUZZ_ARGS],
        cwd=tmp_path,
        env=fleet_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the workers are its children: stop them all at the end
    )
    try:
        deadline = started + 300
        # HypoFuzz saves the shrunk failure where Hypothesis looks first (the test's own key),
        # then its observation under ".hypofuzz.failures.shrunk.": wait for that one, not for
        # the unshrunk failure it records as soon as it finds one.
        while not any(SHRUNK_FAILURE in key for key in client.scan_iter()):
            assert fuzzers.poll() is None, fuzzers.communicate()[0][-3000:]
            if time.monotonic() > deadline:  # a hang guard, not a claim about speed
                pytest.fail("two HypoFuzz workers saved no shrunk failure in 300 s")
            time.sleep(0.5)
        found_after = time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError):  # the workers may be gone already
            os.killpg(fuzzers.pid, signal.SIGTERM)
        fuzzers.communicate(timeout=60)
    replay = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *REPLAY_ARGS],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = replay.stdout + replay.stderr
    assert replay.returncode == 1, output[-3000:]
    assert "StoreViolation" in output, output[-3000:]  # the leak, not an error of the setup
    assert "replay: kubesim replay ks1." in output, output[-3000:]
    statistics = output[output.find("Hypothesis Statistics") :]
    assert "reuse phase" in statistics, output[-3000:]
    assert "generate phase" not in statistics, statistics
    print(
        f"hypofuzz: 2 workers saved a shrunk failure after {found_after:.1f} s; "
        "a pytest run replayed it first"
    )
