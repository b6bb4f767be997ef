"""Lists over raw HTTP: shape, pagination, resourceVersion semantics and ListOptions errors.

k8s-wire.md §1.1 (list response), §1.5 (Status table), §2.1 (RV semantics and
``resourceVersionMatch`` validation, apimachinery ``internalversion/validation``), behaviours 14,
15 and 18. A too-large RV is apiserver ``storage.NewTooLargeResourceVersionError``, which
wraps apimachinery ``NewTimeoutError`` (message prefixed ``Timeout: ``).
"""

from __future__ import annotations

from typing import Any

from .objects import configmap, configmaps, deployment, deployments, pod, pods
from .wire import Endpoint, query, rv_of

MERGE = "application/merge-patch+json"
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)


def names(listing: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


def list_options_invalid(*causes: tuple[str, str, str]) -> dict[str, Any]:
    """The 422 Status for ListOptions validation errors (reason, field, message) in order."""
    texts = [f"{field}: {message}" for _, field, message in causes]
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'ListOptions.meta.k8s.io "" is invalid: {aggregate}',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes],
        },
        "code": 422,
    }


def test_an_empty_list_has_items_as_an_empty_array_never_null(api: Endpoint, ns: str) -> None:
    reply = api.get(pods(ns))
    assert reply.status == 200
    assert reply.content_type == "application/json"
    assert b'"items":[]' in reply.body
    listing = reply.json()
    assert listing["kind"] == "PodList"
    assert listing["apiVersion"] == "v1"
    assert listing["items"] == []
    assert listing["metadata"]["resourceVersion"].isdigit()
    assert "continue" not in listing["metadata"]
    assert "remainingItemCount" not in listing["metadata"]


def test_items_of_built_in_lists_carry_no_kind_or_api_version_but_the_list_does(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", pods(ns), pod("p"), expect=201)
    api.ok("POST", deployments(ns), deployment("d"), expect=201)
    pod_list = api.ok("GET", pods(ns))
    deployment_list = api.ok("GET", deployments(ns))
    assert (pod_list["kind"], pod_list["apiVersion"]) == ("PodList", "v1")
    assert (deployment_list["kind"], deployment_list["apiVersion"]) == ("DeploymentList", "apps/v1")
    for item in pod_list["items"] + deployment_list["items"]:
        assert "kind" not in item, item
        assert "apiVersion" not in item, item
    single = api.ok("GET", pods(ns, "p"))
    assert {k: v for k, v in single.items() if k not in ("kind", "apiVersion")} == pod_list[
        "items"
    ][0]


def test_list_items_come_in_name_order_with_their_own_resource_versions(
    api: Endpoint, ns: str
) -> None:
    created = {n: api.ok("POST", configmaps(ns), configmap(n), expect=201) for n in ("c", "a", "b")}
    listing = api.ok("GET", configmaps(ns))
    assert names(listing) == ["a", "b", "c"]
    for item in listing["items"]:
        assert rv_of(item) == rv_of(created[item["metadata"]["name"]])
    assert int(listing["metadata"]["resourceVersion"]) >= int(rv_of(created["b"]))


def test_paging_keeps_one_resource_version_and_the_pages_add_up_to_the_full_list(
    api: Endpoint, ns: str
) -> None:
    for i in range(7):
        api.ok("POST", configmaps(ns), configmap(f"c{i}", {"v": "old"}), expect=201)
    full = api.ok("GET", configmaps(ns))
    list_rv = full["metadata"]["resourceVersion"]

    first = api.ok("GET", configmaps(ns) + query(limit=3))
    assert first["metadata"]["resourceVersion"] == list_rv
    assert first["metadata"]["remainingItemCount"] == 4
    # Writes between pages must not show: every page is the snapshot at the first page's RV.
    api.ok("PATCH", configmaps(ns, "c5"), {"data": {"v": "new"}}, content_type=MERGE)
    api.ok("DELETE", configmaps(ns, "c6"))
    api.ok("POST", configmaps(ns), configmap("c9"), expect=201)

    pages = [first]
    while "continue" in pages[-1]["metadata"]:
        token = pages[-1]["metadata"]["continue"]
        pages.append(api.ok("GET", configmaps(ns) + query(limit=3, **{"continue": token})))

    assert [len(page["items"]) for page in pages] == [3, 3, 1]
    assert {page["metadata"]["resourceVersion"] for page in pages} == {list_rv}
    assert pages[1]["metadata"]["remainingItemCount"] == 1
    assert "remainingItemCount" not in pages[-1]["metadata"]
    assert [item for page in pages for item in page["items"]] == full["items"]


def test_remaining_item_count_is_absent_when_a_selector_is_used(api: Endpoint, ns: str) -> None:
    for i in range(5):
        api.ok("POST", pods(ns), pod(f"p{i}", labels={"app": "web"}, node="node-a"), expect=201)
    for selector in ({"labelSelector": "app=web"}, {"fieldSelector": "spec.nodeName=node-a"}):
        page = api.ok("GET", pods(ns) + query(limit=2, **selector))
        assert len(page["items"]) == 2
        assert "continue" in page["metadata"]
        assert "remainingItemCount" not in page["metadata"], (selector, page["metadata"])
    unfiltered = api.ok("GET", pods(ns) + query(limit=2))
    assert unfiltered["metadata"]["remainingItemCount"] == 3


def test_a_continue_token_older_than_the_compacted_history_is_a_410_expired(
    api: Endpoint, ns: str
) -> None:
    for i in range(3):
        api.ok("POST", configmaps(ns), configmap(f"c{i}"), expect=201)
    first = api.ok("GET", configmaps(ns) + query(limit=1))
    token = first["metadata"]["continue"]
    api.ok("POST", configmaps(ns), configmap("later"), expect=201)
    api.admin("compact")

    reply = api.get(configmaps(ns) + query(limit=1, **{"continue": token}))

    assert reply.status == 410
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": CONTINUE_EXPIRED,
        "reason": "Expired",
        "code": 410,
    }
    assert api.alive()


