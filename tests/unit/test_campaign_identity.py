"""What makes two campaigns the same campaign: the example database's key and the replay token.

A saved example is bytes that Hypothesis turns into a scenario; the same bytes under other
step kinds, another ``max_steps`` or another schedule space are another scenario. So the
database is keyed by everything that changes that reading, or what the scenario runs against,
or what judges it; and a replay token carries everything its campaign ran and judged with.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import property_stores as stores
import pytest
from hypothesis.database import InMemoryExampleDatabase

from kubesim.scenario.run import Setup
from kubesim.testing.check import check_store, database_key
from kubesim.testing.replay import Replay, parse_token
from kubesim.testing.strategies import ALL_KINDS

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Absolute: the replay below runs outside the repository.
SPEC = os.path.join(ROOT, "tests/unit/property_stores.py:appending_watcher")

BASE: dict[str, Any] = {
    "kinds": tuple(ALL_KINDS),
    "setup": Setup(),
    "seed": 0,
    "oracles": None,
    "max_steps": 12,
    "schedules": 1,
    "traced": ("property_stores",),
}


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("kinds", ("create", "delete", "churn", "read", "lagging-replica")),
        ("setup", Setup(pods=7)),
        ("setup", Setup(tail_rounds=4)),
        ("setup", Setup(memory=False)),
        ("setup", Setup(fresh=False)),
        ("setup", Setup(controllers=True)),
        ("seed", 1),
        ("oracles", ("converge",)),
        ("max_steps", 6),
        ("schedules", 8),
        ("traced", ()),
    ],
)
def test_whatever_changes_the_draw_the_world_or_the_judges_changes_the_key(
    field: str, other: Any
) -> None:
    assert database_key(SPEC, **BASE) == database_key(SPEC, **BASE)
    assert database_key(SPEC, **{**BASE, field: other}) != database_key(SPEC, **BASE)
    assert database_key("other.py:factory", **BASE) != database_key(SPEC, **BASE)


class _Recording(InMemoryExampleDatabase):
    """An example database that remembers under which keys it was asked to save."""

    def __init__(self) -> None:
        super().__init__()
        self.saved_under: set[bytes] = set()

    def save(self, key: bytes, value: bytes) -> None:
        self.saved_under.add(key.split(b".")[0])
        super().save(key, value)


def _keys(**options: Any) -> set[bytes]:
    database = _Recording()
    report = check_store(
        stores.appending_watcher, spec=SPEC, examples=3, seed=0, database=database, **options
    )
    assert report.found is not None  # it leaks at once: a failure to save
    return database.saved_under


def test_a_campaign_saves_its_failure_where_one_drawn_otherwise_does_not_look() -> None:
    default = _keys()
    assert default == _keys()  # the same campaign: the same key
    assert not default & _keys(max_steps=6)
    assert not default & _keys(setup=Setup(tail_rounds=4))
    assert not default & _keys(trace_store=False)


def test_the_token_carries_the_instruments_a_campaign_turned_off_and_its_oracles() -> None:
    replay = Replay(
        factory=SPEC,
        steps=(),
        schedule=(),
        seed=0,
        setup=Setup(memory=False, fresh=False),
        oracles=("converge",),
    )
    back = parse_token(replay.token())
    assert back == replay
    plain = dataclasses.replace(replay, setup=Setup(), oracles=None)
    assert parse_token(plain.token()) == plain
    # Older tokens stay as they were: the defaults are not written.
    assert set(_decoded(plain.token())["setup"]) == {"pods", "namespaces", "tail_rounds"}
    assert "oracles" not in _decoded(plain.token())


def _decoded(token: str) -> dict[str, Any]:
    body = token.removeprefix("ks1.")
    data: dict[str, Any] = json.loads(
        zlib.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    )
    return data


def test_a_replay_judges_with_the_oracles_its_campaign_judged_with(tmp_path: Path) -> None:
    report = check_store(
        stores.appending_watcher,
        spec=SPEC,
        examples=5,
        seed=0,
        database=":memory:",
        oracles=["history"],
    )
    assert report.found is not None
    assert report.found.properties == ["history"]
    assert report.found.replay.oracles == ("history",)
    replayed = subprocess.run(
        [sys.executable, "-m", "kubesim.cli.main", "replay", report.found.replay.token()],
        # Outside the repository, PYTHONPATH's first entries first: the kubesim this test
        # imported runs (the mutation check's copy, under it).
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), ROOT])),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replayed.returncode == 1, replayed.stderr
    assert f"trace {report.found.result.trace_hash[:16]}" in replayed.stdout
    assert "history: " in replayed.stdout
    assert "bounded: " not in replayed.stdout  # the leak is there, but was not asked about
