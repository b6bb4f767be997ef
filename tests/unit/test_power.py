"""Each new detector of the property layer finds its family in one hand-written scenario, and
passes the family's fix: the history oracle, effects-expected, per-scope and filtered snapshot
reads, the outage's backoff, silent connections and read timeouts, server versions, stop()
during a list, hot preemptions, and coverage reported as a verdict.

These are the fast, exact counterparts of tests/quality/test_corpus3.py (which lets the default
campaign find the same bugs); the mutants of tests/mutation/mutants_power.py are killed here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubesim.checks.store import judge
from kubesim.scenario.run import ScenarioResult, Setup, run_scenario
from kubesim.scenario.steps import (
    ChangeServerVersion,
    ChurnPods,
    CompactHistory,
    CreatePods,
    DeletePods,
    DeleteWhileDisconnected,
    DropWatches,
    ExpireWatches,
    LagReplica,
    LastingErrors,
    PatchLabels,
    PatchMetadata,
    ReadConcurrently,
    ReusePodIP,
    SilenceWatches,
    SlowConsumerBurst,
    StallWatchCache,
    StopStore,
    UpdatePodStatus,
)
from kubesim.sim.store import load_factory
from kubesim.testing.check import check_store, store_modules

ROOT = Path(__file__).resolve().parents[2]


def _run(spec: str, steps: list[Any], **options: Any) -> ScenarioResult:
    factory = load_factory(spec)
    return run_scenario(factory, steps, spec=spec, traced=store_modules(factory), **options)


def _broken(result: ScenarioResult) -> dict[str, str]:
    return {v.property: str(v) for v in judge(result.recording).violations}


# -- history -----------------------------------------------------------------------------------
def test_history_names_the_index_entry_a_fresh_store_does_not_have() -> None:
    steps = [PatchLabels(count=2, unique=True), PatchLabels(count=2, value="v3")]
    found = _broken(_run("models.label_index:keeps_empty_index_sets", steps))
    assert list(found) == ["bounded", "history"]  # the tail's label values pile up too
    assert "store.indexer.indices['labels'] (dict)" in found["bounded"]
    # The values the first storm gave, which no pod has since the second: kept as empty sets.
    assert "store.indexer.indices['labels']['version=v2-1-0'] = set()" in found["history"]
    assert "(label version=v2-1-0 of team-0/web-000, until rv 15)" in found["history"]
    assert _broken(_run("models.label_index:deletes_empty_index_sets", steps)) == {}


def test_the_tail_rotates_label_values_so_an_index_of_gone_values_grows_in_any_run() -> None:
    # No step at all: the tail rounds alone give every pod's labels a new value each round.
    found = _broken(_run("models.label_index:keeps_empty_index_sets", []))
    assert "store.indexer.indices['labels'] (dict)" in found["bounded"]
    assert "store.indexer.indices['labels']['app=tail-001'] = set()" in found["history"]
    assert _broken(_run("models.label_index:deletes_empty_index_sets", [])) == {}


def test_history_counts_duplicates_and_leaves_declared_history_alone() -> None:
    found = _broken(_run("tests.unit.property_stores:appending_watcher", []))
    assert "store.endpoints holds 'team-0/web-000' " in found["history"]
    assert "(a duplicate)" in found["history"]
    # The stalled listener's queue holds the delete of a pod it was handed before it stalled;
    # the store declares it with history_dependent().
    assert _broken(_run("models.stalled_listener:coalescing_queue", [ChurnPods(1)])) == {}


def test_a_structure_read_refreshes_is_compared_after_a_read_on_both_stores() -> None:
    # The endpoints are computed in read(): the long-running store's are as of its last read,
    # a fresh store's empty until one; both are read before they are compared.
    steps = [StallWatchCache(), DeletePods(1), CreatePods(1)]
    assert _broken(_run("models.shared_informer_mutation:deep_copy", steps)) == {}


def test_a_relist_that_hands_an_address_on_loses_the_new_holder_until_the_next() -> None:
    # While the store is away, a pod is deleted and its replacement gets its podIP; the relist
    # indexes the replacement, then deletes the old pod by the address they share (client-go's
    # Replace order). The final relist heals it: only the comparison before it sees it.
    steps = [DeleteWhileDisconnected(1, compacted=True, replaced=True)]
    found = _broken(_run("models.ip_reuse:one_owner_per_ip", steps))
    assert list(found) == ["history"]
    assert "before the final relist: store.pods_by_ip['10.1.0.0'] is missing" in found["history"]
    assert "(for team-0/web-006, live)" in found["history"]
    assert _broken(_run("models.ip_reuse:owner_set_per_ip", steps)) == {}


# -- effects-expected --------------------------------------------------------------------------
def test_a_cleanup_never_run_for_a_delete_discovered_on_relist_is_missed() -> None:
    steps = [DeleteWhileDisconnected(1, compacted=True)]
    found = _broken(_run("models.endpoint_table:drops_tombstone_deletes", steps))
    assert "effects-expected" in found
    assert "for the deletion of team-0/web-000" in found["effects-expected"]
    assert _broken(_run("models.endpoint_table:keys_tombstones", steps)) == {}


# -- snapshot reads ------------------------------------------------------------------------------
def test_snapshot_reads_judge_each_namespace_at_its_own_resource_version() -> None:
    # Each namespace's reflector is at its own resourceVersion (the tail rounds rewrite every
    # pod): a read of both is one state per namespace, never one state of all pods.
    spec = "models.ns_reflectors:swaps_namespace_on_relist"
    result = _run(spec, [ReadConcurrently()], schedule=[0, 2])
    assert _broken(result) == {}
    [judged] = result.recording.read_scopes
    assert judged.resource == "pods"
    assert len(judged.scopes) == 2
    assert len(result.recording.snapshot_reads) >= 6


def test_a_filtered_read_is_judged_as_a_part_of_a_state() -> None:
    # The read serves only running pods with an IP: a terminated pod leaves it, by design.
    steps = [ReadConcurrently(), UpdatePodStatus(0), CreatePods(1), CreatePods(1)]
    result = _run("tests.unit.property_stores:running_only", steps)
    assert result.recording.partial_reads is not None
    assert "lacked team-0/web-000" in result.recording.partial_reads
    assert _broken(result) == {}


def test_a_hot_preemption_lands_inside_a_relist_and_a_reader_sees_it_half_done() -> None:
    # The default campaign's find, shrunk: the outage ends with a relist, and the preemption
    # at 47% of the longest hot region seen lands in the middle of applying it; the reader
    # that waits for relists reads there.
    steps = [
        ReadConcurrently(),
        ExpireWatches(),
        ReusePodIP(0),
        PatchMetadata(1),
        SilenceWatches(120),
        LastingErrors(30, 429),
        SlowConsumerBurst(8, 1),
    ]
    torn = _broken(_run("models.prune_then_update:prune_then_update", steps, schedule=[-1471]))
    assert "snapshot-reads" in torn
    assert "'reader-1-relist' read 7 object(s) at step 8" in torn["snapshot-reads"]
    fixed = _run("models.prune_then_update:build_then_swap", steps, schedule=[-1471])
    assert _broken(fixed) == {}


def test_a_relist_reader_samples_the_whole_relist_whatever_the_schedule() -> None:
    # The store's own lock around the two passes, and a view() that takes it: the reader that
    # waits for relists reads at evenly spaced points of the relist (kubesim.sched.Preemptions
    # samplers), so the half-applied relist is seen with no preemption drawn at all, and the
    # bookkeeping after a read (which asks view()) never waits for the relist's lock.
    steps = [ReadConcurrently(), DeleteWhileDisconnected(count=1, compacted=True, changed=3)]
    for schedule in ([], [5], [-3], [-1500]):
        result = _run("tests.unit.property_stores:prune_then_refill", steps, schedule=schedule)
        torn = _broken(result)
        assert list(torn) == ["snapshot-reads"], (schedule, torn)
        assert "'reader-1-relist' read 5 object(s) at step 3" in torn["snapshot-reads"]
        relist_reads = [r for r in result.recording.reads if r.reader == "reader-1-relist"]
        assert len(relist_reads) > 8, len(relist_reads)
        locked = _run(
            "tests.unit.property_stores:prune_then_refill_locked", steps, schedule=schedule
        )
        assert _broken(locked) == {}, schedule


# -- lasting faults ------------------------------------------------------------------------------
def test_an_outage_is_retried_with_backoff_or_reported() -> None:
    # A 500 outage: no Retry-After, so urllib3 (under the official client) asks nothing again
    # and every retry is the store's own.
    outage = [LastingErrors(seconds=120, code=500)]
    found = _broken(_run("models.retry_storm:retry_immediately", outage))
    assert list(found) == ["progress"]
    assert _broken(_run("models.retry_storm:backoff_with_retry_after", outage)) == {}
    # A retry every tenth of a second waits, so it is no hot loop, but it is no backoff.
    fast = _broken(_run("tests.unit.property_stores:fast_retry", outage))
    assert list(fast) == ["progress"]
    assert "requests refused in a 120 s outage" in fast["progress"]
    assert _broken(_run("tests.unit.property_stores:reflector", outage)) == {}
    # A 503 with Retry-After: 5 is asked again by urllib3 itself, three times, 5 s apart, as
    # over a socket: the same store that retries at once then makes 4 requests every 15 s.
    absorbed = [LastingErrors(seconds=120, code=503)]
    assert _broken(_run("models.retry_storm:retry_immediately", absorbed)) == {}


def test_a_silent_connection_meets_the_clients_read_timeout() -> None:
    silence = [SilenceWatches(seconds=120)]
    found = _broken(_run("models.read_timeout:timeout_kills_watcher", silence))
    assert list(found) == ["crash"]
    assert "ReadTimeoutError" in found["crash"]
    assert "read timeout=60" in found["crash"]
    assert _broken(_run("models.read_timeout:rewatch_after_timeout", silence)) == {}


def test_an_older_server_says_gone_and_a_store_that_knows_only_expired_loops() -> None:
    steps = [ChangeServerVersion("1.17"), CompactHistory(), ExpireWatches(with_error=True)]
    found = _broken(_run("models.expiry_reason:expired_by_reason", steps))
    assert "converge" in found
    assert _broken(_run("models.expiry_reason:expired_by_code", steps)) == {}
    # Against today's servers ("Expired") the same store relists.
    modern = [CompactHistory(), ExpireWatches(with_error=True)]
    assert _broken(_run("models.expiry_reason:expired_by_reason", modern)) == {}
    # A run that starts as the older server (kubesim check --server-version 1.17) needs no step.
    older = Setup(server_version="1.17")
    assert "converge" in _broken(
        _run("models.expiry_reason:expired_by_reason", modern, setup=older)
    )
    with pytest.raises(ValueError, match="server version must be one of"):
        Setup(server_version="2.0")


def test_a_relist_served_by_a_lagging_replica_takes_the_store_back_in_time() -> None:
    """kubernetes#59848: the store's watch is cut, the replica its connection is to refuses the
    resourceVersion it had (504) and answers its relist from "0" with its past."""
    steps = [PatchLabels(count=3), LagReplica(events=5), DropWatches()]
    found = _broken(_run("models.lagging_replica:relist_any_version", steps))
    assert "went back from resourceVersion" in found["monotone"]
    assert _broken(_run("models.lagging_replica:refuse_older_list", steps)) == {}
    # With no replica lagging, the same cut and relist stay in the present.
    present = [PatchLabels(count=3), DropWatches()]
    assert _broken(_run("models.lagging_replica:relist_any_version", present)) == {}


def test_the_default_campaign_finds_the_lagging_replica_family() -> None:
    """Not a test tuned to the family: the defaults of a first run (seed 0, a fresh database)."""
    report = check_store(
        load_factory("models.lagging_replica:relist_any_version"),
        examples=200,
        database=":memory:",
    )
    assert report.found is not None
    assert "monotone" in str(report.found)
    fixed = check_store(
        load_factory("models.lagging_replica:refuse_older_list"), examples=60, database=":memory:"
    )
    assert fixed.ok, str(fixed.found)


def test_stop_during_a_list_leaves_a_thread_running_in_the_informer_shape() -> None:
    during = [StopStore(during_list=True)]
    result = _run("models.stop_during_list:checks_before_watch_loop", during)
    assert result.lines == ["stop() during a list, then started again"]
    found = _broken(result)
    assert list(found) == ["clean-stop"]
    assert "during a list" in found["clean-stop"]
    assert _broken(_run("models.stop_during_list:checks_after_every_request", during)) == {}
    # Between steps, the same store stops cleanly: the list is what it misses.
    between = [StopStore(during_list=False)]
    assert _broken(_run("models.stop_during_list:checks_before_watch_loop", between)) == {}


def test_stop_while_a_handler_runs_meets_a_join_under_the_handlers_lock() -> None:
    # stop() takes the lock the event handler takes, then joins the watch thread: between
    # steps the thread is reading (no lock held) and it stops; while an event is handled, the
    # handler waits for the lock and stop() for the handler.
    spec = "tests.unit.stopping_stores:join_under_lock"
    during = [StopStore(during_event=True)]
    result = _run(spec, during)
    assert result.lines == ["stop() while the store handled a watch event, then started again"]
    found = _broken(result)
    assert list(found) == ["clean-stop"]
    assert "still run while its stop() never returns" in found["clean-stop"]
    assert "'pod-watch' waits for SimLock held by thread 'kubesim-stop'" in found["clean-stop"]
    assert "while it handled a watch event" in found["clean-stop"]
    assert "stop() itself has not returned: it waits for join of thread" in found["clean-stop"]
    assert _broken(_run(spec, [StopStore()])) == {}
    assert _broken(_run("tests.unit.stopping_stores:join_after_lock", during)) == {}


# -- coverage and usage ----------------------------------------------------------------------
def test_an_oracle_with_nothing_to_judge_is_not_exercised_not_passed() -> None:
    report = check_store(
        load_factory("models.ksm_relist:build_then_swap"),
        examples=5,
        kinds=["create", "expire"],
        database=":memory:",
    )
    assert report.ok
    assert "isolation" not in report.ran
    assert report.not_exercised["isolation"] == "no read() was made: no read step drawn"
    assert "snapshot-reads" in report.not_exercised


def _kubesim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "class Store:\n    def __init__(self):\n        pass\n\n    def run(self):\n"
            "        pass\n",
            "a factory is called with one argument, the ApiClient",
        ),
        (
            "def Store(api_client):\n    raise RuntimeError('no cluster')\n",
            "raised RuntimeError: no cluster",
        ),
    ],
)
def test_a_factory_that_raises_is_a_usage_error(tmp_path: Path, source: str, message: str) -> None:
    (tmp_path / "broken_store.py").write_text(source, encoding="utf-8")
    done = _kubesim("check", "broken_store.py:Store", "--database", ":memory:", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the factory broken_store.py:Store raised" in done.stderr
    assert message in done.stderr
    assert "replay" not in done.stdout + done.stderr


def test_oracles_are_selected_and_listed_by_name(tmp_path: Path) -> None:
    listed = _kubesim("check", "--list-oracles", cwd=tmp_path)
    assert listed.returncode == 0
    assert "history " in listed.stdout
    assert "effects-expected" in listed.stdout
    wrong = _kubesim("check", "x.py:f", "--oracles", "converge,nope", cwd=tmp_path)
    assert wrong.returncode == 2


def test_a_run_that_starts_its_threads_and_returns_keeps_running() -> None:
    # An informer's start() shape: run() starts a thread and returns; the store runs in it.
    result = _run("tests.unit.property_stores:starts_and_returns", [ChurnPods(1), ExpireWatches()])
    assert _broken(result) == {}
    # A run() that lists once and returns, with no thread left, is told what it did.
    once = _run("tests.unit.property_stores:ListOnce", [ChurnPods(1)])
    assert (
        "after 1 list(s) and no watch: a list-once store is not watching"
        in (_broken(once)["stopped-watching"])
    )


FLIP_FLOP_STORE = """
import itertools

