"""The memory oracle: verdicts from samples, with the numbers, and what the store retains.

The stores are in ``bench/memory_stores.py`` (the same ones ``bench/memory_tolerance.py``
measures).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import memory_stores
from kubesim import APIServer, MemorySample, MemorySampler, check_memory_bounded, run_watch_restarts
from kubesim.checks.memory import default_tolerance
from kubesim.checks.retained import measure_retained
from kubesim.checks.sizes import SizesRound, check_sizes_bounded
from kubesim.cli.plot import legend


def samples(*sizes: int) -> list[MemorySample]:
    return [MemorySample(round_, size, size // 64) for round_, size in enumerate(sizes)]


def test_a_flat_store_passes() -> None:
    assert check_memory_bounded(samples(900_000, 100_000, 100_400, 99_800, 100_100)) is None


def test_steady_growth_fails_with_the_slope_and_the_endpoints() -> None:
    violation = check_memory_bounded(samples(0, 100_000, 150_000, 200_000, 250_000))
    assert violation is not None
    assert violation.growth_per_round == pytest.approx(50_000)
    text = str(violation)
    assert "grows by 50,000 bytes per round" in text
    assert "100,000 bytes after round 1" in text
    assert "250,000 after round 4" in text


def test_the_warmup_sample_is_left_out() -> None:
    # A large first round (caches, first copies) is not growth.
    assert check_memory_bounded(samples(10, 500_000, 500_000, 500_000)) is None
    assert check_memory_bounded(samples(10, 500_000, 500_000, 500_000), warmup=0) is not None


def test_growth_that_levels_off_is_bounded_and_growth_that_goes_on_is_not() -> None:
    # Under churn a store replaces every object once (list-decoded by watch-decoded), then stops.
    levels_off = samples(0, 100_000, 130_000, 160_000, 160_000, 160_000, 160_000)
    assert check_memory_bounded(levels_off) is None
    goes_on = samples(0, 100_000, 130_000, 160_000, 160_000, 160_000, 161_000)
    violation = check_memory_bounded(goes_on)
    assert violation is not None


def test_tolerance_is_respected_and_bad_arguments_are_named() -> None:
    growing = samples(0, 1000, 2000, 3000)
    assert check_memory_bounded(growing, tolerance_per_round=1000) is None
    assert check_memory_bounded(growing, tolerance_per_round=999) is not None
    with pytest.raises(ValueError, match="warmup=-1"):
        check_memory_bounded(growing, warmup=-1)
    with pytest.raises(ValueError, match="at least 2 samples"):
        check_memory_bounded(samples(1, 2))


def test_the_sampler_sees_what_a_store_retains_and_not_what_it_frees() -> None:
    kept: list[bytes] = []
    with MemorySampler() as sampler:
        sampler.sample(0)
        kept.extend(bytes(1000) + bytes([i % 256]) for i in range(200))
        _garbage = [bytes(5000) for _ in range(200)]
        del _garbage
        grown = sampler.sample(1)
    delta = grown.retained_bytes - sampler.samples[0].retained_bytes
    assert 200 * 1000 <= delta < 200 * 1000 + 50_000
    assert any("test_memory_oracle.py" in site for site, _ in grown.top_sites)


# -- what the store retains (the boundedness verdict) ----------------------------------------


def test_a_store_that_keeps_the_servers_own_bytes_is_flagged_and_the_list_is_named() -> None:
    # The chunks are bytes the server allocated; tracemalloc charged them to kubesim, not to
    # the store, and judged this store bounded.
    report = run_watch_restarts(
        memory_stores.keeps_chunks, seed=1, pods=1, containers=1, restarts=6
    )
    assert report.verdict == "GROWS", report.explain()
    violation = report.violation
    assert violation is not None
    # One pod line (~1.9 kB) per restart: above the default tolerance, below 10x it.
    assert 256 < violation.growth_per_round < 2560
    assert violation.growing
    assert violation.growing[0].path == "store.chunks"
    assert "store.chunks (list): 2 -> 7 items" in str(violation)


@pytest.mark.parametrize(
    ("factory", "options"),
    [
        (memory_stores.per_namespace, {"pods": 20, "namespaces": 20}),  # one watch per namespace
        (memory_stores.informer, {"pods": 3, "churn": 3}),  # a small store under pod churn
        (memory_stores.raw_watch, {"pods": 3, "churn": 3}),
        (memory_stores.informer, {"pods": 10, "fault": "drop"}),
    ],
    ids=["one-watch-per-namespace-idle", "informer-churn", "raw-watch-churn", "informer-drop"],
)
def test_correct_stores_are_bounded_whatever_the_server_keeps(factory: Any, options: Any) -> None:
    report = run_watch_restarts(factory, seed=1, restarts=12, **options)
    assert report.verdict == "BOUNDED", report.explain()
    # What the server allocates per request (uids, watchers, timers) is never the store's.
    after_warmup = [r.retained_bytes for r in report.rounds[1:]]
    assert max(after_warmup) - min(after_warmup) <= 16, after_warmup


def test_an_index_that_grows_while_the_live_set_does_not_is_flagged_by_sizes_alone() -> None:
    report = run_watch_restarts(
        memory_stores.index_leak,
        seed=1,
        pods=50,
        containers=1,
        restarts=10,
        tolerance_per_round=1e9,  # no byte verdict at all: sizes() alone must catch it
    )
    assert report.violation is None
    assert report.verdict == "GROWS"
    [violation] = report.sizes_violations
    assert violation.entry == "index"
    assert str(violation).startswith("sizes()['index'] grows from 100 to 550 entries")
    assert "live set goes from 56 to 56 objects" in str(violation)
    # The picture's legend comes from the verdict: never "bounded" beside a climbing panel.
    assert legend(report) == "store: GROWS (index grows)"


def test_a_store_that_lists_once_and_returns_stopped_watching() -> None:
    report = run_watch_restarts(memory_stores.list_once, seed=1, pods=5, restarts=3)
    assert report.verdict == "STOPPED WATCHING"
    assert report.failure is not None
    assert report.failure.round == 0
    assert "run() returned after 1 requests" in str(report.failure)
    assert not report.rounds  # nothing measured: no "BOUNDED, +0 bytes"


def test_a_store_that_stops_after_its_first_watch_ends_names_the_round_and_the_fault() -> None:
    report = run_watch_restarts(memory_stores.watch_once, seed=1, pods=5, restarts=3)
    assert report.verdict == "STOPPED WATCHING"
    text = str(report.failure)
    assert "at round 1, after the server ended its watch cleanly (expire_watches)" in text


def test_a_protocol_error_escaping_run_is_a_crash_that_names_the_fault_and_the_fix() -> None:
    report = run_watch_restarts(
        memory_stores.informer_not_catching_cuts, seed=1, pods=5, restarts=3, fault="drop"
    )
    assert report.verdict == "CRASHED"
    text = str(report.failure)
    assert "raised urllib3.exceptions.ProtocolError" in text
    assert "after the server cut its watch (drop_watches)" in text
    assert "catch it and watch again" in text


def test_the_sizes_oracle_compares_with_the_live_set() -> None:
    def rounds(*points: tuple[int, int]) -> list[SizesRound]:
        return [SizesRound(n, {"index": size}, live) for n, (size, live) in enumerate(points)]

    assert check_sizes_bounded(rounds((0, 5), (5, 5), (5, 5), (6, 5)))  # grows, live flat
    assert not check_sizes_bounded(rounds((0, 5), (5, 5), (10, 10), (20, 20)))  # follows live
    assert check_sizes_bounded(rounds((0, 5), (5, 5), (20, 10), (40, 20)))  # faster than live
    assert not check_sizes_bounded(rounds((0, 5), (5, 5), (9, 5), (5, 5)))  # a queue drains
    with pytest.raises(ValueError, match="warmup=-1"):
        check_sizes_bounded(rounds((0, 5), (1, 5)), warmup=-1)


def test_retained_memory_is_counted_once_and_stops_at_the_harness() -> None:
    shared = bytes(10_000)
    server = APIServer(seed=1)
    holder = {"a": [shared, shared], "b": (shared,), "server": server}
    measured = measure_retained({"store": holder})
    assert 10_000 < measured.retained_bytes < 11_000  # the bytes once, no server
    assert measured.containers["store['a']"].items == 2


def test_the_default_tolerance_is_the_documented_one() -> None:
    assert default_tolerance(0) == 256
    assert default_tolerance(10_000_000) == 5_000


def test_measuring_a_1000_pod_store_walks_every_object_once() -> None:
    report = run_watch_restarts(memory_stores.informer, seed=1, pods=1000, restarts=2)
    sample = report.samples[-1]
    # Every pod dict and what hangs from it, but no server object: a few dozen per pod.
    assert 1000 * 20 < sample.retained_blocks < 1000 * 200


def _naive_walk(root: object, *, keys: bool) -> tuple[int, int]:
    """Bytes and objects reachable from ``root``, each once, queueing everything: right for
    JSON values, which reference nothing else. ``keys``: a dict's keys are reached as the
    walk's named steps reach them; without, as ``gc.get_referents`` does (string keys are not
    among a dict's referents)."""
    import gc
    import sys

    seen = {id(root)}
    queue = [root]
    total = 0
    for obj in queue:
        total += sys.getsizeof(obj)
        if keys and type(obj) is dict:
            children = [part for item in obj.items() for part in item]
        else:
            children = gc.get_referents(obj)
        for child in children:
            if id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
    return total, len(queue)


