"""A CustomResourceDefinition serves its resource while it exists (apiextensions-apiserver).

Created over the wire as an operator registers its CRD at start-up, then used with the verbs of
any resource; deleted, it takes its objects and its watches with it.
"""

from __future__ import annotations

from typing import Any

from .wire import Endpoint, query

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(*, scope: str = "Namespaced", status: bool = True) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wd"],
                "categories": ["all"],
            },
            "versions": [version],
        },
    }


def test_a_crd_serves_its_resource_until_it_is_deleted(api: Endpoint, ns: str) -> None:
    widgets = f"/apis/example.com/v1/namespaces/{ns}/widgets"
    assert api.request("GET", widgets).status == 404
    api.ok("POST", CRDS, crd(), expect=201)
    try:
        stored = api.ok("GET", f"{CRDS}/widgets.example.com")
        conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
        assert conditions == {"NamesAccepted": "True", "Established": "True"}
        assert stored["status"]["acceptedNames"]["shortNames"] == ["wd"]
        # Discovery names it, with its short name, category and status subresource.
        resources = api.ok("GET", "/apis/example.com/v1")["resources"]
        names = {r["name"]: r for r in resources}
        assert names["widgets"]["shortNames"] == ["wd"]
        assert names["widgets"]["categories"] == ["all"]
        assert "widgets/status" in names
        groups = [g["name"] for g in api.ok("GET", "/apis")["groups"]]
        assert "example.com" in groups

        created = api.ok(
            "POST",
            widgets,
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"size": 3},
            },
            expect=201,
        )
        assert created["kind"] == "Widget"
        listed = api.ok("GET", widgets)
        assert listed["kind"] == "WidgetList"
        assert [i["metadata"]["name"] for i in listed["items"]] == ["w"]
        status = api.ok(
            "PATCH",
            f"{widgets}/w/status",
            {"status": {"ready": True}},
            content_type="application/merge-patch+json",
        )
        assert status["status"] == {"ready": True}

        watch = api.watch(
            widgets
            + query(
                watch=1, resourceVersion=listed["metadata"]["resourceVersion"], timeoutSeconds=30
            )
        )
        try:
            api.ok("DELETE", f"{CRDS}/widgets.example.com")
            events = watch.read_events(2)  # the status patch, then the object's DELETED
            assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
            assert watch.next_event() is None  # the watch ends with the resource
        finally:
            watch.close()
    finally:
        api.request("DELETE", f"{CRDS}/widgets.example.com")
    assert api.request("GET", widgets).status == 404
    assert "example.com" not in [g["name"] for g in api.ok("GET", "/apis")["groups"]]


def test_a_cluster_scoped_crd_without_status_serves_no_status(api: Endpoint) -> None:
    api.ok("POST", CRDS, crd(scope="Cluster", status=False), expect=201)
    try:
        widgets = "/apis/example.com/v1/widgets"
        api.ok("POST", widgets, {"metadata": {"name": "c"}}, expect=201)
        assert api.request("GET", f"{widgets}/c/status").status == 404
        assert api.ok("GET", f"{widgets}/c")["metadata"]["name"] == "c"
    finally:
        api.request("DELETE", f"{CRDS}/widgets.example.com")
