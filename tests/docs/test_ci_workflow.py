"""The GitHub Actions workflow in docs/how-to/ci.md runs what the page's tested blocks run.

The workflow cannot run here, so it is read: it must parse, every command of its ``run:`` steps
must be a command of one of the page's ``sh`` blocks (which the docs tests run, with their exit
codes checked), the artifact it keeps must be the report the check writes, and the cache it
restores must be where kubesim keeps failing examples. A change to the commands on the page that
is not made in the workflow, or the other way round, fails here.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml
from test_docs import _commands, blocks_of

from kubesim.testing.check import DEFAULT_DATABASE

PAGE = "docs/how-to/ci.md"


def _workflow() -> dict[Any, Any]:
    found = [b for b in blocks_of(PAGE) if b.kind == "yaml"]
    assert len(found) == 1, f"{PAGE}: expected one yaml block (the workflow), got {len(found)}"
    data = yaml.safe_load(found[0].code)
    assert isinstance(data, dict)
    return data


def _steps() -> list[dict[str, Any]]:
    jobs = _workflow()["jobs"]
    return [step for job in jobs.values() for step in job["steps"]]


def _run_commands() -> list[str]:
    return [c for step in _steps() if "run" in step for c in _commands(step["run"])]


def _page_commands() -> set[str]:
    return {
        " ".join(shlex.split(command))
        for block in blocks_of(PAGE)
        if block.kind == "sh" and block.not_run is None and block.exits == 0
        for command in _commands(block.code)
    }


def test_the_workflow_is_a_workflow() -> None:
    data = _workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers, "the workflow has no triggers"
    assert {"push", "pull_request"} <= set(triggers)
    assert any(step.get("uses", "").startswith("actions/checkout@") for step in _steps())


def test_every_run_step_is_a_command_the_page_runs() -> None:
    commands = _run_commands()
    assert any(c.startswith("kubesim check ") for c in commands)
    page = _page_commands()
    strays = [c for c in commands if " ".join(shlex.split(c)) not in page]
    assert not strays, f"workflow commands not run by {PAGE}'s sh blocks: {strays}"


def test_the_artifact_is_the_report_and_the_cache_is_the_example_database() -> None:
    check = next(c for c in _run_commands() if c.startswith("kubesim check "))
    args = shlex.split(check)
    report = args[args.index("--report") + 1]
    uploads = [s for s in _steps() if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert [str(s["with"]["path"]).strip() for s in uploads] == [report]
    caches = [s for s in _steps() if s.get("uses", "").startswith("actions/cache@")]
    assert [Path(s["with"]["path"]) for s in caches] == [Path(DEFAULT_DATABASE)]
    assert "--database" not in args  # the cached folder is the default one