_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=60,
)
# Maps all the way down: every step the walk takes is a named one (a list item ends a path).
json_maps = st.recursive(
    _leaves, lambda inner: st.dictionaries(st.text(), inner, max_size=5), max_leaves=60
)


@given(json_values, json_maps)
def test_retained_memory_of_json_values_is_every_reachable_object_once(
    value: object, nested: object
) -> None:
    # Leaves are sized where they are met instead of being queued; the figures must be those of
    # a walk that queues everything, shared strings and small ints counted once, both where
    # the walk does not name its steps and where it does (it then reaches a map's keys too).
    unnamed = measure_retained({"store": value}, named_depth=0)
    assert (unnamed.retained_bytes, unnamed.objects) == _naive_walk(value, keys=False)
    named = measure_retained({"store": nested}, named_depth=1_000)
    assert (named.retained_bytes, named.objects) == _naive_walk(nested, keys=True)
    if isinstance(nested, dict):
        assert named.containers["store"].retained_bytes == named.retained_bytes


class _Record:
    """An instance with a ``__dict__`` (sized as a plain dict) somewhere in a store's graph."""

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


def _one_at_a_time(roots: dict[str, object], named_depth: int) -> tuple[int, int, dict[str, Any]]:
    """The walk's figures from a plain breadth-first queue, one object and one
    ``gc.get_referents`` call at a time, every object (leaves too) queued with its parent: what
    :func:`measure_retained`'s level-batched walk must reproduce exactly, bytes per named
    container included (an object shared by two subtrees is first reached, and counted, where
    this queue first reaches it)."""
    import gc
    import sys

    from kubesim.checks import retained

    seen = set(retained._module_namespaces())
    objects: list[object] = []
    parents: list[int] = []
    paths: list[str | None] = []
    depths: list[int] = []
    instance_dicts: set[int] = set()
    for name, root in roots.items():
        seen.add(id(root))
        objects.append(root)
        parents.append(-1)
        paths.append(name)
        depths.append(0)
    for head, obj in enumerate(objects):
        if type(obj) in retained._ATOM_SET:
            continue
        path, depth = paths[head], depths[head] + 1
        if path is not None and depth <= named_depth:
            steps = list(retained._labelled(obj))
        elif type(obj) in (list, tuple, dict, set, frozenset):
            steps = [("<ref>", child) for child in gc.get_referents(obj)]
        else:
            steps = list(retained._object_children(obj, labelled=False))
        for label, child in steps:
            if id(child) in seen or retained._stops_at(type(child)):
                continue
            seen.add(id(child))
            step = retained._label(label[0]) if isinstance(label, tuple) else label
            if step == "<__dict__>":
                instance_dicts.add(len(objects))
            objects.append(child)
            parents.append(head)
            paths.append(None if path is None or step.startswith("<") else path + step)
            depths.append(depth)
    sizes = [
        sys.getsizeof(
            dict(obj)  # type: ignore[call-overload]
            if index in instance_dicts
            else set(obj)  # type: ignore[call-overload]
            if type(obj) is set
            else obj
        )
        for index, obj in enumerate(objects)
    ]
    subtree = list(sizes)
    for index in range(len(objects) - 1, -1, -1):
        if parents[index] >= 0:
            subtree[parents[index]] += subtree[index]
    containers: dict[str, Any] = {}
    for index, obj in enumerate(objects):
        path = paths[index]
        if path is not None and isinstance(obj, retained._CONTAINERS) and path not in containers:
            containers[path] = (type(obj).__name__, len(obj), subtree[index])  # type: ignore[arg-type]
    return sum(sizes), len(objects), containers


