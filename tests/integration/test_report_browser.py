"""The campaign report in a real browser: headless Chromium opens the page of a failing
campaign, runs it with no console error, shows the memory plot and the thread timeline, and
leaves a screenshot for a person to look at.

Skips cleanly where Chromium is absent (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from kubesim.cli.main import load_factory
from kubesim.report import write_report
from kubesim.testing.check import check_store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Headless, as root, with nothing reaching out: this machine's network is closed.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
)
# Kept after the run, where a person (or CI's artifacts) finds it.
SCREENSHOTS = Path(os.environ.get("KUBESIM_SCREENSHOTS", ".kubesim/screenshots"))

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_the_report_of_a_failing_campaign_renders_in_chromium(tmp_path: Path) -> None:
    spec = "models.ksm_relist:clear_then_add"  # a torn relist: two threads, a preemption
    factory = load_factory(spec)
    report = check_store(factory, spec=spec, examples=200, seed=0, database=":memory:")
    assert report.found is not None
    page = write_report(tmp_path / "report.html", report, seconds=1.0, seed=0, factory=factory)
    url = page.resolve().as_uri()

    dom = chromium("--dump-dom", url, profile=tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, "the page logged to the console:\n" + "\n".join(console)
    # The page's script ran to its end, and the DOM has both charts and the failure.
    assert 'data-rendered="yes"' in dom.stdout
    assert 'aria-label="memory over rounds"' in dom.stdout
    assert 'aria-label="thread timeline"' in dom.stdout
    assert "snapshot-reads" in dom.stdout

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "report-failing-campaign.png"
    taken = chromium(
        f"--screenshot={shot.resolve()}",
        "--window-size=1200,2400",
        url,
        profile=tmp_path / "profile-shot",
    )
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert png_size(shot) == (1200, 2400)
    assert shot.stat().st_size > 20_000, "an empty page"  # text, charts and tables
    print(f"screenshot: {shot.resolve()}")
