"""The race oracles are pure: they judge recorded reads and report with numbers."""

from __future__ import annotations

import copy
import datetime as _dt
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import kubernetes
import pytest

import kubesim
from kubesim import APIServer
from kubesim.checks.races import (
    IsolationMonitor,
    ServerVersions,
    SnapshotRead,
    check_reads_match_server,
    check_snapshot_consistency,
    check_snapshot_reads,
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


# -- isolation holds for every nested container, not only the top-level object ------------


def _pod(name: str, rv: str, labels: dict[str, str]) -> dict:
    meta = {"name": name, "namespace": "default", "resourceVersion": rv, "labels": labels}
    return {"metadata": meta, "spec": {"containers": [{"name": "app"}]}}


class _ShallowCopyStore:
    """Hands out copies of the top level and of metadata: the labels map is the cached one."""

    def __init__(self) -> None:
        self.cache = {"web-1": _pod("web-1", "12", {"app": "web"})}

    def get(self, name: str) -> dict:
        cached = self.cache[name]
        return {**cached, "metadata": dict(cached["metadata"])}

    def held(self) -> list[dict]:
        return list(self.cache.values())


def test_a_consumer_writing_into_a_shallow_copys_shared_labels_is_caught() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor(held_by_store=store.held)
    mine = store.get("web-1")
    monitor.handed_out([mine], reader="cost-model", step=3)
    mine["metadata"]["labels"]["team"] = "payments"  # lands in the cache
    [violation] = monitor.verify()
    assert violation.kind == "isolation"
    text = violation.message
    assert text.startswith("default/web-1 (rv 12) .metadata.labels changed after it was handed")
    assert "still held by the store" in text
    assert ".metadata.labels.team: (absent) -> 'payments'" in text
    assert "step 3 to 'cost-model'" in text


def test_an_isolation_violation_says_at_which_step_it_was_seen() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor(held_by_store=store.held)
    monitor.handed_out([store.cache["web-1"]], reader="metrics", step=2)
    store.cache["web-1"]["metadata"]["resourceVersion"] = "13"
    [violation] = monitor.verify(step=9)
    assert violation.message == (
        "default/web-1 (rv 12) .metadata changed after it was handed to 'metrics' while shared "
        "(still held by the store) (seen at step 9): .metadata.resourceVersion: '12' -> '13'; "
        "handed out at step 2 to 'metrics'"
    )


def test_the_store_mutating_a_shared_nested_map_on_its_next_event_is_caught() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor(held_by_store=store.held)
    monitor.handed_out([store.get("web-1")], reader="metrics", step=1)
    store.cache["web-1"]["metadata"]["labels"]["app"] = "web-v2"  # the next MODIFIED, in place
    [violation] = monitor.verify()
    assert ".metadata.labels.app: 'web' -> 'web-v2'" in violation.message


def test_a_nested_map_handed_to_two_readers_is_shared_after_the_store_lets_go() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor(held_by_store=store.held)
    first, second = store.get("web-1"), store.get("web-1")
    monitor.handed_out([first], reader="a", step=1)
    monitor.handed_out([second], reader="b", step=2)
    store.cache.clear()  # the store no longer holds it; the two readers still share the map
    second["metadata"]["labels"]["x"] = "1"
    [violation] = monitor.verify()
    assert "handed out 2 times" in violation.message
    assert "step 1 to 'a', step 2 to 'b'" in violation.message


def test_a_shared_nested_list_changed_between_two_hand_outs_is_caught() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor()
    monitor.handed_out([store.get("web-1")], reader="a", step=1)
    store.cache["web-1"]["spec"]["containers"].append({"name": "sidecar"})
    monitor.handed_out([store.get("web-1")], reader="b", step=4)
    [violation] = monitor.verify()
    assert violation.message == (
        "default/web-1 (rv 12) .spec.containers changed after it was handed to 'a' while shared "
        "(handed out 2 times): .spec.containers[1]: (absent) -> {'name': 'sidecar'}; "
        "handed out at step 1 to 'a', step 4 to 'b'"
    )


def test_the_same_object_changed_between_two_hand_outs_is_caught_at_the_second() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor()
    monitor.handed_out([store.cache["web-1"]], reader="a", step=1)
    store.cache["web-1"]["spec"]["containers"][0]["image"] = "web:2"
    monitor.handed_out([store.cache["web-1"]], reader="b", step=4)
    [violation] = monitor.violations
    assert violation.message.startswith(
        "default/web-1 (rv 12) .spec.containers[0] changed between two hand-outs (to 'a' and "
        "'b' at step 4): .spec.containers[0].image: (absent) -> 'web:2'"
    )


def test_nested_private_copies_may_be_changed_by_their_holder() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor(held_by_store=store.held)
    mine = copy.deepcopy(store.cache["web-1"])
    monitor.handed_out([mine], reader="cost-model")
    mine["metadata"]["labels"]["team"] = "x"
    mine["spec"]["containers"].clear()
    assert monitor.verify() == []


def test_a_store_replacing_an_object_does_not_count_as_mutating_it() -> None:
    store = _ShallowCopyStore()
    monitor = IsolationMonitor(held_by_store=store.held)
    handed = store.cache["web-1"]
    monitor.handed_out([handed], reader="a")
    store.cache["web-1"] = _pod("web-1", "13", {"app": "web-v2"})  # a new object per event
    assert monitor.verify() == []


# -- ServerVersions records every version, whatever compaction forgets -------------------


def test_reads_after_a_compaction_match_on_a_correct_store() -> None:
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    first = server.create("pods", make_pod("a", "default"))
    second = server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    server.compact()
    third = server.patch("pods", "a", {"metadata": {"labels": {"v": "3"}}}, namespace="default")
    created = server.create("pods", make_pod("b", "default"))
    reads = [
        ("r", o)
        for o in (first, second, third, created, server.get("pods", "b", namespace="default"))
    ]
    assert check_reads_match_server(reads, versions) == []
    # ... and it still tells a torn read from a true one after the compaction.
    torn = copy.deepcopy(third)
    torn["metadata"]["labels"]["v"] = "2"
    [violation] = check_reads_match_server([("r", torn)], versions)
    assert ".metadata.labels.v: '3' -> '2'" in violation.message
    versions.close()
    assert versions._on_commit not in server.commit_listeners


def test_versions_emitted_before_attaching_come_from_the_store_and_the_history() -> None:
    server = APIServer(seed=1)
    old = server.create("pods", make_pod("a", "default"))
    current = server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    versions = ServerVersions(server)
    assert check_reads_match_server([("r", old), ("r", current)], versions) == []


# -- the official client's model objects ----------------------------------------------------


class _TypedStore:
    """A cache fed by typed lists: what ``list_namespaced_pod`` returns, kept as is."""

    def __init__(self, server: APIServer) -> None:
        self.api = kubernetes.client.CoreV1Api(kubesim.kubernetes_client(server))
        self.pods: dict[str, Any] = {}

    def relist(self) -> None:
        self.pods = {p.metadata.uid: p for p in self.api.list_namespaced_pod("default").items}

    def read(self, reader: str) -> list[tuple[str, Any]]:
        return [(reader, pod) for pod in self.pods.values()]


def test_model_objects_from_a_typed_list_match_what_the_server_emitted() -> None:
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    for name in ("a", "b", "c"):
        server.create("pods", make_pod(name, "default"))
    store = _TypedStore(server)
    store.relist()
    reads = store.read("before")
    server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    server.delete("pods", "b", namespace="default")
    store.relist()
    reads += store.read("after")
    assert {p.metadata.name for _, p in store.read("x")} == {"a", "c"}
    assert check_reads_match_server(reads, versions) == []
    # The same reads as the client's own serialization (+00:00 timestamps) are no torn reads.
    sanitize = kubernetes.client.ApiClient().sanitize_for_serialization
    sanitized = [(r, sanitize(p)) for r, p in reads]
    assert "+00:00" in sanitized[0][1]["metadata"]["creationTimestamp"]
    assert check_reads_match_server(sanitized, versions) == []
    # Isolation accepts model objects too, and follows their nested maps.
    monitor = IsolationMonitor(held_by_store=lambda: store.pods.values())
    monitor.handed_out(store.pods.values(), reader="cost-model", step=2)
    [pod_a] = [p for p in store.pods.values() if p.metadata.name == "a"]
    pod_a.metadata.labels["team"] = "payments"
    [isolation] = monitor.verify()
    assert ".metadata.labels.team: (absent) -> 'payments'" in isolation.message
    [torn] = check_reads_match_server([("cost-model", pod_a)], versions)
    assert "'cost-model' read default/a (rv" in torn.message
    assert ".metadata.labels.team: (absent) -> 'payments'" in torn.message


def test_fields_a_model_does_not_know_are_not_torn() -> None:
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    pod = make_pod("a", "default")
    pod["spec"]["fieldFromANewerRelease"] = {"x": 1}
    server.create("pods", pod)
    store = _TypedStore(server)
    store.relist()
    assert check_reads_match_server(store.read("r"), versions) == []


def test_the_diff_of_a_model_drops_the_fields_its_class_does_not_declare() -> None:
    # The diff itself, below the read oracle's tolerance for projections: a field the model
    # class has no attribute for, or that the server sent as null, is the client's, not torn.
    from kubesim.checks._objects import diff, to_wire

    server = APIServer(seed=1)
    versions = ServerVersions(server)
    pod = make_pod("a", "default")
    pod["spec"]["fieldFromANewerRelease"] = {"x": 1}
    pod["spec"]["nodeName"] = None
    server.create("pods", pod)
    store = _TypedStore(server)
    store.relist()
    ((_, model),) = store.read("r")
    wire = to_wire(model)
    sent = versions.content(model.metadata.uid, model.metadata.resource_version)
    assert "fieldFromANewerRelease" in sent["spec"]
    assert diff(sent, wire.value, declared=wire.declared) == []
    assert diff(sent, wire.value) != []  # without the declarations: the field is missing


def test_model_timestamps_render_as_the_server_writes_them() -> None:
    from kubesim.checks._objects import render_time

    utc = _dt.timezone.utc
    assert render_time(_dt.datetime(2024, 1, 1, tzinfo=utc)) == "2024-01-01T00:00:00Z"
    plus_two = _dt.timezone(_dt.timedelta(hours=2))
    assert render_time(_dt.datetime(2024, 1, 1, 2, tzinfo=plus_two)) == "2024-01-01T00:00:00Z"
    assert render_time(_dt.datetime(2024, 1, 1, 0, 0, 0, 5, tzinfo=utc)) == (
        "2024-01-01T00:00:00.000005Z"
    )


# -- messages are deterministic (they enter the trace) -------------------------------------


def _isolation_run() -> tuple[list[Any], list[str]]:
    shared = [{"spec": {"ports": [80]}}, {"spec": {"ports": [443]}}]
    monitor = IsolationMonitor()
    monitor.handed_out(shared, reader="r1", step=1)
    monitor.handed_out(shared, reader="r2", step=2)
    shared[1]["spec"]["ports"].append(8443)
    shared[0]["spec"]["extra"] = True
    return shared, [v.message for v in monitor.verify()]


def test_messages_about_objects_without_metadata_name_no_address() -> None:
    kept, first = _isolation_run()
    _, second = _isolation_run()  # ``kept`` alive: the second run's objects have other ids
    assert first == second
    assert len(first) == 2
    assert not any("0x" in m for m in first), first
    assert "a dict without metadata.name (item 1 handed to 'r1' at step 1) .spec.ports" in (
        "\n".join(first)
    )
    assert kept


def test_torn_read_messages_are_deterministic_and_quantitative() -> None:
    def run() -> list[str]:
        server = APIServer(seed=1)
        versions = ServerVersions(server)
        created = server.create("pods", make_pod("a", "default"))
        server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
        invented = copy.deepcopy(created)
        invented["metadata"]["resourceVersion"] = "999"
        return [v.message for v in check_reads_match_server([("r", invented, 7)], versions)]

    first = run()
    assert first == run()
    [message] = first
    assert "'r' read default/a (rv 999) at step 7" in message
    assert "emitted resourceVersion(s) 5, 6 for that uid" in message


def test_a_read_without_identity_is_a_named_error() -> None:
    server = APIServer(seed=1)
    with pytest.raises(ValueError, match=r"reads\[1\] \(by 'r'\) is a dict without metadata"):
        check_reads_match_server(
            [("r", server.create("pods", make_pod("a", "default"))), ("r", {"spec": {}})],
            ServerVersions(server),
        )


# -- whole-cache reads are the server's state at one resourceVersion ------------------------


class _RelistingStore:
    """A store that relists either in place (clear, then refill) or by swapping a new map in.

    ``relist`` is a generator: each ``yield`` is a point where a reader may run.
    """

    def __init__(self, server: APIServer, *, atomic: bool) -> None:
        self.server = server
        self.atomic = atomic
        self.items: dict[str, Any] = {}

    def relist(self) -> Iterator[None]:
        listed = {p["metadata"]["name"]: p for p in self.server.list("pods")}
        if self.atomic:
            self.items = listed  # one reference swap
            yield
            return
        self.items.clear()
        yield
        for name, pod in listed.items():
            self.items[name] = pod
            yield

    def reader(self, out: list[Any]) -> Iterator[None]:
        """Reads every key it saw at the start, one lookup per key (a Lister's index walk)."""
        items = self.items
        for name in sorted(items):
            out.append(items.get(name))
            yield


def _torn_relist(*, atomic: bool) -> list[Any]:
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    for name in ("a", "b", "c"):
        server.create("pods", make_pod(name, "default"))
    store = _RelistingStore(server, atomic=atomic)
    for _ in store.relist():
        pass
    for name in ("a", "b", "c"):
        server.patch("pods", name, {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    read: list[Any] = []
    reader = store.reader(read)
    next(reader)  # reads "a" from before the relist
    for _ in store.relist():  # the relist runs to the end
        pass
    for _ in reader:  # then the reader reads "b" and "c"
        pass
    snapshot = SnapshotRead("scraper", [o for o in read if o is not None], step=4)
    return check_snapshot_reads([snapshot], versions, resource="pods")


def test_a_relist_torn_under_a_reader_mixes_two_resource_versions() -> None:
    [violation] = _torn_relist(atomic=False)
    assert violation.kind == "snapshot-read"
    text = violation.message
    assert "'scraper' read 3 object(s) at step 4 that were never the server's state" in text
    assert "closest is rv 10 (3 object(s), 2 difference(s)): default/a at rv 5, but rv 8 then" in (
        text
    )


def test_an_atomic_swap_relist_gives_readers_one_resource_version() -> None:
    assert _torn_relist(atomic=True) == []


def test_snapshot_reads_know_every_state_after_a_compaction() -> None:
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    a = server.create("pods", make_pod("a", "default"))
    server.compact()
    b = server.create("pods", make_pod("b", "default"))
    a2 = server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    server.delete("pods", "b", namespace="default")
    ok = [("r", [a]), ("r", [a, b]), ("r", [a2, b]), ("r", [a2]), ("r", [])]
    assert check_snapshot_reads(ok, versions) == []
    # [] was only true before "a" existed, and [a] (old) only before the patch:
    late = [SnapshotRead("r", [], not_before=a2_rv(a2)), SnapshotRead("r", [a], not_before=8)]
    assert [v.kind for v in check_snapshot_reads(late, versions)] == ["snapshot-read"] * 2
    [twice] = check_snapshot_reads([("r", [a2, a2])], versions)
    assert "read 2 times" in twice.message


def a2_rv(obj: Any) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_an_empty_read_before_the_first_list_is_a_cache_not_synced_yet() -> None:
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    a = server.create("pods", make_pod("a", "default"))
    started = a2_rv(a)
    # A store restarted after "a" existed, whose first list failed: it holds nothing yet.
    unsynced = SnapshotRead("r", [], not_before=started, listed=False)
    assert check_snapshot_reads([unsynced], versions) == []
    # Once it has listed, an empty read is a state the server never had.
    synced = SnapshotRead("r", [], not_before=started)
    assert [v.kind for v in check_snapshot_reads([synced], versions)] == ["snapshot-read"]
    # Before the list, anything it does hold must still be one state.
    b = server.create("pods", make_pod("b", "default"))
    server.delete("pods", "a", namespace="default")
    mixed = SnapshotRead("r", [b, a], not_before=a2_rv(b) + 1, listed=False)
    assert [v.kind for v in check_snapshot_reads([mixed], versions)] == ["snapshot-read"]


def test_a_store_restarted_into_a_failing_list_reads_empty_without_a_false_alarm() -> None:
    # Found by the fuzz target of a correct store: after a crash, the restarted store's first
    # list fails, and a reader reads its empty cache before the retry.
    from kubesim.checks.store import judge
    from kubesim.scenario.run import run_scenario
    from kubesim.scenario.steps import CrashAndRestart, FailRequests, ReadConcurrently
    from models.ksm_relist import build_then_swap

    steps = [FailRequests(1, 500), CrashAndRestart(), ReadConcurrently()]
    result = run_scenario(build_then_swap, steps, seed=0)
    verdict = judge(result.recording)
    assert "snapshot-reads" in verdict.ran
    assert verdict.ok, [str(v) for v in verdict.violations]
    # The reader that waits for relists reads the empty cache the failing list left, at its
    # first read and at the sampled points of the store's handling of the refused list.
    unsynced = [r.objects for r in result.recording.snapshot_reads if not r.listed]
    assert unsynced
    assert all(objects == [] for objects in unsynced), unsynced


def test_a_read_older_than_what_the_versions_know_is_a_named_error() -> None:
    server = APIServer(seed=1)
    server.create("pods", make_pod("a", "default"))
    server.compact()
    versions = ServerVersions(server)
    with pytest.raises(ValueError, match=r"reads\[0\] \(by 'r'\) ended by rv 2, before"):
        check_snapshot_reads([SnapshotRead("r", [], not_after=2)], versions)


def test_two_objects_of_one_hand_out_sharing_a_map_are_still_one_readers_own() -> None:
    labels = {"app": "web"}
    store = [_pod("web-1", "12", labels), _pod("web-2", "13", labels)]
    monitor = IsolationMonitor(held_by_store=lambda: store)
    mine = copy.deepcopy(store)  # one deep copy of the list keeps the aliasing, privately
    monitor.handed_out(mine, reader="{cost-model}", step=1)
    mine[0]["metadata"]["labels"]["team"] = "x"
    assert monitor.verify() == []
    monitor.handed_out(store, reader="{metrics}", step=2)
    monitor.handed_out(store, reader="{metrics}", step=3)
    labels["team"] = "y"
    [violation] = monitor.verify()
    assert "handed to '{metrics}' while shared (still held by the store)" in violation.message


def test_a_read_before_the_store_first_held_the_whole_state_may_be_a_part_of_one() -> None:
    # A cache filled one object at a time from its first list (an informer's indexer before
    # HasSynced, a kopf index before it is pre-populated) hands out part of a state then;
    # never a mix of two states.
    server = APIServer(seed=1)
    versions = ServerVersions(server)
    a = server.create("pods", make_pod("a", "default"))
    b = server.create("pods", make_pod("b", "default"))
    a2 = server.patch("pods", "a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    b2 = server.patch("pods", "b", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    filling = SnapshotRead("r", [a2], synced=False)
    assert check_snapshot_reads([filling], versions) == []
    # Once synced, the same read lacks "b": a state the server never had.
    [torn] = check_snapshot_reads([SnapshotRead("r", [a2])], versions)
    assert torn.kind == "snapshot-read"
    # Before the sync too, a mix of versions is no part of any one state.
    mixed = SnapshotRead("r", [a, b2], synced=False)
    assert [v.kind for v in check_snapshot_reads([mixed], versions)] == ["snapshot-read"]
    assert check_snapshot_reads([SnapshotRead("r", [a, b], synced=False)], versions) == []
