"""The mutation harness itself: a broken entry, a survivor or a broken run is never a kill."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .loader import ROOT, Mutant, load_mutants
from .probe import PACKAGE_ENV, REPORT_ENV, WRONG_PACKAGE
from .runner import (
    BROKEN,
    KILLED,
    PROBE,
    SURVIVED,
    Run,
    default_jobs,
    default_timeout,
    judge,
    run_tests,
)

GOOD = """dict(
    name="always-true",
    path="kubesim/thing.py",
    old="return x > 0",
    new="return True",
    tests=["tests/unit/test_thing.py::test_positive"],
    why="every number is positive",
)"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "kubesim").mkdir()
    (tmp_path / "kubesim" / "thing.py").write_text(
        "def positive(x):\n    return x > 0\n\n\ndef twice(x):\n    return x * 2 > 0 or x > 0\n"
    )
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_thing.py").write_text(
        "def test_positive():\n    pass\n\n\nclass TestThing:\n    def test_one(self):\n"
        "        pass\n"
    )
    (tmp_path / "tests" / "mutation").mkdir()
    return tmp_path


def load(repo: Path, **files: str) -> list[Mutant]:
    folder = repo / "tests" / "mutation"
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    return load_mutants(root=repo, folder=folder)


def problems(mutants: list[Mutant]) -> dict[str, str]:
    return {m.name: " | ".join(m.problems) for m in mutants}


def test_a_valid_entry_loads_with_no_problems(repo: Path) -> None:
    (mutant,) = load(repo, mutants_a=f"MUTANTS = [{GOOD}]")
    assert mutant.valid, mutant.problems
    assert mutant.patched_source(repo).startswith("def positive(x):\n    return True\n")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("return x > 0", "return x >= 0"),
            "old must occur exactly once in kubesim/thing.py, found 0",
        ),
        (("return x > 0", "x > 0"), "old must occur exactly once in kubesim/thing.py, found 2"),
        (("kubesim/thing.py", "kubesim/nope.py"), "kubesim/nope.py does not exist"),
        (("kubesim/thing.py", "models/thing.py"), "path must be a .py file inside kubesim/"),
        (("return True", "return (True"), "does not compile with the patch"),
        (("return True", "return x > 0"), "new is the same as old"),
        (("::test_positive", "::test_negative"), "no 'test_negative' in tests/unit/test_thing.py"),
        (("test_thing.py::", "test_other.py::"), "test file tests/unit/test_other.py of"),
        (("test_thing.py::test_positive", "test_thing.py"), "must name a test function"),
        (("tests/unit/", "tests/mutation/"), "outside tests/mutation/"),
        (('name="always-true"', 'name="Always True"'), "name must be short kebab-case text"),
        (('why="every number is positive"', "wyh='typo'"), "lacks why"),
        (('why="every number is positive"', "why='', extra=1"), "unknown keys extra"),
    ],
)
def test_a_broken_entry_is_reported_naming_the_entry_and_what_is_wrong(
    repo: Path, change: tuple[str, str], expected: str
) -> None:
    (mutant,) = load(repo, mutants_a=f"MUTANTS = [{GOOD.replace(*change)}]")
    assert not mutant.valid
    assert expected in " | ".join(mutant.problems)
    assert all(problem.startswith(f"{mutant.name}: ") for problem in mutant.problems)


def test_tests_may_name_class_methods_and_parametrizations(repo: Path) -> None:
    entry = GOOD.replace(
        '["tests/unit/test_thing.py::test_positive"]',
        '["tests/unit/test_thing.py::TestThing::test_one", '
        '"tests/unit/test_thing.py::test_positive[3-x]"]',
    )
    (mutant,) = load(repo, mutants_a=f"MUTANTS = [{entry}]")
    assert mutant.valid, mutant.problems


def test_a_name_used_twice_is_a_problem_of_the_second_entry(repo: Path) -> None:
    first, second = load(repo, mutants_a=f"MUTANTS = [{GOOD}]", mutants_b=f"MUTANTS = [{GOOD}]")
    assert first.valid
    assert second.problems == (
        "always-true: name also used in tests/mutation/mutants_a.py; names must be unique",
    )


def test_a_file_that_does_not_load_or_has_no_mutants_is_one_broken_entry(repo: Path) -> None:
    found = problems(
        load(repo, mutants_bad="MUTANTS = [", mutants_none="X = 1", mutants_str='MUTANTS = ["x"]')
    )
    assert set(found) == {"mutants_bad", "mutants_none", "mutants_str-0"}
    assert "tests/mutation/mutants_bad.py does not load: SyntaxError" in found["mutants_bad"]
    assert "must define MUTANTS, a non-empty list" in found["mutants_none"]
    assert "MUTANTS[0] is not a dict" in found["mutants_str-0"]


