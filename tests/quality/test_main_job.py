"""The README's main job: `kubesim restarts` prints per-restart figures, draws, and judges."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def kubesim(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


SMALL = ("--pods", "6", "--restarts", "3", "--containers", "2")


def test_the_main_job_passes_when_the_buggy_model_grows_and_the_fixed_one_does_not(
    tmp_path: Path,
) -> None:
    picture = tmp_path / "restarts.png"
    done = kubesim(
        "restarts",
        "--leaky",
        "models.kubearmor:before_pr1553",
        "--bounded",
        "models.kubearmor:after_pr1553",
        *SMALL,
        "--plot",
        str(picture),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "endpoints=12 pods=6" in out
    assert "endpoints=48 pods=6" in out
    assert "models.kubearmor:before_pr1553: GROWS" in out
    assert "models.kubearmor:after_pr1553: BOUNDED" in out
    # The structure that grows is named, and the store's own sizes() enter the verdict.
    assert "grows: store.endpoints (list): 24 -> 48 items" in out
    assert "sizes()['endpoints'] grows from 24 to 48 entries" in out
    assert "replay: kubesim restarts" in out
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_the_main_job_fails_when_an_expectation_is_wrong() -> None:
    done = kubesim("restarts", "--bounded", "models.kubearmor:before_pr1553", *SMALL)
    assert done.returncode == 1
    assert "expected it to be bounded: FAILED" in done.stdout


def test_the_printed_figures_repeat_exactly_in_one_process_and_across_processes() -> None:
    args = ("restarts", "models.kubearmor:after_pr1553", "models.kubearmor:before_pr1553", *SMALL)
    env_runs = [kubesim(*args, env={"PYTHONHASHSEED": "0"}) for _ in range(2)]
    assert env_runs[0].returncode == env_runs[1].returncode == 0, env_runs[0].stderr
    assert env_runs[0].stdout == env_runs[1].stdout  # every byte figure and trace hash
    # Twice in one process: the second run starts from a warmed-up interpreter.
    child = (
        "import contextlib, io, sys\n"
        "from kubesim.cli.main import main\n"
        "outs = []\n"
        "for _ in range(2):\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n"
        f"        main({list(args)!r})\n"
        "    outs.append(buf.getvalue())\n"
        "sys.stdout.write('SAME' if outs[0] == outs[1] else outs[0] + '\\n----\\n' + outs[1])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"},
    )
    assert done.stdout == "SAME", done.stdout + done.stderr
    assert env_runs[0].stdout.strip().splitlines()[-1].startswith("replay: kubesim restarts")


def test_a_store_that_stops_watching_or_crashes_is_a_verdict_not_a_traceback() -> None:
    done = kubesim("restarts", "--bounded", "bench.memory_stores:list_once", *SMALL)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bench.memory_stores:list_once: STOPPED WATCHING" in done.stdout
    assert "run() returned after 1 requests" in done.stdout
    done = kubesim(
        "restarts", "bench.memory_stores:informer_not_catching_cuts", *SMALL, "--fault", "drop"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "informer_not_catching_cuts: CRASHED" in done.stdout
    assert "raised urllib3.exceptions.ProtocolError" in done.stdout
    assert "after the server cut its watch (drop_watches)" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_store_file_path_imports_with_its_siblings(tmp_path: Path) -> None:
    (tmp_path / "mystore_helpers.py").write_text(
        "from bench import memory_stores\nFACTORY = memory_stores.informer\n"
    )
    (tmp_path / "mystore.py").write_text(
        "import mystore_helpers\n\ndef make(api):\n    return mystore_helpers.FACTORY(api)\n"
    )
    done = kubesim("restarts", "--bounded", "./mystore.py:make", *SMALL, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "./mystore.py:make: BOUNDED" in done.stdout


@pytest.mark.parametrize(
    ("source", "spec", "message"),
    [
        ("def make(api):\n    return None\n", "./bad.py:make", "returned None"),
        (
            "class S:\n    pass\n\ndef make(api):\n    return S()\n",
            "./bad.py:make",
            "returned a S with no callable run()",
        ),
        ("x = 1\n", "./bad.py:nosuch", "has no attribute 'nosuch'"),
        ("x = 1\n", "./bad.py:x", "is a int, not a callable factory"),
        ("x = (\n", "./bad.py:x", "raised SyntaxError"),
        ("", "./missing.py:make", "no such file './missing.py'"),
    ],
    ids=["returns-none", "no-run", "no-attribute", "not-callable", "syntax-error", "no-file"],
)
def test_a_bad_store_is_a_usage_error_with_a_message(
    tmp_path: Path, source: str, spec: str, message: str
) -> None:
    (tmp_path / "bad.py").write_text(source)
    done = kubesim("restarts", spec, "--pods", "2", "--restarts", "2", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_options_are_not_abbreviated() -> None:
    done = kubesim("restarts", "models.kubearmor:after_pr1553", "--pod", "3")
    assert done.returncode == 2
    assert "unrecognized arguments: --pod" in done.stderr


def test_a_bad_store_spec_is_a_usage_error_naming_the_spec() -> None:
    done = kubesim("restarts", "--leaky", "models.kubearmor")
    assert done.returncode == 2
    assert "module:attribute" in done.stderr
    assert "'models.kubearmor'" in done.stderr
    done = kubesim("restarts", "--leaky", "models.nosuch:factory")
    assert done.returncode == 2
    assert "cannot import 'models.nosuch'" in done.stderr
    done = kubesim("restarts", "--leaky", "models.kubearmor:nosuch")
    assert done.returncode == 2
    assert "'models.kubearmor' has no attribute 'nosuch'" in done.stderr


def test_the_printed_replay_line_runs_in_a_fresh_shell_and_prints_the_same_figures() -> None:
    bin_dir = os.path.dirname(sys.executable)
    if shutil.which("kubesim", path=bin_dir) is None:
        pytest.skip("the kubesim console script is not installed beside this interpreter")
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "PYTHONHASHSEED": "0",
    }
    first = kubesim("restarts", "--leaky", "models.kubearmor:before_pr1553", *SMALL, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    replay = first.stdout.strip().splitlines()[-1].removeprefix("replay: ")
    again = subprocess.run(
        ["bash", "-c", replay],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout == first.stdout  # figures, verdict and trace hash, byte for byte
