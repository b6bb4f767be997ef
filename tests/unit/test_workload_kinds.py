"""Any kind in the workload: the steps write what the store watches, shaped to its scope.

Stores of Jobs, Services and pods, one namespace under a selector, and a custom resource from
a starting world of manifests (tests/unit/kind_stores.py, tests/unit/worlds/); the cluster's
controllers on the virtual clock for a job watcher.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes")

import kind_stores as stores

from kubesim.checks.store import judge
from kubesim.scenario.run import ScenarioResult, Setup, run_scenario
from kubesim.scenario.steps import (
    AdvanceTime,
    ChurnPods,
    CreatePods,
    DeletePods,
    DeleteWhileDisconnected,
    ExpireWatches,
    PatchLabels,
    PatchMetadata,
    ReadConcurrently,
    UpdatePodStatus,
)
from kubesim.testing.check import check_store
from kubesim.testing.replay import Replay, parse_token
from kubesim.workload.manifests import InvalidObjects, checked, load_manifests
from kubesim.workload.templates import NoTemplate

ROOT = Path(__file__).resolve().parents[2]
WIDGETS = ROOT / "tests" / "unit" / "worlds" / "widgets.yaml"
STEPS = [
    CreatePods(2),
    DeletePods(1),
    PatchLabels(2, key="team", unique=True),
    PatchMetadata(1),
    UpdatePodStatus(0),
    ExpireWatches(),
    DeleteWhileDisconnected(1, compacted=True, changed=1),
    ChurnPods(1),
]


def _keeping(factory: Any) -> tuple[Any, list[Any]]:
    """``factory``, and the list of the stores it made (the run's first: the long-running one)."""
    made: list[Any] = []

    def build(api_client: Any) -> Any:
        made.append(factory(api_client))
        return made[-1]

    return build, made


def _broken(result: ScenarioResult) -> dict[str, str]:
    return {v.property: str(v) for v in judge(result.recording).violations}


def _final(result: object) -> tuple[set[str], set[str]]:
    last = result.recording.rounds[-1]  # type: ignore[attr-defined]
    return set(last.view or {}), set(last.server)


def test_a_job_watcher_gets_jobs_created_changed_and_deleted() -> None:
    result = run_scenario(stores.jobs, STEPS, seed=1)
    assert result.recording.failure is None
    assert result.lines[0] == "create team-0/job-006, team-1/job-007"
    assert result.lines[1] == "delete team-0/job-000"
    assert result.lines[2] == "patch labels of 2 jobs (team: unique values)"
    assert "update status of job team-0/job-002: Failed" in result.lines[4]
    view, server = _final(result)
    assert view == server
    assert len(server) == 6
    assert all("/job-" in key for key in server)


def test_a_store_that_keeps_deleted_jobs_is_found_by_the_default_campaign() -> None:
    leaky = check_store(stores.leaky_jobs, examples=30, seed=0, database=":memory:")
    assert not leaky.ok
    assert leaky.found is not None
    assert "phantom" in str(leaky.found)
    assert "/job-" in str(leaky.found)
    correct = check_store(stores.jobs, examples=30, seed=0, database=":memory:")
    assert correct.ok, str(correct.found)


def test_reads_of_another_kind_are_judged_against_that_kind() -> None:
    # A correct job cache's reads are the server's jobs at one resourceVersion; judged against
    # the server's pods (as snapshot-reads once did) every read of it looked torn.
    steps = [ReadConcurrently(), *STEPS[:3], ReadConcurrently(), ChurnPods(1), ReadConcurrently()]
    result = run_scenario(stores.read_jobs, steps, seed=1)
    assert len(result.recording.snapshot_reads) >= 3
    [judged] = result.recording.read_scopes
    assert judged.resource == "jobs"
    assert _broken(result) == {}


def test_a_read_that_keeps_a_deleted_job_is_torn_for_jobs() -> None:
    steps = [DeleteWhileDisconnected(1, compacted=True), CreatePods(1), ReadConcurrently()]
    found = _broken(run_scenario(stores.read_leaky_jobs, steps, seed=1))
    assert "snapshot-reads" in found, found
    assert "team-0/job-000 at rv" in found["snapshot-reads"], found["snapshot-reads"]
    assert _broken(run_scenario(stores.read_jobs, steps, seed=1)) == {}


def test_reads_over_two_kinds_are_judged_kind_by_kind() -> None:
    # Two reflectors (services, pods), each consistent at its own resourceVersion: no
    # multi-informer cache promises one state of both.
    steps = [
        ReadConcurrently(),
        ChurnPods(1),
        ReadConcurrently(),
        CreatePods(2),
        ReadConcurrently(),
    ]
    result = run_scenario(stores.read_service_registry, steps, seed=1)
    assert sorted(s.resource for s in result.recording.read_scopes) == ["pods", "services"]
    assert len(result.recording.snapshot_reads) >= 3
    assert _broken(result) == {}


def test_a_store_over_two_kinds_gets_changes_to_both() -> None:
    result = run_scenario(stores.service_registry, STEPS, seed=1)
    assert result.recording.failure is None
    assert result.lines[0] == (
        "create team-0/web-006, team-1/web-007; create team-0/svc-006, team-1/svc-007"
    )
    assert result.lines[2] == "patch labels of 2 pods, 2 services (team: unique values)"
    view, server = _final(result)
    assert view == server
    assert {key.split("/")[1].split("-")[0] for key in server} == {"web", "svc"}


def test_a_store_of_one_namespace_under_a_selector_gets_objects_in_its_scope() -> None:
    factory, made = _keeping(stores.shop_pods)
    result = run_scenario(factory, STEPS, seed=1)
    assert result.recording.failure is None
    assert result.lines[0] == "create shop/web-012, shop/web-013"
    view, server = _final(result)
    assert view == server
    assert server
    assert all(key.startswith("shop/") for key in server)
    assert {obj["metadata"]["labels"]["app"] for obj in made[0].cache.values()} == {"myapp"}


def test_a_custom_resource_from_the_starting_world_is_cloned_with_its_labels() -> None:
    objects = tuple(load_manifests(WIDGETS))
    factory, made = _keeping(stores.widgets)
    result = run_scenario(factory, STEPS[:3], seed=1, setup=Setup(objects=objects))
    assert result.recording.failure is None
    assert result.lines[0] == "create factory/widget-000, factory/widget-001"
    view = made[0].cache
    clone = view["factory/widget-000"]  # the objects are cloned in turn: gear, then cog
    assert clone["spec"] == {"size": 3, "colour": "blue"}
    assert clone["metadata"]["labels"]["owner"] == "plant-7"
    assert clone["metadata"]["annotations"]["example.com/batch"] == "42"
    assert view["factory/widget-001"]["spec"] == {"size": 1}
    # As created (the tail rounds give the scenario's label keys, app among them, new values).
    created = next(
        event.new.obj
        for event in result.recording.versions.events
        if event.old is None and event.new.obj["metadata"]["name"] == "widget-001"
    )
    assert created["metadata"]["labels"]["app"] == "gears"
    assert view["factory/widget-001"]["metadata"]["labels"]["app"] == "tail-003"


def test_declared_kinds_are_written_and_populated_before_the_store_starts() -> None:
    setup = Setup(kinds=("configmaps", "jobs.batch"))
    result = run_scenario(stores.jobs, [CreatePods(1)], seed=1, setup=setup)
    assert result.lines == ["create team-0/config-006; create team-0/job-006"]
    _, server = _final(result)
    assert len(server) == 7  # the store watches jobs only: 6 at the start, one created


def test_controllers_run_a_job_to_completion_on_the_virtual_clock() -> None:
    steps = [CreatePods(1), AdvanceTime(10), UpdatePodStatus(0, phase="Succeeded")]
    setup = Setup(controllers=True)
    factory, made = _keeping(stores.jobs)
    first = run_scenario(factory, steps, seed=1, setup=setup)
    again = run_scenario(stores.jobs, steps, seed=1, setup=setup)
    assert first.recording.failure is None
    assert first.trace_hash == again.trace_hash
    assert first.lines == again.lines
    assert "job team-0/job-000: its pod job-000-" in first.lines[2]
    job = made[0].cache["team-0/job-000"]
    conditions = {c["type"]: c["status"] for c in job["status"].get("conditions", ())}
    assert conditions.get("Complete") == "True", job["status"]


def test_a_kind_with_no_template_is_written_bare_when_the_server_takes_it() -> None:
    setup = Setup(kinds=("roles",))
    result = run_scenario(stores.jobs, [CreatePods(1), PatchLabels(1)], seed=1, setup=setup)
    assert result.lines == [
        "create team-0/role-006",
        "patch labels of 1 role (version=v2)",
    ]


def test_a_replay_token_carries_the_starting_world() -> None:
    objects = tuple(load_manifests(WIDGETS))
    setup = Setup(
        objects=objects, kinds=("widgets.example.com",), controllers=True, server_version="1.17"
    )
    replay = Replay(
        factory="tests/unit/kind_stores.py:widgets",
        steps=(CreatePods(1),),
        schedule=(),
        seed=3,
        setup=setup,
    )
    back = parse_token(replay.token())
    assert back.setup == setup
    # A pod store's token is what it was: no new keys.
    plain = Replay("m:f", (CreatePods(1),), (), 3, Setup()).token()
    assert "kinds" not in json.dumps(Setup().world_json())
    assert parse_token(plain).setup == Setup()


def test_a_starting_world_that_is_not_yaml_is_named_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "world.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [a\n")
    with pytest.raises(InvalidObjects) as raised:
        load_manifests(bad)
    message = str(raised.value)
    assert "\n" not in message
    assert "<unicode string>" not in message
    assert message.startswith(f"--objects: {bad}:5:1: not YAML: expected ',' or ']'")
    assert "flow sequence that starts at line 4, column 9" in message