# -- verdicts -------------------------------------------------------------------------------------
MUTANT = Mutant(
    name="m",
    path="kubesim/x.py",
    old="a",
    new="b",
    tests=("tests/unit/test_x.py::test_a", "tests/unit/test_x.py::test_b"),
    why="weakens x",
    source="tests/mutation/mutants_x.py",
)
A, B = MUTANT.tests


def run(returncode: int | None, *reports: tuple[str, str, str]) -> Run:
    return Run(("python", "-m", "pytest"), returncode, reports, "/tmp/x/kubesim", "output")


def passing(*tests: str) -> list[tuple[str, str, str]]:
    return [(t, when, "passed") for t in tests for when in ("setup", "call", "teardown")]


BASELINE = run(0, *passing(A, f"{B}[1]", f"{B}[2]"))


def test_a_listed_test_failing_with_the_mutant_kills_it() -> None:
    verdict = judge(MUTANT, BASELINE, run(1, *passing(A), (f"{B}[2]", "call", "failed")))
    assert (verdict.status, verdict.detail) == (KILLED, f"by {B}[2]")


def test_all_listed_tests_passing_with_the_mutant_is_a_survivor_named_with_its_tests() -> None:
    verdict = judge(MUTANT, BASELINE, run(0, *passing(A, B)))
    assert verdict.status == SURVIVED
    for text in ("m ", "weakens x", A, B, "'a' -> 'b'", "-k m"):
        assert text in verdict.message


@pytest.mark.parametrize("returncode", [2, 3, 4, 5, None])
def test_a_run_that_neither_passes_nor_fails_is_a_broken_harness_not_a_kill(
    returncode: int | None,
) -> None:
    verdict = judge(MUTANT, BASELINE, run(returncode))
    assert verdict.status == BROKEN
    assert verdict.message.startswith("BROKEN HARNESS (not a kill)")


def test_exit_code_1_without_a_listed_failure_is_broken() -> None:
    assert judge(MUTANT, BASELINE, run(1, *passing(A, B))).status == BROKEN


@pytest.mark.parametrize(
    "baseline",
    [
        run(1, *passing(A), (B, "call", "failed")),
        run(0, *passing(A), (B, "setup", "skipped")),
        run(0, *passing(A)),  # B never ran
        run(None, *passing(A, B)),
    ],
    ids=["fails", "skipped", "absent", "timed-out"],
)
def test_a_kill_counts_only_if_the_tests_pass_without_the_mutant(baseline: Run) -> None:
    verdict = judge(MUTANT, baseline, run(1, (A, "call", "failed")))
    assert verdict.status == BROKEN
    assert "without the mutant these tests do not pass" in verdict.detail


# -- the subprocess -------------------------------------------------------------------------------
def test_the_tests_import_the_copy_of_kubesim_not_the_repository() -> None:
    done = run_tests(
        ["tests/unit/test_core.py::test_the_same_seed_gives_the_same_draws"],
        mutant=None,
        stop_at_first=True,
    )
    assert done.returncode == 0, done.output
    assert done.imported is not None
    assert Path(done.imported).name == "kubesim"
    assert Path(done.imported).resolve() != (ROOT / "kubesim").resolve()
    assert done.passed("tests/unit/test_core.py::test_the_same_seed_gives_the_same_draws")


def test_the_probe_stops_a_run_that_imported_the_wrong_kubesim(tmp_path: Path) -> None:
    (tmp_path / "kubesim_mutation_probe.py").write_text(PROBE.read_text())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    env[PACKAGE_ENV] = str(tmp_path / "kubesim")  # no copy there: the repository's is imported
    env[REPORT_ENV] = str(tmp_path / "report.json")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("-p", "kubesim_mutation_probe", str(ROOT / "tests/unit/test_core.py")),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == WRONG_PACKAGE, done.stdout + done.stderr
    assert "not from the copy under test" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("name", "value", "call"),
    [
        ("KUBESIM_MUTATION_JOBS", "0", default_jobs),
        ("KUBESIM_MUTATION_JOBS", "two", default_jobs),
        ("KUBESIM_MUTATION_TIMEOUT", "-1", default_timeout),
        ("KUBESIM_MUTATION_TIMEOUT", "soon", default_timeout),
    ],
)
def test_a_bad_setting_is_a_value_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, call: Callable[[], object]
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name} must be .*, got '{value}'"):
        call()
