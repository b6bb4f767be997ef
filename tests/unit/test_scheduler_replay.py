"""A failure's replay is a command that runs: tested by running it in a fresh shell.

``explore`` prints ``Found.replay``, a ``kubesim schedule ...`` command; pasted into a shell it
must run that one schedule again, fail the same way, and print the same trace hash.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kubesim.cli.main import main
from kubesim.sched import (
    PCT,
    InvalidStrategy,
    Livelock,
    Preemptions,
    RandomWalk,
    describe_strategy,
    explore,
    parse_strategy,
)

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import racy_stores  # noqa: E402

TRACED = [racy_stores]


def _run_in_a_fresh_shell(command: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # `kubesim` as the installed console script would be, for this interpreter and this tree.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kubesim"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m kubesim.cli.main "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]),
    }
    return subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,  # not the repository: the command must not depend on where it runs
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _printed_trace(stdout: str) -> str:
    match = re.search(r"^trace ([0-9a-f]{64})$", stdout, re.MULTILINE)
    assert match is not None, stdout
    return match.group(1)


@pytest.mark.parametrize("hash_seed", [None, "0"])
def test_the_replay_of_a_race_runs_in_a_fresh_shell_and_fails_the_same_way(
    hash_seed: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if hash_seed is None:
        monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    else:
        monkeypatch.setenv("PYTHONHASHSEED", hash_seed)
    found = explore(racy_stores.check_then_act_scenario, schedules=200, seed=5, traced=TRACED).found
    assert found is not None
    if hash_seed is None:
        assert found.replay.startswith("kubesim schedule racy_stores:check_then_act_scenario ")
        assert "hash seed of this process is unknown" in found.note
    else:
        assert found.replay.startswith("PYTHONHASHSEED=0 kubesim schedule ")
        assert "hash seed" not in found.note
    assert f"Python {sys.version.split()[0]}" in found.note
    done = _run_in_a_fresh_shell(found.replay, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAILED: {type(found.failure).__name__}: " in done.stdout
    assert "claimed twice" in done.stdout
    assert _printed_trace(done.stdout) == found.result.trace_hash


def test_the_replay_of_a_livelock_found_by_max_time_carries_max_time(tmp_path: Path) -> None:
    found = explore(
        racy_stores.ticking_forever_scenario, schedules=1, seed=0, traced=TRACED, max_time=30
    ).found
    assert found is not None
    assert isinstance(found.failure, Livelock)
    assert "--max-time 30" in found.replay
    done = _run_in_a_fresh_shell(found.replay, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED: Livelock: virtual time would pass max_time=30" in done.stdout
    assert _printed_trace(done.stdout) == found.result.trace_hash


def test_the_python_replay_call_runs_and_gives_the_same_trace() -> None:
    found = explore(racy_stores.check_then_act_scenario, schedules=200, seed=5, traced=TRACED).found
    assert found is not None
    statements, call = found.replay_call.split("; ", 1)
    namespace: dict[str, object] = {}
    exec(statements, namespace)  # the imports the call names
    result = eval(call, namespace)
    assert result.trace_hash == found.result.trace_hash


def test_a_scenario_defined_in_a_test_says_it_cannot_be_replayed_from_a_shell() -> None:
    def scenario() -> None:
        racy_stores.check_then_act_scenario()

    found = explore(scenario, schedules=200, seed=5, traced=TRACED).found
    assert found is not None
    assert found.replay.startswith("not replayable from a shell: SCENARIO is the scenario function")
    assert "<locals>.scenario" in found.replay
    assert "kubesim.sched.run_schedule(SCENARIO, seed='5/" in found.replay_call
    assert "kubesim schedule" not in found.replay


# -- the command line --------------------------------------------------------------------------


def test_a_schedule_that_passes_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "schedule",
            "racy_stores:locked_scenario",
            "--seed",
            "7",
            "--strategy",
            "RandomWalk(0.2)",
            "--traced",
            "racy_stores",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "\npassed\n" in out
    _printed_trace(out)


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["racy_stores:locked_scenario", "--strategy", "__import__('os').getcwd()"], "--strategy"),
        (["racy_stores:locked_scenario", "--strategy", "PCT(0)"], "depth >= 1"),
        (["racy_stores:locked_scenario", "--strategy", "Sleep(1)"], "unknown strategy 'Sleep'"),
        (["no_such_module_here:scenario", "--strategy", "PCT(2)"], "cannot import"),
        (["racy_stores", "--strategy", "PCT(2)"], "MODULE:SCENARIO"),
        (["racy_stores:missing", "--strategy", "PCT(2)"], "has no attribute 'missing'"),
        (
            ["racy_stores:locked_scenario", "--strategy", "PCT(2)", "--traced", "no_such_mod"],
            "--traced 'no_such_mod'",
        ),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["schedule", *argv[:1], "--seed", "0", *argv[1:]])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("kubesim schedule: ")
    assert complaint in err
    assert "Traceback" not in err


# -- strategies as text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "strategy",
    [
        RandomWalk(0.05),
        PCT(3, 417),
        Preemptions([9, 2, 30]),
        PCT(2, 10, name="custom"),
    ],
)
def test_a_strategy_written_as_text_reads_back_as_the_same_strategy(strategy: object) -> None:
    text = describe_strategy(strategy)  # type: ignore[arg-type]
    assert text is not None
    again = parse_strategy(text)
    assert type(again) is type(strategy)
    assert describe_strategy(again) == text
    assert again.name == strategy.name  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    ["open('x')", "PCT(depth=2, depth=3)", "PCT(2", "PCT(2.5)", "Preemptions(points=[1, 'a'])"],
)
def test_strategy_text_that_is_not_a_strategy_is_refused_by_name(text: str) -> None:
    with pytest.raises(InvalidStrategy, match=re.escape(text[:4])):
        parse_strategy(text)
