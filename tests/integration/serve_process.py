"""``kubesim serve`` as a subprocess for integration tests: start it, read its banner, stop it."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def serve(workdir: Path, *args: str, banner_lines: int, timeout: float) -> Iterator[list[str]]:
    """Run ``kubesim serve --port 0 --seed 1 <args>``; yield its first ``banner_lines`` lines.

    At exit the server is terminated (killed if it lingers) and its stderr must hold no
    traceback: a request handler that crashed is a failure even if the client got an answer.
    """
    env = dict(os.environ)
    # The repository's package, unless PYTHONPATH already names one first: the mutation
    # runner's mutated copy must be the one this server runs, or no HTTP test could kill it.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))
    stderr_path = workdir / "serve.stderr"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesim.cli.main",
                "serve",
                "--port",
                "0",
                "--seed",
                "1",
                *args,
            ],
            cwd=workdir,  # not the repository: ``python -m`` puts the cwd first on sys.path
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.put(line)

        pumper = threading.Thread(target=pump, name="kubesim-serve-stdout", daemon=True)
        pumper.start()
        try:
            try:
                banner = [lines.get(timeout=timeout) for _ in range(banner_lines)]
            except queue.Empty:
                pytest.fail(f"kubesim serve did not start: {stderr_path.read_text()}")
            yield banner
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            pumper.join(10)  # the pipe reaches EOF once the server has exited
            assert process.stdout is not None
            process.stdout.close()
    errors = stderr_path.read_text()
    assert "Traceback" not in errors, errors
