"""The pytest plugin as a user meets it: test files in a fresh directory, run by pytest.

Each test writes a user's test file with ``pytester`` and runs pytest on it in a subprocess (so
that what the plugin imports, and the store's threads, stay out of this process). kubesim is
not installed from this checkout, so the runs load the plugin with ``-p``; installed, its
``pytest11`` entry point loads it with nothing on the command line (``-p no:kubesim`` keeps an
installed copy from loading twice).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import property_stores as stores
import pytest

import kubesim
from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.testing import store_property, store_test
from kubesim.testing.check import check_store
from kubesim.testing.properties import replay_spec

pytest_plugins = ["pytester"]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLUGIN = ("-p", "no:kubesim", "-p", "kubesim.testing.pytest_plugin", "-p", "no:cacheprovider")
# What the single-threaded runner applies today (reader threads and crash-restart need the
# controlled simulation's extra threads).
KINDS = ["create", "delete", "churn", "expire", "drop", "compact", "bookmark", "http-error"]


@pytest.fixture
def user(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project: the stores of property_stores.py as their module ``leaky_store``."""
    # The kubesim this process imported (a mutant's copy under tests/mutation), first.
    home = os.path.dirname(os.path.dirname(os.path.abspath(kubesim.__file__)))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    shutil.copy(os.path.join(HERE, "property_stores.py"), pytester.path / "leaky_store.py")
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*PLUGIN, "--kubesim-database", ":memory:", *args)


def failure_section(output: list[str], test: str) -> list[str]:
    """The lines pytest prints for one failed test: from its ``___ test ___`` header on."""
    start = next(n for n, line in enumerate(output) if re.match(rf"^_+ {test} _+$", line))
    end = next(
        n
        for n, line in enumerate(output[start + 1 :], start + 1)
        if re.match(r"^_+ \S+ _+$", line) or line.startswith("=")
    )
    return [line for line in output[start + 1 : end] if line.strip()]


# -- fixtures --------------------------------------------------------------------------------------
def test_a_users_test_file_gets_the_fixtures_with_no_conftest(user: pytest.Pytester) -> None:
    user.makepyfile(
        test_fixtures="""
        from kubernetes import client

        def test_server(kubesim_server):
            kubesim_server.create("namespaces", {"metadata": {"name": "team-a"}})
            assert kubesim_server.get("namespaces", "team-a")["metadata"]["name"] == "team-a"

        def test_client_on_the_simulation(kubesim_simulation, kubesim_client):
            kubesim_simulation.server.create("namespaces", {"metadata": {"name": "team-a"}})
            pod = {
                "metadata": {"name": "web-0"},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            }
            kubesim_simulation.server.create("pods", pod, namespace="team-a")
            pods = client.CoreV1Api(kubesim_client).list_namespaced_pod("team-a")
            assert [pod.metadata.name for pod in pods.items] == ["web-0"]

        def test_seed(kubesim_seed, kubesim_simulation, kubesim_server):
            assert kubesim_seed == 11
            assert kubesim_simulation.seed == 11
        """
    )
    result = run(user, "--kubesim-seed", "11")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["kubesim: seed 11*"])


def test_loading_the_plugin_imports_nothing_heavy(user: pytest.Pytester) -> None:
    user.makepyfile(
        test_plain="""
        import sys

        def test_modules():
            print("LOADED", " ".join(sorted(sys.modules)))
        """
    )

    def loaded(*plugin: str) -> set[str]:
        result = user.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", "-s")
        result.assert_outcomes(passed=1)
        line = next(line for line in result.outlines if "LOADED " in line)
        return set(line.split("LOADED ", 1)[1].split())

    added = loaded(*PLUGIN) - loaded("-p", "no:kubesim")
    light = {
        "kubesim",
        "kubesim._lazy",
        "kubesim._version",  # one literal
        "kubesim.checks",
        "kubesim.testing",
        "kubesim.testing.marks",
        "kubesim.testing.pytest_plugin",
        # the oracle table, to register one marker per oracle
        *(f"kubesim.checks.{m}" for m in ("store", "bounded", "effects", "progress", "state")),
        *(f"kubesim.checks.{m}" for m in ("recording", "violation")),
    }
    assert "kubesim.testing.pytest_plugin" in added
    assert added <= light, f"the plugin imported {sorted(added - light)} in a run without kubesim"


