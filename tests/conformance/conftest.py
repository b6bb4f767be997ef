"""Fixtures for the conformance suite: ``kubesim serve`` subprocesses and per-test namespaces.

One server process serves the whole session (``--seed 1``, loopback, a free port). Tests stay
independent by each working in a namespace of its own. Tests that need another server
configuration (a tiny ``--history-window``) start their own process with :func:`serve`.

Virtual time in ``kubesim serve`` follows the wall clock, so no assertion may depend on how
long anything takes: watches are ended with ``timeoutSeconds`` plus ``POST /kubesim/advance``,
or with the fault endpoints, and socket timeouts are only hang guards.
"""

from __future__ import annotations

import itertools
import os
import re
import select
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from .wire import Endpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BANNER = re.compile(r"kubesim serving at http://(127\.0\.0\.1):(\d+)\s*$")
_STARTUP_GUARD_SECONDS = 30.0


@contextmanager
def serve(*extra_args: str, controllers: bool = False) -> Iterator[Endpoint]:
    """Run ``kubesim serve --port 0 --seed 1 --nodes 0 --no-controllers <extra_args>`` until the
    block exits (``controllers``: without ``--no-controllers``, for the garbage collector).

    Yields the endpoint parsed from the first stdout line. At exit the process is terminated
    (killed if it lingers) and its stderr is checked for unhandled exceptions: a request
    handler that crashed is a conformance failure even if the client saw some answer.
    """
    env = dict(os.environ)
    # The repository's package, unless PYTHONPATH already names one first: the mutation
    # runner's mutated copy must be the one this server runs, or no HTTP test could kill it.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), ROOT]))
    # A working directory of its own: ``python -m`` puts it first on sys.path, where the
    # repository root would shadow PYTHONPATH.
    with tempfile.TemporaryFile() as stderr, tempfile.TemporaryDirectory() as cwd:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesim.cli.main",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--seed",
                "1",
                # An API server alone, as envtest runs one: no scheduler, kubelet or controllers,
                # so the only writes to a test's objects are the test's own.
                "--nodes",
                "0",
                *([] if controllers else ["--no-controllers"]),
                *extra_args,
            ],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], _STARTUP_GUARD_SECONDS)
            first = process.stdout.readline().decode() if ready else ""
            match = _BANNER.match(first)
            if match is None:
                stderr.seek(0)
                raise RuntimeError(
                    f"kubesim serve did not start: first line {first!r}, "
                    f"stderr {stderr.read().decode(errors='replace')[-2000:]}"
                )
            yield Endpoint(match.group(1), int(match.group(2)))
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
            if process.stdout is not None:
                process.stdout.close()
        stderr.seek(0)
        errors = stderr.read().decode(errors="replace")
        assert "Traceback" not in errors, f"kubesim serve logged an unhandled exception:\n{errors}"


@pytest.fixture(scope="session")
def api() -> Iterator[Endpoint]:
    """The shared ``kubesim serve`` process (default history window)."""
    with serve() as endpoint:
        yield endpoint


_namespace_numbers = itertools.count(1)


def namespace_name(test_name: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", test_name.lower().removeprefix("test_")).strip("-")
    suffix = f"-{next(_namespace_numbers)}"
    return (base[: 63 - len(suffix)].rstrip("-") or "ns") + suffix


@pytest.fixture
def make_namespace(api: Endpoint, request: pytest.FixtureRequest) -> Callable[[], str]:
    """Create a fresh namespace named after the test; call it again for a second one."""

    def create() -> str:
        name = namespace_name(request.node.name)
        api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": name}}, expect=201)
        return name

    return create


@pytest.fixture
def ns(make_namespace: Callable[[], str]) -> str:
    """A namespace of this test's own, on the shared server."""
    return make_namespace()
