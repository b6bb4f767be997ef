"""A kopf operator on a custom resource under ``kubesim check``, its world from manifests.

The operator (tests/integration/kopf_widgets.py) indexes the Widgets of the CRD in
tests/unit/worlds/widgets.yaml; the workload writes Widgets (clones of the file's) as it writes
pods for a pod store. kopf also watches CRDs to follow its resources' definitions: that is its
machinery, not its data, and the oracles judge its view against the Widgets alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesim.scenario.run import Setup
from kubesim.testing.check import check_store
from kubesim.workload.manifests import load_manifests

kopf = pytest.importorskip(
    "kopf", minversion="1.45", reason="kopf 1.45+ (Python 3.11+) is not installed"
)

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/integration/kopf_widgets.py:factory"
WORLD = Setup(objects=tuple(load_manifests(ROOT / "tests" / "unit" / "worlds" / "widgets.yaml")))


@pytest.fixture
def operator() -> Any:
    from tests.integration import kopf_widgets

    return kopf_widgets.factory


def test_kopf_index_of_a_custom_resource_keeps_widgets_deleted_while_its_watch_was_down(
    operator: Any,
) -> None:
    report = check_store(
        operator,
        spec=SPEC,
        examples=15,
        seed=0,
        setup=WORLD,
        kinds=["delete-in-gap"],
        database=":memory:",
    )
    found = report.found
    assert found is not None
    assert found.properties == ["converge", "history"], str(found)
    assert "phantom(s) the server no longer has (missed deletes): factory/" in str(found)
    assert "store.index['factory/" in str(found), str(found)


def test_kopf_index_of_a_custom_resource_holds_through_the_rest_of_the_workload(
    operator: Any,
) -> None:
    report = check_store(
        operator,
        spec=SPEC,
        examples=15,
        seed=0,
        setup=WORLD,
        kinds=["create", "labels", "annotate", "expire", "drop", "compact", "bookmark", "crash"],
        database=":memory:",
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "history", "clean-stop"} <= report.ran
    assert report.kinds["create"] > 0
