"""The release artifacts: a wheel and an sdist build from a clean tree, as a release would
build them, and carry what a user installs and nothing of the repository's own.

The build runs in pip's isolated environment (setuptools from the registry, as on a release
machine), so it costs a few seconds and reaches the package registry.
"""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import kubesim

pytest.importorskip("build", reason="the build package (test extra) is not installed")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_wheel_carries_the_package_its_metadata_and_its_entry_points(dist: Path) -> None:
    (wheel,) = dist.glob("kubesim-*.whl")
    assert wheel.name == f"kubesim-{kubesim.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = f"kubesim-{kubesim.__version__}.dist-info"
        metadata = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    top = {name.split("/")[0] for name in names}
    assert top == {"kubesim", info}, top  # no tests/, models/, bench/ or docs/ installed
    assert "kubesim/py.typed" in names
    assert "kubesim/report/html.py" in names
    assert f"{info}/licenses/LICENSE" in names
    assert metadata["Version"] == kubesim.__version__  # the one place the version lives
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Requires-Python"] == ">=3.10"
    extras = set(metadata.get_all("Provides-Extra") or [])
    # The extras the README installs exist.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for extra in ("client", "plot", "test"):
        assert f".[{extra}" in readme or f",{extra}" in readme
        assert extra in extras
    assert {"client", "asyncio", "plot", "tls", "test"} <= extras
    assert "kubesim = kubesim.cli.main:main" in entry_points
    assert "kubesim = kubesim.testing.pytest_plugin" in entry_points


def test_the_sdist_builds_the_same_package_from_its_own_files(dist: Path) -> None:
    (sdist,) = dist.glob("kubesim-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    root = f"kubesim-{kubesim.__version__}"
    for needed in ("pyproject.toml", "README.md", "LICENSE", "kubesim/__init__.py"):
        assert f"{root}/{needed}" in names, needed