# -- store tests -----------------------------------------------------------------------------------
def test_a_leaky_store_fails_with_its_report_and_the_replay_line_last(
    user: pytest.Pytester,
) -> None:
    user.makepyfile(
        test_leak=f"""
        import logging
        import sys

        import leaky_store
        from kubesim.testing import store_test

        KINDS = {KINDS!r}

        test_leak = store_test("leaky_store:appending_watcher", examples=10, kinds=KINDS)

        # A logger with a handler of its own writes where it was told to, past kubesim.
        own = logging.getLogger("noisy.own")
        own.propagate = False
        own.addHandler(logging.StreamHandler(sys.__stderr__))

        def noisy(api_client):
            print("the store says hello")
            own.warning("a logger of its own")
            return leaky_store.appending_watcher(api_client)

        test_noisy_leak = store_test(noisy, examples=10, kinds=KINDS)
        """
    )
    result = run(user)
    result.assert_outcomes(failed=2)
    output = result.outlines
    assert "Traceback" not in result.stdout.str()

    section = failure_section(output, "test_leak")
    assert section[0].startswith("kubesim: leaky_store:appending_watcher broke bounded")
    assert any(re.search(r"sizes\(\)\['endpoints'\] .*: \d+ -> \d+ -> \d+", s) for s in section)
    assert any(line.startswith("scenario (") for line in section)
    assert section[-1].startswith("replay: kubesim replay ks1.")

    # The store's output is in the report; output kubesim did not hold (a logger with a
    # handler of its own) is pytest's to show, below the message, and the replay command is
    # repeated after it.
    noisy = failure_section(output, "test_noisy_leak")
    assert "  | the store says hello" in noisy
    assert any("Captured stderr call" in line for line in noisy)
    assert "a logger of its own" in noisy
    assert noisy[-1].startswith("kubesim replay ks1.")
    assert noisy[-1] in [line.removeprefix("replay: ") for line in noisy[:-1]]
    # The factory given as an object is named so that a fresh process imports it.
    assert "kubesim: test_leak:noisy broke bounded" in noisy[0]

    # The replay command, run as printed in the user's directory, fails the same way.
    command = section[-1].removeprefix("replay: ").split()
    trace = next(line for line in section if line.startswith("trace "))
    replayed = subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", *command[1:]],
        cwd=user.path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert trace in replayed.stdout.splitlines()
    assert "bounded: the store grows" in replayed.stdout


def test_the_seed_option_is_shown_and_a_correct_store_passes_under_any_seed(
    user: pytest.Pytester,
) -> None:
    user.makepyfile(
        test_reflector=f"""
        from kubesim.testing import store_test

        test_reflector = store_test("leaky_store:reflector", examples=4, kinds={KINDS!r})
        """
    )
    plain = run(user, "-rP")
    plain.assert_outcomes(passed=1)
    assert not any(line.startswith("kubesim: seed") for line in plain.outlines)
    plain.stdout.fnmatch_lines(["leaky_store:reflector: 4 examples, seed 0"])

    seeded = run(user, "-rP", "--kubesim-seed", "5", "--kubesim-examples", "3")
    seeded.assert_outcomes(passed=1)
    seeded.stdout.fnmatch_lines(
        [
            "kubesim: seed 5, examples 3, database :memory:",
            "*leaky_store:reflector: 3 examples, seed 5",
        ]
    )
    seeded.stdout.fnmatch_lines(
        ["oracles run: bounded, converge, failure, history, monotone, progress"]
    )


