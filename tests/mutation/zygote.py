"""A fork server for the mutants' test runs: the client libraries imported once, a run forked
from them per mutant.

Every mutant's run is a pytest process of its own (runner.py says why), and each used to start
an interpreter and import the official client, pydantic, aiohttp and requests again: close to a
second of a run of two to five, 185 times. This process imports them once, then serves requests
read from its standard input, one JSON object a line, one at a time. For each it forks a child
that becomes the run exactly as ``python -m pytest`` started in the copy's directory would be:
that working directory, the run's environment, ``sys.path`` with the directory and the run's
``PYTHONPATH`` first, standard input from /dev/null, standard output and error to a file. It
answers ``pid N`` once the child is running (the runner kills it on a timeout), then ``exit C``.

What is imported here must never import kubesim: each run imports the copy under test itself,
and the probe plugin checks that it did. Nor a package pytest loads a plugin from (Hypothesis,
anyio, pytest-timeout...): pytest rewrites the asserts of those at start-up, and an imported
one is a warning, which the suite's ``filterwarnings = error`` makes a failure.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import Any

PRELOAD = (
    "kubernetes.client",
    "kubernetes.client.api.core_v1_api",
    "kubernetes.watch",
    "kubernetes_asyncio.client",
    "pydantic",
    "aiohttp",
    "requests",
    "urllib3",
    "orjson",
    "yaml",
)
# The exit code of a child that could not become a pytest run (pytest's own are 0 to 5).
CHILD_FAILED = 70


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # an optional client that is not installed: its tests skip anyway
    ours = sorted(m for m in sys.modules if m == "kubesim" or m.startswith("kubesim."))
    if ours:
        raise SystemExit(f"zygote: preloading imported {ours}: the runs would not test the copy")


def become_the_run(request: dict[str, Any], base_path: list[str]) -> int:
    """In the forked child: set the process up as the run's own, then run pytest."""
    cwd = request["cwd"]
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(request["env"])
    first = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [cwd, *first, *base_path]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    sys.argv = ["pytest", *request["args"]]
    import pytest

    return int(pytest.main(request["args"]))


def main() -> None:
    preload()
    here = os.path.dirname(os.path.abspath(__file__))
    inherited = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    # What a fresh interpreter has after its first entries: the standard library and
    # site-packages, without this folder and without the server's own PYTHONPATH.
    base_path = [p for p in sys.path if p not in inherited and p != here]
    answers = sys.stdout
    answers.write("ready\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = CHILD_FAILED
            try:
                code = become_the_run(request, base_path)
            except SystemExit as exc:  # as the interpreter would exit with it
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        answers.write(f"pid {pid}\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(f"exit {os.waitstatus_to_exitcode(status)}\n")
        answers.flush()


if __name__ == "__main__":
    main()
