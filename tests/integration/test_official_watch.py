"""The official client's ``Watch`` (and kubernetes_asyncio's) resumes a watch that began with no
resourceVersion from the resourceVersion of the last object it delivered, and replays the past.

docs/findings/official-watch-replays-past.md is the report. A watch with no resourceVersion
starts with a synthetic ``ADDED`` for every pod, in key order, each carrying the pod's own
resourceVersion; ``Watch`` records each as where the stream stands. When the server ends the
watch (its timeout) ``Watch.stream`` watches again from the last one, and so does a caller that
resumes from ``Watch.resource_version`` after a cut: the server sends again every change since
that pod was last written, changes the handler has already seen. The scenario: a pod early in
key order changes, the process (re)starts, and its first watch ends.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

kubernetes = pytest.importorskip("kubernetes")
kubernetes_asyncio = pytest.importorskip("kubernetes_asyncio")

from kubesim.checks.effects import check_effects_once  # noqa: E402
from kubesim.checks.store import judge  # noqa: E402
from kubesim.scenario.run import run_scenario  # noqa: E402
from kubesim.scenario.steps import (  # noqa: E402
    CrashAndRestart,
    DropWatches,
    ExpireWatches,
    PatchMetadata,
    Step,
)

STORES = Path(__file__).resolve().parent / "stores"


@pytest.fixture(scope="module")
def stores() -> Any:
    # The versions docs/findings/official-watch-replays-past.md names: a release that fixes the
    # replay fails the tests below, and the page and these tests need updating.
    assert kubernetes.__version__ == "37.0.3", kubernetes.__version__
    assert kubernetes_asyncio.__version__ == "36.1.0", kubernetes_asyncio.__version__
    sys.path.insert(0, str(STORES))
    try:
        import official_watch
    finally:
        sys.path.remove(str(STORES))
    return official_watch


def _ends(end: Step) -> list[Step]:
    # team-0/web-000, first in key order, changes; the store starts again; its watch ends.
    return [PatchMetadata(1), CrashAndRestart(), end]


def _replayed(factory: Any, steps: list[Step]) -> list[str]:
    verdict = judge(run_scenario(factory, steps).recording)
    assert [v.property for v in verdict.violations] == ["effects-once"], verdict
    return list(verdict.violations[0].details)


def test_watch_replays_a_change_after_the_server_ends_a_watch_begun_with_no_rv(stores: Any) -> None:
    # Watch.stream's own re-watch (no timeout_seconds): from web-004's resourceVersion, the last
    # ADDED, so web-000's change, already delivered as its ADDED, comes again as MODIFIED.
    (repeat,) = _replayed(stores.factory, _ends(ExpireWatches()))
    assert "performed 2 times" in repeat
    assert "round 3: expire watches" in repeat


def test_resuming_from_watch_resource_version_after_a_cut_replays_too(stores: Any) -> None:
    (repeat,) = _replayed(stores.factory, _ends(DropWatches()))
    assert "performed 2 times" in repeat
    assert "round 4: the faults last 10 s more" in repeat  # after its 1 s wait


def test_kubernetes_asyncio_watch_replays_the_same_change(stores: Any) -> None:
    (repeat,) = _replayed(stores.async_factory, _ends(ExpireWatches()))
    assert "performed 2 times" in repeat
    assert "round 3: expire watches" in repeat


@pytest.mark.parametrize("end", [ExpireWatches(), DropWatches()], ids=["expire", "drop"])
def test_a_handler_that_lists_first_handles_each_change_once(stores: Any, end: Step) -> None:
    # The same Watch from a list's resourceVersion: every re-watch starts where the stream was.
    verdict = judge(run_scenario(stores.listing, _ends(end)).recording)
    assert verdict.ok, verdict
    assert "effects-once" in verdict.ran


# -- Watch.stream(deserialize=False): docs/findings/official-watch-deserialize-false.md ----------


def test_deserialize_false_raises_key_error_on_an_error_event(stores: Any) -> None:
    # No step at all: at quiescence kubesim ends the watch, as a server timeout does, and
    # compacts history. Watch.stream watches again from the list's resourceVersion (it never
    # recorded another), gets an ERROR event with a 410, and reads event["raw_object"], which
    # only unmarshal_event sets: KeyError, where the caller expects ApiException(410).
    verdict = judge(run_scenario(stores.raw, []).recording)
    assert [v.property for v in verdict.violations] == ["crash"], verdict
    assert "raised KeyError: 'raw_object'" in verdict.violations[0].summary


def test_deserialize_false_replays_every_change_since_the_list_after_the_servers_end(
    stores: Any,
) -> None:
    # A pod changes; the server ends the watch; Watch.stream watches again from the list's
    # resourceVersion and delivers the change again. (Then the quiescence above crashes it.)
    recording = run_scenario(stores.raw, [PatchMetadata(1), ExpireWatches()]).recording
    assert [v.property for v in judge(recording).violations] == ["crash"]
    replayed = check_effects_once(recording)  # judged on what it did before it crashed
    assert replayed is not None
    (repeat,) = replayed.details
    assert "performed 2 times" in repeat
    assert "round 2: expire watches" in repeat


def test_the_dynamic_clients_watch_never_records_a_resource_version(stores: Any) -> None:
    # Watch.unmarshal_event returns before recording anything when it has no return type,
    # which DynamicClient.watch never gives it: a caller that resumes from
    # Watch.resource_version after each end of the stream gets every change since its list again.
    verdict = judge(run_scenario(stores.dynamic_handler, []).recording)
    assert [v.property for v in verdict.violations] == ["effects-once"], verdict
    assert "performed 3 times" in verdict.violations[0].details[0]
