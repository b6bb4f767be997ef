"""The race oracles are pure: they judge recorded reads and report with numbers."""

from __future__ import annotations

import copy
from types import MappingProxyType

from kubesim import APIServer
from kubesim.checks.races import (
    IsolationMonitor,
    ServerVersions,
    check_reads_match_server,
    check_snapshot_consistency,
    fingerprint,
)
from kubesim.workload import make_pod


def test_fingerprints_ignore_key_order_and_mapping_flavour() -> None:
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint(MappingProxyType({"a": "x"})) == fingerprint({"a": "x"})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_a_shared_object_mutated_after_hand_out_is_an_isolation_violation() -> None:
    shared = {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "labels": {}}}
    monitor = IsolationMonitor()
    monitor.handed_out([shared], reader="metrics")
    monitor.handed_out([shared], reader="cost-model")
    shared["metadata"]["labels"]["team"] = "x"  # the cost model writes into it
    violations = monitor.verify()
    assert len(violations) == 1
    assert "ns/p (rv 7)" in str(violations[0])
    assert "'cost-model'" in str(violations[0])


def test_a_private_copy_may_be_changed_by_its_holder() -> None:
    store = [{"metadata": {"name": "p", "labels": {}}}]
    monitor = IsolationMonitor(held_by_store=lambda: store)
    mine = copy.deepcopy(store[0])
    monitor.handed_out([mine], reader="cost-model")
    mine["metadata"]["labels"]["team"] = "x"
    assert monitor.verify() == []


def test_an_object_the_store_still_holds_counts_as_shared() -> None:
    store = [{"metadata": {"name": "p", "labels": {}}}]
    monitor = IsolationMonitor(held_by_store=lambda: store)
    monitor.handed_out(store, reader="reader")
    store[0]["metadata"]["labels"]["x"] = "1"  # the store mutated what it handed out
    assert [v.kind for v in monitor.verify()] == ["isolation"]


def test_reads_must_match_a_version_the_server_emitted() -> None:
    server = APIServer(seed=1)
    created = server.create("pods", make_pod("a", "default"))
    server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    versions = ServerVersions(server)
    assert check_reads_match_server([("r", created)], versions) == []
    corrupted = copy.deepcopy(created)
    corrupted["metadata"]["labels"]["team"] = "merged-in"
    [torn] = check_reads_match_server([("r", corrupted)], versions)
    assert torn.kind == "torn-read"
    assert "default/a" in torn.message
    invented = copy.deepcopy(created)
    invented["metadata"]["resourceVersion"] = "999"
    [never] = check_reads_match_server([("r", invented)], versions)
    assert "never emitted" in never.message


def test_a_whole_cache_read_must_not_miss_objects_present_before_and_after() -> None:
    assert check_snapshot_consistency(["a", "b"], ["a", "b"], ["a", "b", "c"]) is None
    violation = check_snapshot_consistency([], ["a", "b"], ["a", "b"], reader="scrape")
    assert violation is not None
    assert "missed 2 object(s)" in violation.message
    assert "'scrape'" in violation.message