def test_oracle_markers_require_and_narrow_the_oracles(user: pytest.Pytester) -> None:
    user.makepyfile(
        test_marks=f"""
        import pytest
        import leaky_store
        from kubesim.testing import store_property, store_test

        KINDS = {KINDS!r}

        class NoView(leaky_store.Reflector):
            view = None

        def no_view(api_client):
            return NoView(api_client)

        test_needs_view = pytest.mark.kubesim_converge(
            store_test(no_view, examples=2, kinds=KINDS)
        )
        test_has_view = pytest.mark.kubesim_converge(
            store_test(leaky_store.reflector, examples=2, kinds=KINDS)
        )

        # The leak breaks bounded and converge, not progress: judged by progress only, it passes.
        @pytest.mark.kubesim_progress
        @store_property(examples=3, kinds=KINDS)
        def test_leak_judged_by_progress(tmp_path):
            assert tmp_path.is_dir()  # the decorated function gets fixtures
            return leaky_store.appending_watcher

        @pytest.mark.kubesim_bounded
        def test_not_a_store_test():
            pass
        """
    )
    result = run(user, "-rP")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    section = failure_section(result.outlines, "test_needs_view")
    assert section[0] == "kubesim: test_marks:no_view: 2 examples, seed 0"
    assert section[1] == (
        "required oracle converge (@pytest.mark.kubesim_converge) did not run: "
        "needs the store's view() hook"
    )
    result.stdout.fnmatch_lines(
        [
            "*test_leak_judged_by_progress*",
            "*Captured kubesim call*",
            "leaky_store:appending_watcher: 3 examples, seed 0",
            "oracles run: failure, progress",
            "oracles not selected: bounded, clean-stop, converge, effects-expected, "
            "effects-once, history, isolation, monotone, snapshot-reads",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*test_not_a_store_test: @pytest.mark.kubesim_bounded applies to kubesim store tests*"]
    )


def test_every_oracle_has_a_marker_with_help(user: pytest.Pytester) -> None:
    from kubesim.checks.store import ORACLES

    result = user.runpytest_subprocess(*PLUGIN, "--markers")
    for oracle in ORACLES:
        marker = "kubesim_" + oracle.name.replace("-", "_")
        result.stdout.fnmatch_lines([f"@pytest.mark.{marker}: *{oracle.summary}*"])


def test_bad_options_are_usage_errors(user: pytest.Pytester) -> None:
    result = user.runpytest_subprocess(*PLUGIN, "--kubesim-examples", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kubesim-examples: expected a number >= 1, got '0'*"])


# -- the Python side -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"kinds": ["nope"]}, ValueError, "kinds must be a non-empty collection"),
        ({"examples": 0}, ValueError, "examples=0"),
        ({"oracles": ["tidy"]}, ValueError, "got unknown ['tidy']"),
        ({"oracles": "bounded"}, TypeError, "oracles='bounded'"),
        ({"max_steps": -1}, ValueError, "max_steps=-1"),
    ],
)
def test_store_test_arguments_are_checked_where_they_are_written(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        store_test(stores.reflector, **arguments)  # type: ignore[arg-type]
    with pytest.raises(error, match=re.escape(message)):
        store_property(**arguments)  # type: ignore[arg-type]


def test_store_test_needs_a_factory_or_a_spec() -> None:
    with pytest.raises(TypeError, match="factory=42"):
        store_test(42)  # type: ignore[arg-type]


def test_judge_narrowed_to_some_oracles_runs_only_those_and_failure() -> None:
    result = run_scenario(stores.appending_watcher, [])
    everything = judge(result.recording)
    assert "bounded" in {v.property for v in everything.violations}
    narrowed = judge(result.recording, only=["progress"])
    assert narrowed.ok
    assert set(narrowed.ran) == {"failure", "progress"}
    assert ("bounded", "not selected") in narrowed.skipped
    with pytest.raises(ValueError, match=r"got unknown \['bounds'\]"):
        check_store(stores.reflector, oracles=["bounds"], database=":memory:")


def test_the_replay_spec_names_the_factory_as_a_fresh_process_imports_it(tmp_path: object) -> None:
    here = replay_spec(stores.appending_watcher, directory=HERE)
    assert here == ("property_stores:appending_watcher", None)
    from_root = replay_spec(stores.appending_watcher, directory=ROOT)
    assert from_root == ("tests/unit/property_stores.py:appending_watcher", None)
    assert replay_spec(json.dumps, directory=HERE) == ("json:dumps", None)

    _, note = replay_spec(lambda api_client: None, directory=HERE)
    assert note is not None
    assert "not a module-level name" in note


def test_the_entry_point_is_declared() -> None:
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["pytest11"] == {"kubesim": "kubesim.testing.pytest_plugin"}


class _MissesDeletes(stores.Reflector):
    """Bounded (re-sent pods only overwrite its cache), but keeps a phantom for a delete it
    missed while disconnected: a raw watch with no resourceVersion never hears of it."""

    def run(self) -> None:
        import json

        from kubernetes.watch.watch import iter_resp_lines
        from urllib3.exceptions import ProtocolError

        while True:
            response = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            try:
                for line in iter_resp_lines(response):
                    event = json.loads(line)
                    if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                        continue  # an ERROR (a 410) or a BOOKMARK: nothing to cache
                    obj = event["object"]
                    key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
                    if event["type"] == "DELETED":
                        self.cache.pop(key, None)
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        self.cache[key] = obj
            except ProtocolError:
                pass


def _misses_deletes(api_client: object) -> _MissesDeletes:
    return _MissesDeletes(api_client)  # type: ignore[arg-type]


def test_the_example_database_keeps_a_failure_and_the_next_run_tries_it_first() -> None:
    # --kubesim-database (and kubesim check --database) hand check_store a database; a failure
    # found once is saved and found again at once, however long the search took the first time.
    from hypothesis.database import InMemoryExampleDatabase

    database = InMemoryExampleDatabase()
    kinds = ["create", "delete-in-gap", "expire"]
    first = check_store(_misses_deletes, examples=20, database=database, kinds=kinds)
    assert first.found is not None
    assert "converge" in first.found.properties
    assert database.data, "the failing example was not saved"
    again = check_store(_misses_deletes, examples=20, database=database, kinds=kinds)
    assert again.found is not None
    assert again.found.replay.token() == first.found.replay.token()
    assert again.examples < first.examples


def test_the_report_option_writes_one_page_per_store_test(user: pytest.Pytester) -> None:
    user.makepyfile(
        test_pages=f"""
        from kubesim.testing import store_test

        test_leak = store_test("leaky_store:appending_watcher", examples=10, kinds={KINDS!r})
        """
    )
    result = run(user, "--kubesim-report", "reports")
    result.assert_outcomes(failed=1)
    page = user.path / "reports" / "test_pages.test_leak.html"
    assert page.exists(), sorted(p.name for p in (user.path / "reports").glob("*"))
    text = page.read_text(encoding="utf-8")
    assert "leaky_store:appending_watcher" in text
    assert 'aria-label="memory over rounds"' in text
    assert "kubesim replay ks1." in text


def test_a_fuzz_test_is_keyed_by_its_node_id_as_hypofuzz_keys_it(user: pytest.Pytester) -> None:
    # HypoFuzz adds the pytest node id to every test's database key; plain pytest only to
    # parametrized ones. The plugin adds it to fuzz_test targets, so what a HypoFuzz fleet
    # saved is what pytest replays; other Hypothesis tests keep their usual key.
    user.makepyfile(
        test_keys="""
        from hypothesis import given, strategies as st
        from kubesim.testing import fuzz_test

        test_fleet = fuzz_test("leaky_store:reflector", max_examples=1)

        @given(st.integers())
        def test_plain(x):
            pass

        def test_zz_keys(request):
            items = {item.name: item for item in request.session.items}
            fleet = items["test_fleet"].obj.hypothesis.inner_test
            plain = items["test_plain"].obj.hypothesis.inner_test
            assert fleet._hypothesis_internal_add_digest == b"test_keys.py::test_fleet"
            assert not hasattr(plain, "_hypothesis_internal_add_digest")
        """
    )
    run(user).assert_outcomes(passed=3)
