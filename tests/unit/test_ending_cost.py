"""What an example's ending costs: the work its oracles need, not what the world holds.

The memory walk runs where the bounded oracle judges retained bytes (the tail rounds), and the
ending rewrites at most ``REWRITTEN_OBJECTS`` objects per round, spread over a larger world.
Neither may cost a verdict: a leak is still found at a size where the sample is a small part of
the world.
"""

from __future__ import annotations

import property_stores as stores

from kubesim.apiserver.field_validation import _builtin_kind_schema
from kubesim.apiserver.server import APIServer
from kubesim.checks.store import judge
from kubesim.scenario.run import REWRITTEN_OBJECTS, Setup, run_scenario
from kubesim.scenario.steps import CreatePods, ExpireWatches


def test_the_memory_walk_runs_where_bounded_judges_it() -> None:
    result = run_scenario(stores.reflector, [CreatePods(2), ExpireWatches()], seed=1)
    walked = [r.phase for r in result.recording.rounds if r.retained_bytes is not None]
    skipped = {r.phase for r in result.recording.rounds if r.retained_bytes is None}
    # The first and last of the three tail rounds: the median of two growths is their mean.
    assert walked == ["tail", "tail"]
    assert skipped == {"setup", "step", "quiesce", "tail"}
    tails = [r for r in result.recording.rounds if r.phase == "tail"]
    assert [r.containers is not None for r in tails] == [True, False, True]


def test_a_report_run_walks_memory_at_every_round_for_its_chart() -> None:
    result = run_scenario(stores.reflector, [CreatePods(2)], seed=1, timeline=True)
    assert all(r.retained_bytes is not None for r in result.recording.rounds)


def test_a_large_world_is_rewritten_by_a_sample_and_a_leak_is_still_found() -> None:
    pods = 3 * REWRITTEN_OBJECTS
    leaky = run_scenario(stores.appending_watcher, [], seed=1, setup=Setup(pods=pods))
    tail_lines = [r.step for r in leaky.recording.rounds if r.phase == "tail"]
    assert tail_lines[0].startswith(f"tail 1: {REWRITTEN_OBJECTS} of the {pods} pods re-annotated")
    # What the server holds says the same: between two tail rounds, that many pods changed.
    tails = [r for r in leaky.recording.rounds if r.phase == "tail"]
    changed = [key for key, seen in tails[-1].server.items() if tails[-2].server[key] != seen]
    assert len(changed) == REWRITTEN_OBJECTS
    assert len({key.partition("/")[0] for key in changed}) == 2  # both namespaces sampled
    verdict = judge(leaky.recording)
    assert "bounded" in {v.property for v in verdict.violations}
    correct = run_scenario(stores.reflector, [], seed=1, setup=Setup(pods=pods))
    assert judge(correct.recording).ok


def test_a_default_world_is_rewritten_whole() -> None:
    result = run_scenario(stores.reflector, [CreatePods(3)], seed=1)
    tail_lines = [r.step for r in result.recording.rounds if r.phase == "tail"]
    assert tail_lines[0].startswith("tail 1: every pod re-annotated")


def test_servers_share_the_schemas_of_built_in_kinds() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    APIServer(seed=0).create("pods", pod, namespace="default")
    before = _builtin_kind_schema.cache_info()
    second = APIServer(seed=1)
    second.create("pods", pod, namespace="default")
    second.patch("pods", "p", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    after = _builtin_kind_schema.cache_info()
    assert after.misses == before.misses  # the second server built no schema of its own
    assert second.resource("pods") is APIServer(seed=2).resource("pods")


def test_a_bound_api_method_does_not_drag_its_class_namespace_into_the_walk() -> None:
    """The official client's methods are pydantic ``validate_call`` wrappers (kubernetes 37),
    which keep their class's namespace: a store holding one retained every method of
    CoreV1Api (over 400 wrappers) and each walk took tens of milliseconds."""
    import kind_stores

    from kubesim.checks.retained import measure_retained
    from kubesim.sim.store import store_roots
    from kubesim.transport.kubernetes_client import kubernetes_client

    store = kind_stores.service_registry(kubernetes_client(APIServer(seed=0)))
    measured = measure_retained(store_roots(store, kind_stores.service_registry))
    assert measured.objects < 500
    assert measured.retained_bytes < 100_000
