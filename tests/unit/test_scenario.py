"""The property layer end to end: steps as data, runs that record, oracles that judge them.

The stores are in ``property_stores.py``: a correct reflector (no property may break), the
KubeArmor shape (grows with every re-watch, misses deletes), a store that lists once, and one
that re-watches in a hot loop.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence

import property_stores as stores
import pytest
from hypothesis import given, settings

import kubesim as kubesim_package
from kubesim.checks.store import judge
from kubesim.cli import check as cli_check
from kubesim.scenario.run import Setup, run_scenario
from kubesim.scenario.steps import (
    KINDS,
    STEP_KINDS,
    AdvanceTime,
    ChurnPods,
    CompactHistory,
    CreatePods,
    DeletePods,
    DeleteWhileDisconnected,
    DropWatches,
    ExpireWatches,
    FailRequests,
    PatchLabels,
    ResumeWatchCache,
    ReusePodIP,
    SendBookmarks,
    SlowConsumerBurst,
    StallWatchCache,
    UpdatePodStatus,
    step_from_json,
)
from kubesim.testing.check import check_store
from kubesim.testing.replay import InvalidReplayToken, parse_token
from kubesim.testing.strategies import ALL_KINDS, DEFAULT_KINDS, scenarios

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPEC = "tests/unit/property_stores.py:appending_watcher"

# Every kind the single-threaded runner applies (reader threads and crash-restart need the
# controlled simulation's extra threads; they have tests of their own).
EVERY_SERVER_STEP = [
    CreatePods(2),
    PatchLabels(3, unique=True),
    UpdatePodStatus(1),
    ReusePodIP(0),
    ExpireWatches(),
    SendBookmarks(),
    DropWatches(),
    DeleteWhileDisconnected(1, 2),
    DeletePods(1, 1),
    ChurnPods(2),
    CompactHistory(),
    ExpireWatches(with_error=True),
    StallWatchCache(),
    CreatePods(1),
    ResumeWatchCache(),
    FailRequests(2, 429),
    SlowConsumerBurst(events=12, buffer=3),
    AdvanceTime(1900),
]


def violated(result: object) -> dict[str, str]:
    verdict = judge(result.recording)  # type: ignore[attr-defined]
    return {v.property: str(v) for v in verdict.violations}


# -- the step vocabulary ---------------------------------------------------------------------------
def test_the_step_table_covers_the_fault_vocabulary() -> None:
    covered = {fault for row in STEP_KINDS for fault in row.fault.split()}
    # F14 (several reflectors feeding one store) is the store's own design, not a server fault.
    assert {f"F{n}" for n in range(1, 14)} <= covered
    assert {"HTTP", "restart"} <= covered
    assert set(KINDS) == set(ALL_KINDS)


@given(scenarios(max_steps=6))
@settings(max_examples=60, deadline=None)
def test_every_drawn_step_prints_one_line_and_survives_json(steps: list) -> None:
    for step in steps:
        line = str(step)
        assert line
        assert "\n" not in line
        assert step_from_json(json.loads(json.dumps(step.to_json()))) == step


def test_swarm_testing_leaves_every_kind_out_of_some_examples() -> None:
    seen_without: set[str] = set()

    @given(scenarios(max_steps=8))
    @settings(max_examples=80, deadline=None, database=None)
    def draw(steps: list) -> None:
        present = {step.kind for step in steps}
        if steps:
            seen_without.update(set(ALL_KINDS) - present)

    draw()
    assert seen_without == set(ALL_KINDS)


def test_bad_kinds_are_named() -> None:
    with pytest.raises(ValueError, match=r"got kinds=\['expire', 'nope'\]"):
        scenarios(kinds=["expire", "nope"])


# -- runs ------------------------------------------------------------------------------------------
def test_a_correct_reflector_breaks_no_property_under_every_server_step() -> None:
    result = run_scenario(stores.reflector, EVERY_SERVER_STEP, seed=3)
    assert violated(result) == {}
    verdict = judge(result.recording)
    assert {"bounded", "converge", "monotone", "progress", "failure"} <= set(verdict.ran)
    assert ("effects-once", "needs the store's effects() hook") in verdict.skipped
    assert len(result.lines) == len(EVERY_SERVER_STEP)
    assert result.lines[7] == "delete team-0/web-004 while disconnected"  # key order


def test_the_same_seed_and_steps_give_the_same_trace() -> None:
    first = run_scenario(stores.reflector, EVERY_SERVER_STEP, seed=5)
    again = run_scenario(stores.reflector, EVERY_SERVER_STEP, seed=5)
    other = run_scenario(stores.reflector, EVERY_SERVER_STEP, seed=6)
    assert first.trace_hash == again.trace_hash
    assert first.lines == again.lines
    assert first.trace_hash != other.trace_hash


def test_the_kubearmor_shape_grows_in_the_tail_and_keeps_a_phantom() -> None:
    result = run_scenario(stores.appending_watcher, [DeleteWhileDisconnected(1)], seed=1)
    found = violated(result)
    # The first three tail rounds grew, so three more were played: growth that goes on.
    assert "sizes()['endpoints'] changed over the last 3 tail rounds" in found["bounded"]
    # 6 endpoints at first, the phantom's one kept, 5 more per re-watch.
    assert "at 5 objects: 31 -> 36 -> 41 -> 46" in found["bounded"]
    assert (
        "1 phantom(s) the server no longer has (missed deletes): team-0/web-000"
        in (found["converge"])
    )


def test_a_store_that_lists_once_is_an_error_not_a_pass() -> None:
    result = run_scenario(stores.ListOnce, [CreatePods(1)], seed=1)
    found = violated(result)
    assert list(found) == ["stopped-watching"]
    assert "returned at round 1" in found["stopped-watching"]


def test_a_hot_reconnect_loop_is_stopped_and_reported_not_hung() -> None:
    # Watches end; every re-watch fails at once, and the store re-watches at once, for ever.
    steps = [FailRequests(count=5_000, code=503), ExpireWatches()]
    result = run_scenario(stores.NoBackoff, steps, seed=1)
    found = violated(result)
    assert list(found) == ["progress"]
    assert "API requests at virtual time 0 s without waiting for anything" in found["progress"]


def test_too_large_resource_version_comes_after_the_watch_caches_wait() -> None:
    # The cache stalls; the store relists (storage is ahead of the cache) after a 410 and
    # watches from the fresh RV, which the cache refuses as "Too large" after waiting 3 s for
    # it, as kube-apiserver's does: a store that re-watches at once is not a hot loop then.
    steps = [StallWatchCache(), CreatePods(1), ExpireWatches(with_error=True), AdvanceTime(60)]
    result = run_scenario(stores.NoBackoff, steps, seed=1)
    assert violated(result) == {}
    before, after = result.recording.rounds[3], result.recording.rounds[4]
    # 60 virtual seconds of a watch refused after 3 s each time: one request per 3 s.
    assert after.requests - before.requests == 20


@pytest.mark.parametrize("factory", [stores.own_client, stores.incluster_client])
def test_a_store_that_loads_its_own_configuration_talks_to_the_simulation(factory: object) -> None:
    result = run_scenario(factory, [CreatePods(1), ExpireWatches()], seed=1)  # type: ignore[arg-type]
    assert violated(result) == {}
    assert result.recording.rounds[-1].view is not None
    assert len(result.recording.rounds[-1].view) == 7
    # Nothing leaks out of the run: loading a configuration now reads the real files again.
    from kubernetes import config

    with pytest.raises(config.ConfigException):
        config.load_incluster_config()


def test_setup_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="tail_rounds=1"):
        Setup(tail_rounds=1)


# -- check_store, replay -----------------------------------------------------------------------
def test_check_store_finds_the_leak_shrinks_it_and_the_token_replays_in_a_fresh_process() -> None:
    report = check_store(
        stores.appending_watcher, spec=SPEC, examples=30, seed=1, database=":memory:"
    )
    assert report.found is not None
    assert "bounded" in report.found.properties
    assert len(report.found.result.steps) <= 10
    token = report.found.replay.token()
    assert parse_token(token).steps == tuple(report.found.result.steps)
    # The printed line itself, in a fresh shell: `kubesim replay ks1....`.
    bin_dir = os.path.dirname(sys.executable)
    if shutil.which("kubesim", path=bin_dir) is None:
        pytest.skip("the kubesim console script is not installed beside this interpreter")
    assert report.found.replay.command() == f"kubesim replay {token}"
    replayed = subprocess.run(
        ["bash", "-c", report.found.replay.command()],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT, "PATH": bin_dir + os.pathsep + os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replayed.returncode == 1, replayed.stderr
    assert f"trace {report.found.result.trace_hash[:16]}" in replayed.stdout
    assert "bounded: the store grows" in replayed.stdout


def test_check_store_raises_no_false_alarm_on_a_correct_reflector() -> None:
    kinds = [k for k in ALL_KINDS if k not in ("read", "crash")]
    report = check_store(stores.reflector, examples=40, seed=2, kinds=kinds, database=":memory:")
    assert report.ok, str(report.found)
    assert report.examples == 40
    assert sum(report.kinds.values()) > 40


def test_a_cut_token_is_named_as_such() -> None:
    with pytest.raises(InvalidReplayToken, match="was it cut"):
        parse_token("ks1.eNoljMEKwyAQRP9lz8FqAy146y")


# -- the command line ------------------------------------------------------------------------------
def kubesim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_kubesim_check_exits_1_on_a_violation_with_the_replay_line() -> None:
    done = kubesim("check", SPEC, "--examples", "20", "--database", ":memory:")
    assert done.returncode == 1, done.stderr
    assert "FAILED" in done.stdout
    replay = [line for line in done.stdout.splitlines() if line.startswith("replay: ")]
    assert replay
    assert replay[0].startswith("replay: kubesim replay ks1.")


def test_kubesim_check_json_carries_the_failure() -> None:
    done = kubesim("check", SPEC, "--examples", "20", "--database", ":memory:", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["failure"]["violations"][0]["property"] in ("bounded", "converge")
    assert report["failure"]["replay"].startswith("kubesim replay ks1.")


def test_steps_drawn_lists_the_kinds_the_campaign_could_draw() -> None:
    done = kubesim("check", SPEC, "--examples", "3", "--database", ":memory:", "--faults", "expire")
    [drawn] = [line for line in done.stdout.splitlines() if line.startswith("steps drawn: ")]
    kinds = [item.rsplit(" ", 1)[0] for item in drawn.removeprefix("steps drawn: ").split(", ")]
    workload = [row.kind for row in STEP_KINDS if not row.fault]
    assert kinds == [row.kind for row in STEP_KINDS if row.kind in {*workload, "expire"}]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["check", "no_such_module:factory"], "cannot import"),
        (["check", SPEC, "--faults", "expire,nope"], "unknown fault kind(s) ['nope']"),
        (["check", SPEC, "--faults", "craash"], "['craash'] (did you mean 'crash'?)"),
        (["check", SPEC, "--faults", "create"], "create is a workload kind, always drawn"),
        (["check", SPEC, "--oracles", "histroy"], "['histroy'] (did you mean 'history'?)"),
        (["check", SPEC + "x"], f"no attribute {SPEC.rpartition(':')[2] + 'x'!r}"),
        (["check", SPEC + "x"], f"(did you mean {SPEC.rpartition(':')[2]!r}?)"),
        (["check", SPEC, "--kinds", "podz"], "no resource 'podz' (did you mean 'pods'?)"),
        (["replay", "ks1.garbage"], "not a valid kubesim replay token"),
        (["check", "tests/unit/property_stores.py:Reflector", "--pods", "-1"], "pods=-1"),
    ],
)
def test_usage_errors_exit_2_with_a_message(arguments: list[str], message: str) -> None:
    done = kubesim(*arguments)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unrelated_name_gets_no_suggestion() -> None:
    done = kubesim("check", SPEC, "--faults", "zzzzzz")
    assert done.returncode == 2
    assert "unknown fault kind(s) ['zzzzzz']" in done.stderr
    assert "did you mean" not in done.stderr


def test_version_names_kubesim_and_python() -> None:
    done = kubesim("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"kubesim {kubesim_package.__version__} (Python {platform.python_version()})"
    )


def test_list_kinds_separates_what_faults_takes_from_the_workload() -> None:
    listed = kubesim("check", "--list-kinds").stdout.splitlines()
    workload_at = listed.index("workload (always drawn; --faults does not take them):")
    faults_at = next(i for i, line in enumerate(listed) if line.startswith("faults (--faults"))
    workload = {line.split()[0] for line in listed[workload_at + 1 : faults_at]}
    faults = {line.split()[0] for line in listed[faults_at + 1 :]}
    assert workload == {row.kind for row in STEP_KINDS if not row.fault}
    assert faults == {row.kind for row in STEP_KINDS if row.fault}
    # Every kind listed under faults is one --faults takes, all of them at once too.
    faults_taken = argparse.Namespace(no_faults=False, faults=",".join(sorted(faults)))
    assert faults <= set(cli_check._kinds(faults_taken))


def test_one_example_is_said_in_the_singular() -> None:
    correct = "tests/unit/property_stores.py:reflector"
    done = kubesim("check", correct, "--examples", "1", "--database", ":memory:")
    assert "OK after 1 example (" in done.stdout, done.stdout


class _SilentLeak(stores.AppendingWatcher):
    sizes = None  # says nothing about itself: only the retained bytes can show the leak


def test_a_leak_the_store_does_not_report_is_found_in_its_retained_bytes_and_named() -> None:
    result = run_scenario(_SilentLeak, [], seed=1)
    found = violated(result)
    assert "retained bytes grew" in found["bounded"]
    assert "grows: store.endpoints (list): 30 -> 48 items" in found["bounded"]
    # Every tail round is walked but the middle one of the first three, whose figure the
    # median of two growths does not need (kubesim.checks.bounded.per_round_growth).
    rounds = [r for r in result.recording.rounds if r.phase == "tail"]
    assert [r.retained_bytes is not None for r in rounds] == [True, False, True, True, True, True]


def test_every_kind_is_drawn_within_the_first_examples_whatever_the_seed() -> None:
    # The draw of a default campaign (100 examples), as check_store makes it (the schedule,
    # then the scenario, whose swarm comes last): within its first 40 examples every step kind
    # appears, readers, crash and restart, stop and each fault included, for each of 20 seeds.
    # (Hypothesis plans its generation by the number of examples it is given: a campaign of 40
    # draws differently from the first 40 of 100, and it is the default that users run.)
    for seed in range(20):
        first = _first_draws(seed, examples=100)
        late = sorted(kind for kind in DEFAULT_KINDS if first.get(kind, 101) > 40)
        assert not late, f"seed {seed}: not drawn in the first 40 examples: {late}"
        # The opt-in kinds only when named: a default campaign draws as it did before them.
        assert not set(first) - set(DEFAULT_KINDS), f"seed {seed}: {sorted(first)}"


def test_an_opt_in_kind_is_drawn_when_named() -> None:
    opt_in = [k for k in ALL_KINDS if k not in DEFAULT_KINDS]
    assert opt_in == ["reset", "refused"]
    first = _first_draws(0, examples=100, kinds=[*DEFAULT_KINDS, *opt_in])
    assert {"reset", "refused"} <= set(first)


def _first_draws(
    seed: int, *, examples: int, kinds: Sequence[str] = DEFAULT_KINDS
) -> dict[str, int]:
    """The example at which each step kind is first drawn, in a campaign of ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    from kubesim.testing.check import MAX_PREEMPTION_POINT_TRACED, _schedule

    first: dict[str, int] = {}
    drawn = [0]

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def campaign(data: st.DataObject) -> None:
        data.draw(_schedule(MAX_PREEMPTION_POINT_TRACED))
        drawn[0] += 1
        for step in data.draw(scenarios(kinds=kinds)):
            first.setdefault(step.kind, drawn[0])

    campaign()
    return first