_parts = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
        | st.tuples(inner, inner)
        | st.builds(_Record, a=inner, b=inner)
    ),
    max_leaves=40,
)


# Nested graphs are slow to draw on a loaded machine (the mutation check runs this beside the
# rest of the suite): the health check must not make the verdict depend on timing.
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_parts, min_size=1, max_size=6), st.data(), st.integers(0, 6))
def test_the_level_batched_walk_gives_the_one_at_a_time_figures(
    parts: list[object], data: st.DataObject, named_depth: int
) -> None:
    # Stores share values between their structures (one pod dict in a cache and an index):
    # the graph reuses drawn parts in several places, so the first-reached rule matters.
    def pick() -> object:
        return parts[data.draw(st.integers(0, len(parts) - 1))]

    store = _Record(cache={f"ns/{i}": pick() for i in range(3)}, index=[pick(), (pick(),)])
    roots = {"store": store, "factory": {"shared": pick()}}
    measured = measure_retained(roots, named_depth=named_depth)
    expected_bytes, expected_objects, expected_containers = _one_at_a_time(roots, named_depth)
    assert (measured.retained_bytes, measured.objects) == (expected_bytes, expected_objects)
    assert {
        path: (c.type_name, c.items, c.retained_bytes) for path, c in measured.containers.items()
    } == expected_containers


def test_a_set_is_sized_by_its_items_not_by_the_history_of_its_table() -> None:
    # A work queue's dirty set: keys added and removed every round. Its table grows with the
    # slots the removals leave (where they are depends on the keys' hashes, which change from
    # process to process); the walk sizes it as built afresh, so it stays flat.
    churned: set[str] = set()
    for round_ in range(200):
        churned.update(f"team-0/web-{round_:03d}-{i}" for i in range(12))
        churned.difference_update(sorted(churned)[:-2])  # the worker drains all but two
    fresh = set(churned)
    assert sys.getsizeof(churned) > sys.getsizeof(fresh)  # the table kept its history
    assert (
        measure_retained({"store": churned}).retained_bytes
        == measure_retained({"store": fresh}).retained_bytes
    )
    # The same deep in a structure, where the walk expands unnamed containers in runs.
    deep = measure_retained({"store": [[churned]]}, named_depth=0).retained_bytes
    assert deep == measure_retained({"store": [[fresh]]}, named_depth=0).retained_bytes