def test_bad_starting_worlds_are_named() -> None:
    with pytest.raises(InvalidObjects, match=r"object 1 lacks metadata.name"):
        checked([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}])
    with pytest.raises(InvalidObjects, match=r"object 2 is a str"):
        checked([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, "x"])
    with pytest.raises(ValueError, match=r"kinds=.*resource names"):
        Setup(kinds="pods")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="serves no resource 'gizmos'"):
        check_store(stores.jobs, examples=1, setup=Setup(kinds=("gizmos",)))
    with pytest.raises(NoTemplate, match=r"no template for 'tokenreviews'.*stores no objects"):
        check_store(stores.jobs, examples=1, setup=Setup(kinds=("tokenreviews",)))
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(InvalidObjects, match=r"serves no Widget.*CustomResourceDefinition"):
        check_store(stores.jobs, examples=1, setup=Setup(objects=(widget,)))


def _kubesim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_command_line_takes_kinds_objects_and_controllers(tmp_path: Path) -> None:
    done = _kubesim(
        "check",
        "tests/unit/kind_stores.py:widgets",
        "--objects",
        str(WIDGETS),
        "--kinds",
        "widgets.example.com",
        "--controllers",
        "--examples",
        "3",
        "--database",
        ":memory:",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\n")
    refused = _kubesim("check", "tests/unit/kind_stores.py:jobs", "--objects", str(bad))
    assert refused.returncode == 2
    assert "object 1 lacks metadata.name" in refused.stderr
    unknown = _kubesim("check", "tests/unit/kind_stores.py:jobs", "--kinds", "gizmos")
    assert unknown.returncode == 2
    assert "serves no resource 'gizmos'" in unknown.stderr


def test_a_store_that_polls_is_learned_from_its_lists() -> None:
    result = run_scenario(stores.ConfigPoller, [CreatePods(1), AdvanceTime(10)], seed=1)
    assert result.recording.failure is None
    assert result.lines[0] == "create settings/config-006"
    _, server = _final(result)
    assert len(server) == 7, server  # 6 made in its scope when it first listed, and one more


def test_a_store_that_polls_is_asked_what_it_owes_for_the_objects_it_lists() -> None:
    # effects-expected takes the scope of a store that never watches from its lists: the
    # reloader owes a reload of each ConfigMap's last version in settings, role=config.
    result = run_scenario(stores.ConfigReloader, [CreatePods(1), AdvanceTime(10)], seed=1)
    expected = result.recording.expected
    assert expected is not None
    assert len(expected) == 7, expected
    assert all("settings/config-" in e.why for e in expected), expected
    assert _broken(result) == {}
