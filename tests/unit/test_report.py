"""Campaign reports: the data a failure carries (memory over rounds, the thread timeline) and
the page and JSON built from it, from Python, the CLI and the pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubesim.checks.store import judge
from kubesim.cli.main import load_factory
from kubesim.report import write_report
from kubesim.report.data import campaign_data
from kubesim.report.html import render
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import ReadConcurrently
from kubesim.testing.check import check_store

ROOT = Path(__file__).resolve().parents[2]
TORN = "models.ksm_relist:clear_then_add"  # a relist that readers see half done
LEAK = "models.kubearmor:before_pr1553"  # endpoints appended on every re-sent ADDED


def test_a_timeline_names_who_ran_and_the_line_where_the_schedule_preempted_it() -> None:
    # A preemption at the 7th hot point: inside the store's relist, where the reader that waits
    # for relists reads it half done.
    result = run_scenario(
        load_factory(TORN), [ReadConcurrently()], seed=0, schedule=(-8,), timeline=True
    )
    assert not judge(result.recording).ok  # the torn read this schedule produces
    stops = result.recording.stops
    assert stops is not None
    assert {s.thread for s in stops} == {"store", "reader-1", "reader-1-relist"}
    preempted = [s for s in stops if s.thread == "store" and s.why.startswith("preempted")]
    assert preempted, stops
    # The store was preempted inside its relist (an add after the clear), in the model's code:
    # by the schedule, and at the points the relist reader samples.
    assert all(s.location.startswith("models/ksm_relist/__init__.py:") for s in preempted)
    assert any("in add" in s.location for s in preempted), preempted
    assert [s.steps for s in stops] == sorted(s.steps for s in stops)
    assert [line for _, line, _, _ in result.recording.step_starts] == ["reader thread: read()"]


def test_a_timeline_is_recorded_only_when_asked_and_does_not_change_the_run() -> None:
    plain = run_scenario(load_factory(TORN), [ReadConcurrently()], seed=0, schedule=(-8,))
    timed = run_scenario(
        load_factory(TORN), [ReadConcurrently()], seed=0, schedule=(-8,), timeline=True
    )
    assert plain.recording.stops is None
    assert plain.trace_hash == timed.trace_hash


def test_the_data_of_a_leak_carries_memory_over_rounds_and_every_oracle() -> None:
    factory = load_factory(LEAK)
    report = check_store(factory, spec=LEAK, examples=20, seed=0, database=":memory:")
    data = campaign_data(report, seconds=1.0, seed=0, factory=factory)
    json.dumps(data)  # the contract: every value serialisable
    assert not data["ok"]
    statuses = {o["name"]: o["status"] for o in data["oracles"]}
    assert statuses["bounded"] == "failed"
    assert statuses["converge"] == "passed"
    assert statuses["snapshot-reads"] == "skipped"
    rounds = data["failure"]["rounds"]
    retained = [r["retained_bytes"] for r in rounds]
    assert retained[-1] > retained[0]  # the leak, as the plot shows it
    assert {r["server_objects"] for r in rounds} == {6}  # against a constant live set
    assert data["failure"]["timeline"]["threads"] == ["store"]


def test_the_page_is_self_contained_escapes_what_it_shows_and_draws_both_charts() -> None:
    factory = load_factory(TORN)
    report = check_store(factory, spec=TORN, examples=200, seed=0, database=":memory:")
    assert report.found is not None
    data = campaign_data(report, seconds=2.0, seed=0, factory=factory)
    data["failure"]["violations"][0]["details"].append("<script>alert(1)</script>")
    page = render(data)
    assert page.startswith("<!doctype html>")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'aria-label="memory over rounds"' in page
    assert 'aria-label="thread timeline"' in page
    assert "models/ksm_relist/__init__.py:" in page  # where the store stopped
    assert data["failure"]["replay"] in page
    for outside in ("http://", "https://", "src=", "@import"):
        assert outside not in page, f"the page loads something from outside ({outside})"


def test_a_passing_campaign_shows_what_it_covered(tmp_path: Path) -> None:
    factory = load_factory("models.ksm_relist:build_then_swap")  # the fix of TORN
    report = check_store(factory, examples=10, seed=0, database=":memory:")
    assert report.ok
    page = write_report(tmp_path / "nested" / "pass.html", report, seconds=1.0, seed=0)
    text = page.read_text(encoding="utf-8")
    assert "passed" in text
    assert "What the campaign covered" in text
    assert "What broke" not in text
    for kind in report.kinds:
        assert f"<code>{kind}</code>" in text


def _kubesim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_check_writes_the_report_and_json_carries_the_same_data(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = _kubesim(
        "check",
        LEAK,
        "--examples",
        "20",
        "--database",
        ":memory:",
        "--json",
        "--report",
        str(page),
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    failure = data["failure"]
    assert failure["rounds"][-1]["retained_bytes"] > failure["rounds"][0]["retained_bytes"]
    assert failure["timeline"]["threads"] == ["store"]
    text = page.read_text(encoding="utf-8")
    assert failure["replay"] in text
    # The replay writes its own page too.
    again = tmp_path / "replay.html"
    token = failure["replay"].split()[-1]
    replayed = _kubesim("replay", token, "--report", str(again), cwd=ROOT)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert f"report: {again}" in replayed.stdout
    replayed_page = again.read_text(encoding="utf-8")
    assert failure["replay"] in replayed_page
    # One example: what it could draw is what it drew, so no kind is "never drawn".
    assert "Never drawn" not in replayed_page
    assert "1 example," in replayed_page


@pytest.mark.parametrize("command", ["check", "replay"])
def test_a_report_path_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, command: str
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    if command == "replay":
        factory = load_factory(LEAK)
        report = check_store(factory, spec=LEAK, examples=5, seed=0, database=":memory:")
        assert report.found is not None
        done = _kubesim(
            "replay", report.found.replay.token(), "--report", str(blocker / "r.html"), cwd=ROOT
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert "is a file, not a folder" in done.stderr
        return
    done = _kubesim(
        "check",
        "models.kubearmor:after_pr1553",
        "--examples",
        "1",
        "--database",
        ":memory:",
        "--report",
        str(blocker / "report.html"),
        cwd=ROOT,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is a file, not a folder" in done.stderr
    assert "OK after" not in done.stdout  # refused before the campaign ran


def test_list_kinds_needs_no_factory_and_check_without_one_is_a_usage_error() -> None:
    listed = _kubesim("check", "--list-kinds", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[0] == "create"
    missing = _kubesim("check", cwd=ROOT)
    assert missing.returncode == 2
    assert "factory is required" in missing.stderr
