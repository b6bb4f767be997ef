"""A store's own output: held for the report, not mixed into kubesim's verdict."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import property_stores as stores
import pytest

from kubesim._core.paths import display_path
from kubesim.report.data import failure_data
from kubesim.scenario.store_log import KEEP, captured
from kubesim.testing.check import LOG_LINES_SHOWN, check_store

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPEC = os.path.join(HERE, "test_store_log.py:chatty")


def test_prints_and_records_are_held_line_by_line_and_everything_is_put_back() -> None:
    root = logging.getLogger()
    before = (sys.stdout, sys.stderr, root.handlers[:])
    with captured() as log:
        # What code that prints asks of the stream first.
        encoding, tty = sys.stdout.encoding, sys.stdout.isatty()
        print("one")
        print("two, then", end=" ")
        sys.stderr.write("the rest of it\n\n")
        logging.getLogger("store.cache").warning("relisting %d pods", 6)
        logging.getLogger("store.cache").debug("not shown: the logger's level says so")
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("store").exception("handler failed")
        print("unfinished", end="")
    assert (sys.stdout, sys.stderr, root.handlers) == before
    assert (encoding, tty) == ("utf-8", False)
    assert list(log.lines)[:5] == [
        "one",
        "two, then the rest of it",
        "",
        "WARNING store.cache: relisting 6 pods",
        "ERROR store: handler failed",
    ]
    assert "ValueError: boom" in log.lines
    assert log.lines[-1] == "unfinished"  # a last line with no newline is kept at the end
    assert log.total == len(log.lines)


def test_a_tracebacks_paths_read_the_same_on_every_machine() -> None:
    yaml = pytest.importorskip("yaml")
    with captured() as log:
        try:
            yaml.safe_load("[unclosed")
        except yaml.YAMLError:
            logging.getLogger("store").exception("bad manifest")
    frames = [line for line in log.lines if line.lstrip().startswith('File "')]
    assert any(line.lstrip().startswith('File "yaml/') for line in frames), frames
    assert not any(f"{os.sep}site-packages{os.sep}" in line for line in log.lines)


def test_a_long_output_keeps_its_end_and_counts_all_of_it() -> None:
    with captured() as log:
        for n in range(KEEP + 50):
            print(f"line {n}")
    assert log.total == KEEP + 50
    assert len(log.lines) == KEEP
    assert log.tail(2) == [f"line {KEEP + 48}", f"line {KEEP + 49}"]


def test_root_handlers_configured_before_are_set_aside_and_restored() -> None:
    seen: list[str] = []

    class Remember(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Remember()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with captured() as log:
            logging.getLogger("store").warning("watch ended")
        logging.getLogger("store").warning("after the run")
    finally:
        root.removeHandler(handler)
    assert list(log.lines) == ["WARNING store: watch ended"]
    assert seen == ["after the run"]


class Chatty(stores.AppendingWatcher):
    """The KubeArmor leak, logging what it does as a real controller does."""

    def run(self) -> None:
        print("chatty: starting")
        logging.getLogger("chatty").warning("listing pods")
        super().run()

    def sizes(self) -> dict[str, int]:
        logging.getLogger("chatty").warning("%d endpoints", len(self.endpoints))
        return super().sizes()


def chatty(api_client: Any) -> Chatty:
    return Chatty(api_client)


def test_the_failing_examples_output_is_in_the_report_and_not_on_the_terminal(
    tmp_path: Path,
) -> None:
    report = check_store(chatty, spec=SPEC, examples=5, seed=0, database=":memory:")
    assert report.found is not None
    log = report.found.log
    assert log.total > LOG_LINES_SHOWN
    assert log.lines[0] == "chatty: starting"
    assert "WARNING chatty: listing pods" in log.lines
    shown = str(report.found)
    assert f"the store's output ({log.total:,} lines, the last {LOG_LINES_SHOWN}):" in shown
    assert shown.count("\n  | ") == LOG_LINES_SHOWN
    data = failure_data(report.found)
    assert (data["log"], data["log_lines"]) == (list(log.lines), log.total)
    # The command line: the verdict on stdout, the store's lines in it only as the report's;
    # the HTML page has them all.
    page = tmp_path / "report.html"
    command = ["check", SPEC, "--examples", "5", "--database", ":memory:", "--report", str(page)]
    done = subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", *command],
        cwd=tmp_path,  # PYTHONPATH's first entries first: the kubesim this test imported
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), ROOT, HERE])),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "chatty" not in done.stderr
    assert "  | WARNING chatty: " in done.stdout
    assert "\nWARNING chatty" not in done.stdout  # never bare, between progress and verdict
    html = page.read_text(encoding="utf-8")
    assert f"What the store printed and logged ({log.total:,} lines)" in html
    assert "WARNING chatty: listing pods" in html


def test_installed_code_is_shown_from_its_package_folder_wherever_the_environment_is() -> None:
    # CI's virtual environment is often inside the checkout: its site-packages still wins.
    inside = os.path.join(os.getcwd(), ".venv-ci", "lib", "python3.11", "site-packages")
    assert display_path(os.path.join(inside, "kubespawner", "reflector.py")) == os.path.join(
        "kubespawner", "reflector.py"
    )
    assert display_path(os.path.join(os.getcwd(), "mystore.py")) == "mystore.py"
    assert display_path("/elsewhere/mystore.py") == "/elsewhere/mystore.py"
