"""Server-side Tables: what kubectl gets for ``Accept: application/json;as=Table;...``.

k8s-wire.md §1.2 (Table watch: column definitions only on the first event, apiserver
``watchEmbeddedEncoder``) and §4.1 (kubectl's Accept header); clients-measured.md §2.2 ("Minimal
Table support"). Pod cells follow kube-apiserver's pod printer; AGE is computed against the
server's virtual clock, so a test that needs an exact AGE runs its own server and moves that
clock far enough that wall-clock seconds cannot change the printed value.
"""

from __future__ import annotations

from typing import Any

from .conftest import serve
from .objects import configmap, configmaps, pod, pods
from .wire import Endpoint, query, rv_of

KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
MERGE = "application/merge-patch+json"
POD_COLUMNS = [
    "Name",
    "Ready",
    "Status",
    "Restarts",
    "Age",
    "IP",
    "Node",
    "Nominated Node",
    "Readiness Gates",
]
TIMEOUT = 900


def _table(api: Endpoint, path: str, accept: str = KUBECTL_ACCEPT) -> Any:
    reply = api.get(path, Accept=accept)
    assert reply.status == 200, reply
    return reply.json()


def _column_names(table: Any) -> list[str]:
    return [column["name"] for column in table["columnDefinitions"]]


def test_list_with_table_accept_is_a_meta_v1_table_with_pod_columns_and_metadata_rows(
    api: Endpoint, ns: str
) -> None:
    for name in ("a", "b"):
        api.ok("POST", pods(ns), pod(name), expect=201)
    table = _table(api, pods(ns))
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert int(table["metadata"]["resourceVersion"]) >= int(rv_of(api.ok("GET", pods(ns, "b"))))
    assert "continue" not in table["metadata"]
    assert _column_names(table) == POD_COLUMNS
    assert [c["priority"] for c in table["columnDefinitions"]] == [0] * 5 + [1] * 4
    assert [row["cells"][:4] for row in table["rows"]] == [
        ["a", "0/1", "Pending", "0"],
        ["b", "0/1", "Pending", "0"],
    ]
    for row, name in zip(table["rows"], ("a", "b"), strict=True):
        stored = api.ok("GET", pods(ns, name))
        assert row["object"] == {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": stored["metadata"],
        }


def test_get_with_table_accept_is_a_one_row_table_at_the_object_resource_version(
    api: Endpoint, ns: str
) -> None:
    created = api.ok("POST", pods(ns), pod("solo", node="node-1"), expect=201)
    table = _table(api, pods(ns, "solo"))
    assert table["kind"] == "Table"
    assert table["metadata"] == {"resourceVersion": rv_of(created)}
    assert _column_names(table) == POD_COLUMNS
    [row] = table["rows"]
    assert row["cells"][0] == "solo"
    assert row["cells"][5:] == ["<none>", "node-1", "<none>", "<none>"]
    assert row["object"]["metadata"]["uid"] == created["metadata"]["uid"]


def test_a_paginated_table_list_carries_continue_and_the_pages_cover_every_pod(
    api: Endpoint, ns: str
) -> None:
    for name in ("p1", "p2", "p3"):
        api.ok("POST", pods(ns), pod(name), expect=201)
    first = _table(api, pods(ns) + query(limit=2))
    assert [row["cells"][0] for row in first["rows"]] == ["p1", "p2"]
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 1
    second = _table(api, pods(ns) + query(limit=2, **{"continue": token}))
    assert [row["cells"][0] for row in second["rows"]] == ["p3"]
    assert "continue" not in second["metadata"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_pod_cells_follow_the_container_statuses(api: Endpoint, ns: str) -> None:
    containers = [{"name": "web", "image": "nginx:1.25"}, {"name": "log", "image": "busybox"}]
    api.ok("POST", pods(ns), pod("crashy", containers=containers), expect=201)
    status = {
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "web",
                    "ready": True,
                    "restartCount": 1,
                    "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
                },
                {
                    "name": "log",
                    "ready": False,
                    "restartCount": 4,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                },
            ],
        }
    }
    api.ok("PATCH", pods(ns, "crashy") + "/status", status, content_type=MERGE)
    [row] = _table(api, pods(ns, "crashy"))["rows"]
    assert row["cells"][:4] == ["crashy", "1/2", "CrashLoopBackOff", "5"]


