"""A hot request loop is named by what it repeats, and by what the server answers it.

A re-watch loop after a 410 used to read "1,001 API requests ... (last: GET /api/v1/pods)",
with no word of the 410 or of the resourceVersion the store kept asking from.
"""

from __future__ import annotations

import json
from typing import Any

import property_stores as stores
from kubernetes.watch.watch import iter_resp_lines

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import CompactHistory, CreatePods, ExpireWatches, LastingErrors


class _RewatchesFromTheSameVersion(stores.Reflector):
    """Watches from the list's resourceVersion, and on an ERROR event watches again from the
    same one, at once (kr8s' 410 loop)."""

    def _watch(self) -> bool:
        response = self.core.list_pod_for_all_namespaces(
            watch=True, resource_version=self.resource_version, _preload_content=False
        )
        for line in iter_resp_lines(response):
            event: dict[str, Any] = json.loads(line)
            if event["type"] == "ERROR":
                return True  # the same resourceVersion again
            obj = event["object"]
            if event["type"] == "DELETED":
                self.cache.pop(stores._key(obj), None)
            else:
                self.cache[stores._key(obj)] = obj
        return True  # ends cleanly: watch again (self.resource_version never moves)


def _summary(factory: Any, steps: list[Any]) -> tuple[Any, str]:
    verdict = judge(run_scenario(factory, steps, seed=0).recording)
    assert [v.property for v in verdict.violations] == ["progress"], verdict
    return verdict, verdict.violations[0].summary


def test_a_rewatch_loop_after_a_410_names_the_version_and_the_410() -> None:
    verdict, summary = _summary(
        _RewatchesFromTheSameVersion, [CreatePods(2), CompactHistory(), ExpireWatches()]
    )
    made = int(summary.split(" API requests")[0].rsplit(" ", 1)[1].replace(",", ""))
    repeated = int(summary.split("without waiting for anything: ")[1].split()[0].replace(",", ""))
    assert 0.9 * made <= repeated <= made
    assert "GET /api/v1/pods?" in summary
    assert "watch=true" in summary
    assert "a watch from resourceVersion " in summary
    assert "which the server has compacted away (the oldest it serves is " in summary
    assert "410 Gone ERROR event ('too old resource version')" in summary
    # The oracle that fired is among those run, not among those skipped.
    assert "progress" in verdict.ran
    assert "progress" not in dict(verdict.skipped)


def test_a_retry_loop_through_an_outage_names_the_answer() -> None:
    class _NoBackoff(stores.Reflector):
        def _back_off(self) -> None:
            pass

    _, summary = _summary(_NoBackoff, [LastingErrors(seconds=30, code=500)])
    assert "of them GET /api/v1/pods" in summary
    assert "each answered 500 (an outage until " in summary
