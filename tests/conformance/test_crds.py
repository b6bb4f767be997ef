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


def versioned_crd(*versions: dict[str, Any]) -> dict[str, Any]:
    body = crd(status=False)
    schema = body["spec"]["versions"][0]["schema"]
    body["spec"]["versions"] = [
        {"served": True, "storage": False, "schema": schema, **v} for v in versions
    ]
    return body


def test_every_served_version_is_served_and_objects_differ_in_api_version_alone(
    api: Endpoint, ns: str
) -> None:
    body = versioned_crd(
        {"name": "v1", "storage": True},
        {"name": "v1beta1", "deprecated": True},
        {"name": "v1alpha1", "deprecated": True, "deprecationWarning": "use example.com/v1"},
    )
    api.ok("POST", CRDS, body, expect=201)
    try:
        paths = {
            v: f"/apis/example.com/{v}/namespaces/{ns}/widgets"
            for v in ("v1", "v1beta1", "v1alpha1", "v2")
        }
        widget = {
            "apiVersion": "example.com/v1beta1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 3},
        }
        created = api.request("POST", paths["v1beta1"], widget)
        assert created.status == 201
        # A deprecated version warns on every answer: its own text, or the default one.
        assert created.headers["warning"] == '299 - "example.com/v1beta1 Widget is deprecated"'
        assert created.json()["apiVersion"] == "example.com/v1beta1"
        stored = api.get(f"{paths['v1']}/w")
        assert "warning" not in stored.headers
        assert stored.json() == {**created.json(), "apiVersion": "example.com/v1"}
        listed = api.get(paths["v1alpha1"])
        assert listed.headers["warning"] == '299 - "use example.com/v1"'
        assert listed.json()["apiVersion"] == "example.com/v1alpha1"
        assert [i["apiVersion"] for i in listed.json()["items"]] == ["example.com/v1alpha1"]
        missing = api.get(f"{paths['v1beta1']}/nope")
        assert (missing.status, missing.headers["warning"]) == (404, created.headers["warning"])
        # Discovery: the group prefers its highest version, whichever version stores.
        group = api.ok("GET", "/apis/example.com")
        assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1", "v1alpha1"]
        assert group["preferredVersion"]["version"] == "v1"
        # A watch on one version, a write through another.
        watch = api.watch(
            paths["v1alpha1"]
            + query(
                watch=1,
                resourceVersion=listed.json()["metadata"]["resourceVersion"],
                timeoutSeconds=30,
            )
        )
        try:
            assert watch.headers["warning"] == '299 - "use example.com/v1"'
            api.ok(
                "PATCH",
                f"{paths['v1']}/w",
                {"spec": {"size": 4}},
                content_type="application/merge-patch+json",
            )
            event = watch.read_events(1)[0]
            assert (event["type"], event["object"]["apiVersion"]) == (
                "MODIFIED",
                "example.com/v1alpha1",
            )
            assert event["object"]["spec"] == {"size": 4}
        finally:
            watch.close()

        # An update that serves v2 and stops serving v1alpha1 takes effect at once.
        current = api.ok("GET", f"{CRDS}/widgets.example.com")
        current["spec"]["versions"][2]["served"] = False
        current["spec"]["versions"].append(
            {**current["spec"]["versions"][0], "name": "v2", "storage": False}
        )
        api.ok("PUT", f"{CRDS}/widgets.example.com", current)
        assert api.ok("GET", f"{paths['v2']}/w")["apiVersion"] == "example.com/v2"
        assert api.get(f"{paths['v1alpha1']}/w").status == 404
        assert api.ok("GET", "/apis/example.com")["preferredVersion"]["version"] == "v2"
    finally:
        api.request("DELETE", f"{CRDS}/widgets.example.com")
    for path in paths.values():
        assert api.get(path).status == 404


def test_deprecated_built_in_versions_warn(api: Endpoint, ns: str) -> None:
    endpoints = api.get(f"/api/v1/namespaces/{ns}/endpoints")
    assert endpoints.status == 200
    assert endpoints.headers["warning"] == (
        '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'
    )
    assert (
        "warning"
        not in api.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices").headers
    )
    assert api.get("/api/v1/componentstatuses").headers["warning"] == (
        '299 - "v1 ComponentStatus is deprecated in v1.19+"'
    )


def schema_crd() -> dict[str, Any]:
    body = crd()
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "string", "enum": ["small", "large"]},
                    "replicas": {"type": "integer", "minimum": 1, "default": 1},
                },
            }
        },
    }
    return body


def test_a_custom_resource_is_pruned_defaulted_and_validated_by_its_schema(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", CRDS, schema_crd(), expect=201)
    widgets = f"/apis/example.com/v1/namespaces/{ns}/widgets"

    def body(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        meta = {"name": name, "unknownMeta": 1}
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": spec}

    try:
        # Warn (the default): stored without the unknown fields, each named in a Warning.
        reply = api.request("POST", widgets, body("w", {"size": "small", "color": "red"}))
        assert reply.status == 201, reply
        assert reply.json()["spec"] == {"size": "small", "replicas": 1}
        assert "unknownMeta" not in reply.json()["metadata"]
        assert reply.headers["warning"] == (
            '299 - "unknown field \\"metadata.unknownMeta\\"", '
            '299 - "unknown field \\"spec.color\\""'
        )
        # Strict: refused, as the decoder refuses it.
        strict = api.request(
            "POST", widgets + query(fieldValidation="Strict"), body("s", {"size": "small", "x": 1})
        )
        assert strict.status == 400, strict
        assert strict.json()["message"] == (
            'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
            'unknown field "metadata.unknownMeta", unknown field "spec.x"'
        )
        # Invalid: 422 with the schema's causes.
        invalid = api.request("POST", widgets, body("i", {"replicas": 0}))
        assert invalid.status == 422, invalid
        status = invalid.json()
        assert status["reason"] == "Invalid"
        assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [
            ("spec.replicas", "FieldValueInvalid"),
            ("spec.size", "FieldValueRequired"),
        ]
        assert [i["metadata"]["name"] for i in api.ok("GET", widgets)["items"]] == ["w"]
    finally:
        api.request("DELETE", f"{CRDS}/widgets.example.com")