def test_config_maps_print_their_key_count_and_kinds_without_a_printer_name_and_age(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", configmaps(ns), configmap("settings"), expect=201)
    table = _table(api, configmaps(ns))
    assert _column_names(table) == ["Name", "Data", "Age"]
    [row] = table["rows"]
    assert row["cells"][:2] == ["settings", len(configmap("settings").get("data", {}))]
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    api.ok("POST", leases, {"metadata": {"name": "lock"}}, expect=201)
    table = _table(api, leases)
    assert _column_names(table) == ["Name", "Age"]
    assert [row["cells"][0] for row in table["rows"]] == ["lock"]


def test_only_v1beta1_asked_gives_a_v1beta1_table_and_plain_json_still_gives_a_list(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", pods(ns), pod("x"), expect=201)
    beta = _table(api, pods(ns), "application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert beta["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    plain = _table(api, pods(ns), "application/json")
    assert plain["kind"] == "PodList"


def test_include_object_none_and_object_choose_what_each_row_embeds(api: Endpoint, ns: str) -> None:
    api.ok("POST", pods(ns), pod("x"), expect=201)
    bare = _table(api, pods(ns) + query(includeObject="None"))
    assert "object" not in bare["rows"][0]
    whole = _table(api, pods(ns) + query(includeObject="Object"))
    assert whole["rows"][0]["object"]["spec"]["containers"][0]["name"] == "main"


def test_age_is_computed_against_the_server_virtual_clock() -> None:
    with serve() as own:
        own.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "aging"}}, expect=201)
        own.ok("POST", pods("aging"), pod("old"), expect=201)
        # Ten virtual days: HumanDuration prints whole days from 8 days on, so the wall-clock
        # seconds that pass meanwhile cannot change the cell.
        own.advance(10 * 24 * 3600)
        [row] = _table(own, pods("aging"))["rows"]
        assert row["cells"][4] == "10d"


def test_watch_events_carry_tables_with_column_definitions_only_in_the_first(
    api: Endpoint, ns: str
) -> None:
    rv = str(api.current_rv())
    path = pods(ns) + query(watch=1, resourceVersion=rv, timeoutSeconds=TIMEOUT)
    with api.watch(path, headers={"Accept": KUBECTL_ACCEPT}) as stream:
        stream.assert_watch_head()
        created = [api.ok("POST", pods(ns), pod(n), expect=201) for n in ("w1", "w2")]
        api.ok("PATCH", pods(ns, "w1"), {"metadata": {"labels": {"x": "y"}}}, content_type=MERGE)
        events = stream.read_events(3)
        assert [e["type"] for e in events] == ["ADDED", "ADDED", "MODIFIED"]
        for event in events:
            table = event["object"]
            assert table["kind"] == "Table"
            assert table["apiVersion"] == "meta.k8s.io/v1"
            [row] = table["rows"]
            assert row["object"]["kind"] == "PartialObjectMetadata"
            assert table["metadata"]["resourceVersion"] == rv_of(row["object"])
        assert _column_names(events[0]["object"]) == POD_COLUMNS
        assert [e["object"]["columnDefinitions"] for e in events[1:]] == [None, None]
        assert [e["object"]["rows"][0]["cells"][0] for e in events] == ["w1", "w2", "w1"]
        assert events[0]["object"]["metadata"]["resourceVersion"] == rv_of(created[0])
        api.advance(TIMEOUT + 1)
        assert stream.read_to_end() == []


def test_a_table_watch_from_no_resource_version_puts_columns_on_the_first_synthetic_added(
    api: Endpoint, ns: str
) -> None:
    for name in ("s1", "s2"):
        api.ok("POST", pods(ns), pod(name), expect=201)
    path = pods(ns) + query(watch=1, timeoutSeconds=TIMEOUT)
    with api.watch(path, headers={"Accept": KUBECTL_ACCEPT}) as stream:
        events = stream.read_events(2)
        assert [e["type"] for e in events] == ["ADDED", "ADDED"]
        assert _column_names(events[0]["object"]) == POD_COLUMNS
        assert events[1]["object"]["columnDefinitions"] is None
        api.advance(TIMEOUT + 1)
        assert stream.read_to_end() == []