def test_a_continue_token_with_a_specific_resource_version_is_a_400(api: Endpoint, ns: str) -> None:
    for i in range(2):
        api.ok("POST", configmaps(ns), configmap(f"c{i}"), expect=201)
    first = api.ok("GET", configmaps(ns) + query(limit=1))
    token = first["metadata"]["continue"]
    reply = api.get(
        configmaps(ns)
        + query(
            limit=1, resourceVersion=first["metadata"]["resourceVersion"], **{"continue": token}
        )
    )
    assert reply.status == 400
    assert reply.json()["reason"] == "BadRequest"
    assert (
        reply.json()["message"] == "specifying resource version is not allowed when using continue"
    )


def test_a_list_without_resource_version_is_the_most_recent_state(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("c", {"v": "1"}), expect=201)
    latest = api.ok("PATCH", configmaps(ns, "c"), {"data": {"v": "2"}}, content_type=MERGE)
    listing = api.ok("GET", configmaps(ns))
    assert listing["metadata"]["resourceVersion"] == str(api.current_rv())
    assert listing["items"][0]["data"] == {"v": "2"}
    assert rv_of(listing["items"][0]) == rv_of(latest)


def test_a_list_at_resource_version_zero_is_served(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    listing = api.ok("GET", configmaps(ns) + query(resourceVersion="0"))
    # "Any": possibly stale, but a well-formed list with a numeric RV.
    assert listing["kind"] == "ConfigMapList"
    assert listing["metadata"]["resourceVersion"].isdigit()
    assert isinstance(listing["items"], list)


def test_a_list_at_rv_n_without_limit_is_not_older_than_n(api: Endpoint, ns: str) -> None:
    created = api.ok("POST", configmaps(ns), configmap("c", {"v": "1"}), expect=201)
    api.ok("PATCH", configmaps(ns, "c"), {"data": {"v": "2"}}, content_type=MERGE)
    n = int(rv_of(created))
    for options in (
        {"resourceVersion": n},
        {"resourceVersion": n, "resourceVersionMatch": "NotOlderThan"},
    ):
        listing = api.ok("GET", configmaps(ns) + query(**options))
        list_rv = int(listing["metadata"]["resourceVersion"])
        assert list_rv >= n, options
        for item in listing["items"]:
            assert int(rv_of(item)) <= list_rv


def test_a_list_at_rv_n_with_a_limit_or_exact_match_is_the_state_exactly_at_n(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", configmaps(ns), configmap("gone", {"v": "1"}), expect=201)
    kept = api.ok("POST", configmaps(ns), configmap("kept", {"v": "1"}), expect=201)
    n = rv_of(kept)
    api.ok("PATCH", configmaps(ns, "kept"), {"data": {"v": "2"}}, content_type=MERGE)
    api.ok("DELETE", configmaps(ns, "gone"))
    api.ok("POST", configmaps(ns), configmap("new"), expect=201)

    for options in (
        {"resourceVersion": n, "limit": 10},
        {"resourceVersion": n, "resourceVersionMatch": "Exact"},
    ):
        listing = api.ok("GET", configmaps(ns) + query(**options))
        assert listing["metadata"]["resourceVersion"] == n, options
        assert names(listing) == ["gone", "kept"], options
        assert listing["items"][1]["data"] == {"v": "1"}
        assert rv_of(listing["items"][1]) == n


def test_an_exact_list_at_a_compacted_rv_is_a_410_expired(api: Endpoint, ns: str) -> None:
    old = api.ok("POST", configmaps(ns), configmap("c"), expect=201)
    api.ok("POST", configmaps(ns), configmap("d"), expect=201)
    api.admin("compact")
    for options in ({"limit": 1}, {"resourceVersionMatch": "Exact"}):
        reply = api.get(configmaps(ns) + query(resourceVersion=rv_of(old), **options))
        assert reply.status == 410, options
        assert reply.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "The resourceVersion for the provided list is too old.",
            "reason": "Expired",
            "code": 410,
        }


def test_a_list_at_an_rv_newer_than_the_server_is_a_504_resource_version_too_large(
    api: Endpoint, ns: str
) -> None:
    current = api.current_rv()
    requested = current + 1000
    for options in ({}, {"limit": 5}, {"resourceVersionMatch": "NotOlderThan"}):
        reply = api.get(configmaps(ns) + query(resourceVersion=requested, **options))
        assert reply.status == 504, options
        assert reply.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"Timeout: Too large resource version: {requested}, current: {current}",
            "reason": "Timeout",
            "details": {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            },
            "code": 504,
        }


