"""The watch wire itself: headers, chunk framing, line hygiene, query parsing, paths, faults.

k8s-wire.md §1.2 (headers flushed before the first event; one compact JSON object per line,
``application/json``, chunked), §1.4 (clean and abrupt ends), §2.1 (boolean query parameters,
apimachinery ``Convert_Slice_string_To_bool``), behaviours 12, 17 and 20.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .objects import configmap, configmaps, deployment, deployments, pod, pods
from .wire import ABRUPT, CLEAN, Endpoint, is_named, query, rv_of, summary

MERGE = "application/merge-patch+json"
TIMEOUT = 900


def test_watch_headers_are_flushed_before_any_event_exists(api: Endpoint, ns: str) -> None:
    rv = str(api.current_rv())
    # open() returns only once the status line and headers arrived; nothing is there to send yet.
    with api.watch(
        configmaps(ns) + query(watch=1, resourceVersion=rv, timeoutSeconds=TIMEOUT)
    ) as stream:
        stream.assert_watch_head()
        assert stream.chunks == []
        added = api.ok("POST", configmaps(ns), configmap("first"), expect=201)
        assert summary(stream.read_events(1)) == [("ADDED", "first", rv_of(added))]
        api.advance(TIMEOUT + 1)
        assert stream.read_to_end() == []
        assert stream.end == CLEAN


def test_every_watch_line_is_one_compact_json_object_and_chunks_hold_whole_lines(
    api: Endpoint, ns: str
) -> None:
    api.ok(
        "POST",
        configmaps(ns),
        configmap(
            "text", {"unicode": "ünïcödé ✓ 日本", "quotes": 'say "hi"\n\tand \\ bye', "empty": ""}
        ),
        expect=201,
    )
    api.ok("POST", pods(ns), pod("p", labels={"a": "b"}), expect=201)
    with api.watch(configmaps(ns) + query(watch=1, timeoutSeconds=TIMEOUT)) as stream:
        (initial,) = stream.read_events(1)
        assert initial["object"]["data"]["unicode"] == "ünïcödé ✓ 日本"
        for i in range(5):
            api.ok("PATCH", configmaps(ns, "text"), {"data": {"n": str(i)}}, content_type=MERGE)
        api.ok("POST", configmaps(ns), configmap("sentinel"), expect=201)
        events = stream.read_until(is_named("sentinel"))
        assert len(events) == 6
        api.advance(TIMEOUT + 1)
        stream.read_to_end()
        assert stream.end == CLEAN

    body = b"".join(stream.chunks)
    assert b"\n\n" not in body
    assert not body.startswith(b"\n")
    assert body.split(b"\n")[:-1] == [line[:-1] for line in stream.lines]
    for chunk in stream.chunks:
        assert chunk.endswith(b"\n"), chunk[-80:]
    for event in [initial, *events]:
        # In watch events, unlike list items, objects carry kind and apiVersion.
        assert (event["object"]["kind"], event["object"]["apiVersion"]) == ("ConfigMap", "v1")


@pytest.mark.parametrize(
    "watch_param", ["watch=1", "watch=true", "watch=True", "watch", "watch=yes", "watch="]
)
def test_any_watch_value_but_false_or_zero_opens_a_watch(
    api: Endpoint, ns: str, watch_param: str
) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    modified = api.ok("PATCH", configmaps(ns, "c"), {"data": {"v": "1"}}, content_type=MERGE)
    path = (
        f"{configmaps(ns)}?{watch_param}&resourceVersion={rv_of(created)}&timeoutSeconds={TIMEOUT}"
    )
    with api.watch(path) as stream:
        stream.assert_watch_head()
        assert summary(stream.read_events(1)) == [("MODIFIED", "c", rv_of(modified))]
        api.advance(TIMEOUT + 1)
        assert stream.read_to_end() == []


@pytest.mark.parametrize("watch_param", ["watch=0", "watch=false", "watch=False", "watch=FALSE"])
def test_watch_false_or_zero_is_a_plain_list(api: Endpoint, ns: str, watch_param: str) -> None:
    api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    reply = api.get(f"{configmaps(ns)}?{watch_param}")
    assert reply.status == 200
    assert "transfer-encoding" not in reply.headers
    listing = reply.json()
    assert listing["kind"] == "ConfigMapList"
    assert [item["metadata"]["name"] for item in listing["items"]] == ["c"]


def test_legacy_watch_paths_open_watches_for_core_and_group_resources(
    api: Endpoint, ns: str
) -> None:
    pod_rv = rv_of(api.ok("POST", pods(ns), pod("p"), expect=201))
    deploy_rv = rv_of(api.ok("POST", deployments(ns), deployment("d"), expect=201))
    pod_mod = api.ok(
        "PATCH", pods(ns, "p"), {"metadata": {"labels": {"x": "1"}}}, content_type=MERGE
    )
    deploy_mod = api.ok(
        "PATCH", deployments(ns, "d"), {"spec": {"replicas": 2}}, content_type=MERGE
    )
    cases = [
        (f"/api/v1/watch/namespaces/{ns}/pods", pod_rv, ("MODIFIED", "p", rv_of(pod_mod))),
        (
            f"/apis/apps/v1/watch/namespaces/{ns}/deployments",
            deploy_rv,
            ("MODIFIED", "d", rv_of(deploy_mod)),
        ),
    ]
    for path, rv, expected in cases:
        with api.watch(path + query(resourceVersion=rv, timeoutSeconds=TIMEOUT)) as stream:
            stream.assert_watch_head()
            (event,) = stream.read_events(1)
            assert summary([event]) == [expected]
            api.advance(TIMEOUT + 1)
            assert stream.read_to_end() == []


def test_a_cluster_wide_legacy_watch_of_namespaces_sees_a_new_namespace(
    api: Endpoint, make_namespace: Callable[[], str]
) -> None:
    rv = str(api.current_rv())
    with api.watch(
        "/api/v1/watch/namespaces" + query(resourceVersion=rv, timeoutSeconds=TIMEOUT)
    ) as stream:
        stream.assert_watch_head()
        name = make_namespace()
        (event,) = stream.read_events(1)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", name)
        assert event["object"]["kind"] == "Namespace"
        api.advance(TIMEOUT + 1)
        assert stream.read_to_end() == []


def test_expire_watches_ends_open_watches_with_a_clean_end_of_stream(
    api: Endpoint, ns: str
) -> None:
    rv = str(api.current_rv())
    with api.watch(configmaps(ns) + query(watch=1, resourceVersion=rv)) as stream:
        stream.assert_watch_head()
        added = api.ok("POST", configmaps(ns), configmap("before"), expect=201)
        assert summary(stream.read_events(1)) == [("ADDED", "before", rv_of(added))]
        assert api.admin("expire-watches")["closed"] >= 1
        assert stream.read_to_end() == []
        assert stream.end == CLEAN
    assert api.alive()


def test_drop_watches_cuts_the_connection_without_the_terminating_chunk(
    api: Endpoint, ns: str
) -> None:
    rv = str(api.current_rv())
    with api.watch(configmaps(ns) + query(watch=1, resourceVersion=rv)) as stream:
        stream.assert_watch_head()
        added = api.ok("POST", configmaps(ns), configmap("before"), expect=201)
        assert summary(stream.read_events(1)) == [("ADDED", "before", rv_of(added))]
        assert api.admin("drop-watches")["dropped"] >= 1
        assert stream.read_to_end() == []
        assert stream.end == ABRUPT
    assert api.alive()


def test_the_admin_state_counts_an_open_watch_until_it_ends(api: Endpoint, ns: str) -> None:
    api.admin("expire-watches")  # leftovers from earlier tests do not count below
    before = api.state()["openWatches"]
    rv = str(api.current_rv())
    with api.watch(
        configmaps(ns) + query(watch=1, resourceVersion=rv, timeoutSeconds=TIMEOUT)
    ) as stream:
        stream.assert_watch_head()
        assert api.state()["openWatches"] == before + 1
        api.advance(TIMEOUT + 1)
        assert stream.read_to_end() == []
    assert api.state()["openWatches"] == before