from models.ksm_relist import build_then_swap

_calls = itertools.count()


def Store(api_client):
    # A correct store that kubesim cannot make deterministic: the first instance of the
    # process shows a pod that is not there, the others do not (as if it read a wall clock).
    store = build_then_swap(api_client)
    if next(_calls) == 0:
        view = store.view
        ghost = {"metadata": {"uid": "u", "resourceVersion": "1"}}
        store.view = lambda: {**view(), "default/ghost": ghost}
    return store
"""


def test_a_store_whose_runs_differ_is_reported_as_nondeterministic(tmp_path: Path) -> None:
    store = tmp_path / "flip_flop.py"
    store.write_text(FLIP_FLOP_STORE, encoding="utf-8")
    done = _kubesim("check", f"{store}:Store", "--database", ":memory:", cwd=ROOT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"kubesim check {store}:Store: NONDETERMINISTIC:" in done.stderr
    assert "Traceback" not in done.stderr


class _TickingClock:
    """Wall time that moves one second each time the campaign looks at it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def test_a_campaign_out_of_time_stops_cleanly_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # max_time once ended the campaign by rejecting the next example before it drew anything;
    # Hypothesis saw a choice prefix end earlier than before and the campaign of a correct store
    # was reported as NONDETERMINISTIC whenever it ran out of time.
    import kubesim.testing.check as check

    monkeypatch.setattr(check, "time", _TickingClock())
    factory = load_factory("models.ksm_relist:build_then_swap")
    report = check_store(factory, examples=50, max_time=4.5, database=":memory:")
    assert report.ok
    assert report.out_of_time
    # The deadline is 1 + 4.5: four examples see 2, 3, 4 and 5; the fifth sees 6 and stops.
    assert report.examples == 4
    from kubesim.cli.check import _print_report

    _print_report(report, elapsed=4.5)
    assert "OK after 4 examples (--max-time spent: not the --examples asked for)" in (
        capsys.readouterr().out
    )


def test_a_re_watch_does_not_release_the_relist_reader() -> None:
    # A re-watch after a cut connection is no list, so the reader that waits for relists does
    # not read until the quiesce round's forced relist (rounds 2 and 3 are the cuts).
    steps = [ReadConcurrently(), DropWatches(), DropWatches()]
    result = _run("tests.unit.property_stores:prune_then_refill", steps)
    relist_rounds = {r.round for r in result.recording.reads if r.reader == "reader-1-relist"}
    assert relist_rounds, "the quiesce round's relist releases it"
    assert min(relist_rounds) > 3, sorted(relist_rounds)