def test_resource_version_match_without_resource_version_is_a_422_on_list_options(
    api: Endpoint, ns: str
) -> None:
    reply = api.get(configmaps(ns) + query(resourceVersionMatch="NotOlderThan"))
    assert reply.status == 422
    assert reply.json() == list_options_invalid(
        (
            "FieldValueForbidden",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        )
    )


def test_exact_match_at_resource_version_zero_is_a_422_on_list_options(
    api: Endpoint, ns: str
) -> None:
    reply = api.get(configmaps(ns) + query(resourceVersion="0", resourceVersionMatch="Exact"))
    assert reply.status == 422
    assert reply.json() == list_options_invalid(
        (
            "FieldValueForbidden",
            "resourceVersionMatch",
            'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        )
    )


def test_an_unknown_resource_version_match_is_a_422_listing_the_supported_values(
    api: Endpoint, ns: str
) -> None:
    reply = api.get(configmaps(ns) + query(resourceVersion="1", resourceVersionMatch="Newest"))
    assert reply.status == 422
    assert reply.json() == list_options_invalid(
        (
            "FieldValueNotSupported",
            "resourceVersionMatch",
            'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
        )
    )


def test_every_list_options_error_is_reported_together_in_validation_order(
    api: Endpoint, ns: str
) -> None:
    reply = api.get(configmaps(ns) + query(resourceVersionMatch="Newest", sendInitialEvents="true"))
    assert reply.status == 422
    assert reply.json() == list_options_invalid(
        (
            "FieldValueForbidden",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "FieldValueNotSupported",
            "resourceVersionMatch",
            'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
        ),
        (
            "FieldValueForbidden",
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for list",
        ),
    )


def test_send_initial_events_on_a_plain_list_is_a_422(api: Endpoint, ns: str) -> None:
    reply = api.get(configmaps(ns) + query(sendInitialEvents="true"))
    assert reply.status == 422
    assert reply.json() == list_options_invalid(
        (
            "FieldValueForbidden",
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for list",
        )
    )


def test_label_and_field_selectors_filter_lists(api: Endpoint, ns: str) -> None:
    api.ok("POST", pods(ns), pod("a", labels={"app": "web", "tier": "fe"}, node="n1"), expect=201)
    api.ok("POST", pods(ns), pod("b", labels={"app": "db"}, node="n2"), expect=201)
    api.ok("POST", pods(ns), pod("c", labels={"app": "web"}), expect=201)
    cases = {
        "app=web": ["a", "c"],
        "app==web,tier=fe": ["a"],
        "app!=web": ["b"],
        "tier!=fe": ["b", "c"],  # != matches objects without the key
        "app in (db,cache)": ["b"],
        "app notin (db)": ["a", "c"],
        "tier": ["a"],
        "!tier": ["b", "c"],
    }
    for selector, expected in cases.items():
        listing = api.ok("GET", pods(ns) + query(labelSelector=selector))
        assert names(listing) == expected, selector
    for selector, expected in {
        "spec.nodeName=n1": ["a"],
        "spec.nodeName!=n1": ["b", "c"],
        "spec.nodeName=": ["c"],
        "metadata.name=b": ["b"],
    }.items():
        listing = api.ok("GET", pods(ns) + query(fieldSelector=selector))
        assert names(listing) == expected, selector
