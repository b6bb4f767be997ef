"""monotone names what took a store back in time: a lagging API server replica's answer.

A store that relists from any cache (``resourceVersion=0``) can be answered by a replica that
lags behind what the store already saw; replacing its cache with that answer takes it back.
That was reported as a bare backwards move, or as torn reads, with no word of the replica.
"""

from __future__ import annotations

import json

import property_stores as stores

from kubesim.checks.state import check_monotone
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import ExpireWatches, LagReplica, PatchLabels


class _RelistsFromAnyCache(stores.Reflector):
    """The bench's reflector, but every list asks for any resourceVersion (``"0"``)."""

    def run(self) -> None:
        while True:
            response = self.core.list_pod_for_all_namespaces(
                resource_version="0", _preload_content=False
            )
            listed = json.loads(response.data)
            self.cache = {stores._key(pod): pod for pod in listed["items"]}
            self.resource_version = listed["metadata"]["resourceVersion"]
            while self._watch():
                pass


def test_a_relist_answered_by_a_lagging_replica_is_named_as_the_cause() -> None:
    steps = [PatchLabels(3, unique=True), LagReplica(5), ExpireWatches(with_error=True)]
    found = check_monotone(run_scenario(_RelistsFromAnyCache, steps, seed=0).recording)
    assert found is not None
    first = found.details[0]
    assert "went back from resourceVersion" in first
    assert "a lagging API server replica answered the store's list or watch at " in first


def test_a_backwards_move_with_no_replica_names_none() -> None:
    steps = [PatchLabels(3, unique=True), ExpireWatches(with_error=True)]
    found = check_monotone(run_scenario(_RelistsFromAnyCache, steps, seed=0).recording)
    assert found is None or all("replica" not in line for line in found.details)
