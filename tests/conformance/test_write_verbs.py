"""Write verbs and deletion lifecycles as kube-apiserver has them, over the real HTTP wire.

- ``deletecollection`` with label and field selectors: one ``DELETED`` per object, each at its
  own resourceVersion (registry/generic/registry/store.go DeleteCollection deletes one by one),
  answered with the list of what was deleted; finalizers honoured.
- ``dryRun=All`` on every write: validated like the write, answered like it, not stored, no
  event, no resourceVersion spent; any other value is refused (apimachinery ValidateDryRun).
- PUT with resourceVersion "0" or none is unconditional (store.go Update).
- ``/status`` exists only for kinds with a status subresource.
- Finalizers: a held delete marks the object and bumps its generation (rest.BeforeDelete); no
  finalizer may be added while it is deleted; removing the last one deletes the object, and
  ``DELETED`` carries the last state that was stored (store.go deleteWithoutFinalizers).
- Deletion propagation (with the garbage collector): ``Orphan`` leaves the owner's dependents
  without their reference to it, ``Foreground`` keeps the owner until they are gone; bad
  DeleteOptions are refused as ``ValidateDeleteOptions`` refuses them.
- Namespaces: ``Terminating`` on delete, new content refused (403), everything inside deleted by
  the namespace controller, then the namespace; ``default``, ``kube-system`` and ``kube-public``
  cannot be deleted (the NamespaceLifecycle admission plugin).
"""

from __future__ import annotations

from typing import Any

from .conftest import serve
from .objects import configmap, configmaps, deployment, deployments, pod, pods
from .wire import Endpoint, query, rv_of

MERGE = "application/merge-patch+json"


def _names(listing: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


def test_deletecollection_deletes_what_the_selectors_select_one_event_each(
    api: Endpoint, ns: str
) -> None:
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        body = pod(name)
        body["metadata"]["labels"] = {"tier": tier}
        api.ok("POST", pods(ns), body, expect=201)
    start = api.current_rv()
    watch = api.watch(pods(ns) + query(watch=1, resourceVersion=start, timeoutSeconds=30))
    try:
        deleted = api.ok("DELETE", pods(ns) + query(labelSelector="tier=web"))
        events = watch.read_events(2)
    finally:
        watch.close()
    assert deleted["kind"] == "PodList"
    assert _names(deleted) == ["a", "b"]
    assert _names(api.ok("GET", pods(ns))) == ["c"]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"),
        ("DELETED", "b"),
    ]
    rvs = [int(rv_of(e["object"])) for e in events]
    assert rvs[0] < rvs[1], "each delete is a write of its own"
    # A field selector selects too; an unknown field is refused as on a list.
    api.ok("DELETE", pods(ns) + query(fieldSelector="metadata.name=c"))
    assert _names(api.ok("GET", pods(ns))) == []
    refused = api.request("DELETE", pods(ns) + query(fieldSelector="spec.nope=x"))
    assert refused.status == 400, refused


def test_deletecollection_marks_what_finalizers_hold(api: Endpoint, ns: str) -> None:
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.ok("POST", configmaps(ns), held, expect=201)
    api.ok("POST", configmaps(ns), configmap("free"), expect=201)
    api.ok("DELETE", configmaps(ns))
    left = api.ok("GET", configmaps(ns))
    assert _names(left) == ["held"]
    assert left["items"][0]["metadata"]["deletionTimestamp"]


def test_namespaces_cannot_be_deleted_as_a_collection(api: Endpoint) -> None:
    refused = api.request("DELETE", "/api/v1/namespaces")
    assert refused.status == 405, refused
    assert refused.json()["reason"] == "MethodNotAllowed"


def test_dry_run_writes_answer_like_writes_and_store_nothing(api: Endpoint, ns: str) -> None:
    before = api.current_rv()
    dry = query(dryRun="All", fieldManager="tester")
    created = api.ok("POST", pods(ns) + dry, pod("real"), expect=201)
    assert created["metadata"]["uid"]
    assert created["metadata"]["creationTimestamp"]
    # The dry-run storage answers the object as it would have been stored, without etcd's
    # stamp: no resourceVersion (Go leaves the empty string out).
    assert "resourceVersion" not in created["metadata"]
    assert api.request("GET", pods(ns, "real")).status == 404
    assert api.current_rv() == before

    real = api.ok("POST", pods(ns) + query(fieldManager="tester"), pod("real"), expect=201)
    after_create = api.current_rv()
    # The handler runs the field manager before storage, dry run or not.
    # (Not compared whole: each create draws its own service account token volume name.)
    [dry_entry] = created["metadata"]["managedFields"]
    [real_entry] = real["metadata"]["managedFields"]
    for field in ("manager", "operation", "apiVersion", "fieldsType"):
        assert dry_entry[field] == real_entry[field], field
    assert dry_entry["fieldsV1"].keys() == real_entry["fieldsV1"].keys() == {"f:spec"}
    patched = api.ok(
        "PATCH",
        pods(ns, "real") + query(dryRun="All"),
        {"metadata": {"labels": {"dry": "yes"}}},
        content_type=MERGE,
    )
    assert patched["metadata"]["labels"]["dry"] == "yes"
    assert patched["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]
    put = dict(real, metadata={**real["metadata"], "labels": {"put": "dry"}})
    assert api.ok("PUT", pods(ns, "real") + query(dryRun="All"), put)["metadata"]["labels"] == {
        "put": "dry"
    }
    gone = api.ok("DELETE", pods(ns, "real") + query(dryRun="All"))
    assert gone["metadata"]["name"] == "real"
    api.ok("DELETE", pods(ns) + query(dryRun="All"))  # a dry-run deletecollection
    stored = api.ok("GET", pods(ns, "real"))
    assert stored == real
    assert api.current_rv() == after_create

    # Validation runs as for a real write: an invalid object is refused the same way.
    invalid = pod("Bad_Name")
    dry = api.request("POST", pods(ns) + query(dryRun="All"), invalid)
    wet = api.request("POST", pods(ns), invalid)
    assert dry.status == wet.status == 422
    assert dry.json()["message"] == wet.json()["message"]


def test_an_unknown_dry_run_value_is_refused(api: Endpoint, ns: str) -> None:
    refused = api.request("POST", pods(ns) + query(dryRun="Some"), pod("p"))
    assert refused.status == 422, refused
    status = refused.json()
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "CreateOptions"
    assert status["details"]["causes"][0]["field"] == "dryRun[0]"
    assert 'Unsupported value: "Some": supported values: "All"' in status["message"]
    assert api.request("GET", pods(ns, "p")).status == 404


def test_a_put_with_resource_version_zero_or_none_is_unconditional(api: Endpoint, ns: str) -> None:
    created = api.ok("POST", configmaps(ns), configmap("cm"), expect=201)
    api.ok("PATCH", configmaps(ns, "cm"), {"data": {"k": "moved"}}, content_type=MERGE)
    for rv in ("0", None):
        meta = {"name": "cm", "namespace": ns}
        if rv is not None:
            meta["resourceVersion"] = rv
        replaced = api.ok("PUT", configmaps(ns, "cm"), {"metadata": meta, "data": {"k": str(rv)}})
        assert replaced["data"] == {"k": str(rv)}
    stale = {"metadata": {**created["metadata"]}, "data": {"k": "stale"}}
    assert api.request("PUT", configmaps(ns, "cm"), stale).status == 409


def test_status_is_served_only_for_kinds_that_have_it(api: Endpoint, ns: str) -> None:
    api.ok("POST", configmaps(ns), configmap("cm"), expect=201)
    api.ok("POST", deployments(ns), deployment("d"), expect=201)
    missing = api.request("GET", configmaps(ns, "cm") + "/status")
    assert missing.status == 404, missing
    assert missing.json()["reason"] == "NotFound"
    assert api.request("GET", deployments(ns, "d") + "/status").status == 200


def test_finalizers_mark_bump_generation_refuse_additions_and_delete_with_the_stored_state(
    api: Endpoint, ns: str
) -> None:
    body = deployment("d")
    body["metadata"]["finalizers"] = ["example.com/a"]
    created = api.ok("POST", deployments(ns), body, expect=201)
    assert created["metadata"]["generation"] == 1
    marked = api.ok("DELETE", deployments(ns, "d"))
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["generation"] == 2
    again = api.ok("DELETE", deployments(ns, "d"))  # already terminating: nothing changes
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]

    add = api.request(
        "PATCH",
        deployments(ns, "d"),
        {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}},
        content_type=MERGE,
    )
    assert add.status == 422, add
    cause = add.json()["details"]["causes"][0]
    assert cause["field"] == "metadata.finalizers"
    assert "no new finalizers can be added if the object is being deleted" in cause["message"]

    since = rv_of(marked)
    watch = api.watch(deployments(ns) + query(watch=1, resourceVersion=since, timeoutSeconds=30))
    try:
        api.ok(
            "PATCH", deployments(ns, "d"), {"metadata": {"finalizers": None}}, content_type=MERGE
        )
        (event,) = watch.read_events(1)
    finally:
        watch.close()
    assert event["type"] == "DELETED"
    # The last state that was stored, finalizer included, at the deletion's resourceVersion.
    assert event["object"]["metadata"]["finalizers"] == ["example.com/a"]
    assert int(rv_of(event["object"])) > int(rv_of(marked))
    assert api.request("GET", deployments(ns, "d")).status == 404


def test_a_deleted_namespace_terminates_refuses_content_then_goes_with_everything_in_it(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", pods(ns), pod("inside"), expect=201)
    deleting = api.ok("DELETE", f"/api/v1/namespaces/{ns}")
    assert deleting["status"]["phase"] == "Terminating"
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["spec"]["finalizers"] == ["kubernetes"]
    refused = api.request("POST", pods(ns), pod("late"))
    assert refused.status == 403, refused
    assert refused.json()["message"] == (
        f'pods "late" is forbidden: unable to create new content in namespace {ns} because it '
        "is being terminated"
    )
    api.advance(2)  # the namespace controller's pass
    assert api.request("GET", pods(ns, "inside")).status == 404
    assert api.request("GET", f"/api/v1/namespaces/{ns}").status == 404


def test_a_namespace_waits_for_what_finalizers_hold_inside_it(api: Endpoint, ns: str) -> None:
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.ok("POST", configmaps(ns), held, expect=201)
    api.ok("DELETE", f"/api/v1/namespaces/{ns}")
    api.advance(2)
    assert api.ok("GET", f"/api/v1/namespaces/{ns}")["status"]["phase"] == "Terminating"
    assert api.ok("GET", configmaps(ns, "held"))["metadata"]["deletionTimestamp"]
    api.ok("PATCH", configmaps(ns, "held"), {"metadata": {"finalizers": None}}, content_type=MERGE)
    api.advance(6)  # the controller's next pass
    assert api.request("GET", f"/api/v1/namespaces/{ns}").status == 404


def test_the_immortal_namespaces_cannot_be_deleted(api: Endpoint) -> None:
    for name in ("default", "kube-system", "kube-public"):
        refused = api.request("DELETE", f"/api/v1/namespaces/{name}")
        assert refused.status == 403, refused
        assert refused.json()["message"] == (
            f'namespaces "{name}" is forbidden: this namespace may not be deleted'
        )


def test_a_new_namespace_is_active_held_by_its_finalizer_and_labelled(api: Endpoint) -> None:
    created = api.ok(
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": "labelled-ns"}, "spec": {"finalizers": []}},
        expect=201,
    )
    assert created["spec"]["finalizers"] == ["kubernetes"]
    assert created["status"] == {"phase": "Active"}
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "labelled-ns"}


def test_a_watch_list_from_a_resource_version_the_cache_has_not_reached_is_refused(
    api: Endpoint, ns: str
) -> None:
    ahead = api.current_rv() + 1000
    reply = api.get(
        configmaps(ns)
        + query(
            watch=1,
            sendInitialEvents="true",
            resourceVersionMatch="NotOlderThan",
            resourceVersion=ahead,
            allowWatchBookmarks="true",
        )
    )
    assert reply.status == 504, reply
    status = reply.json()
    assert status["reason"] == "Timeout"
    assert status["message"].startswith(f"Timeout: Too large resource version: {ahead}, current: ")
    assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert status["details"]["retryAfterSeconds"] == 1


def test_a_dry_run_scale_answers_the_new_scale_and_stores_nothing(api: Endpoint, ns: str) -> None:
    api.ok("POST", deployments(ns), deployment("web", replicas=3), expect=201)
    scale = deployments(ns, "web") + "/scale"
    body = {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "web"}}
    answer = api.ok("PUT", scale + query(dryRun="All"), {**body, "spec": {"replicas": 2}})
    assert answer["spec"]["replicas"] == 2
    patched = api.ok(
        "PATCH",
        scale + query(dryRun="All"),
        {"spec": {"replicas": 5}},
        content_type="application/merge-patch+json",
    )
    assert patched["spec"]["replicas"] == 5
    assert api.ok("GET", deployments(ns, "web"))["spec"]["replicas"] == 3
    refused = api.request("PUT", scale + query(dryRun="Some"), {**body, "spec": {"replicas": 2}})
    assert refused.status == 422


def test_apps_workloads_need_a_selector_that_selects_their_template(api: Endpoint, ns: str) -> None:
    stray = deployment("stray")
    stray["spec"]["selector"] = {"matchLabels": {"name": "invalid"}}
    status = api.request("POST", deployments(ns), stray).json()
    assert status["code"] == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: map[string]string{"app":"stray"}: '
            "`selector` does not match template `labels`",
            "field": "spec.template.metadata.labels",
        }
    ]
    bare = deployment("bare")
    del bare["spec"]["selector"]
    status = api.request("POST", deployments(ns), bare).json()
    assert status["message"] == 'Deployment.apps "bare" is invalid: spec.selector: Required value'
    expressions = deployment("by-expression")
    expressions["spec"]["selector"] = {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["by-expression"]}]
    }
    assert api.request("POST", deployments(ns), expressions).status == 201


def test_propagation_policies_orphan_or_wait_for_dependents_and_bad_ones_are_refused() -> None:
    with serve(controllers=True) as api:
        _propagation_policies(api, "default")


def _propagation_policies(api: Endpoint, ns: str) -> None:
    replica_sets = f"/apis/apps/v1/namespaces/{ns}/replicasets"
    api.ok("POST", deployments(ns), deployment("kept", replicas=0), expect=201)
    (rs,) = api.ok("GET", replica_sets)["items"]
    # kubectl delete --cascade=orphan: the query's policy; the answer is the marked owner.
    marked = api.ok("DELETE", deployments(ns, "kept") + query(propagationPolicy="Orphan"))
    assert marked["metadata"]["finalizers"] == ["orphan"]
    assert api.request("GET", deployments(ns, "kept")).status == 404
    (orphaned,) = api.ok("GET", replica_sets)["items"]
    assert orphaned["metadata"]["uid"] == rs["metadata"]["uid"]
    assert "ownerReferences" not in orphaned["metadata"]
    # Foreground, in the body: the owner waits for the ReplicaSet (no pods: it goes at once).
    api.ok("POST", deployments(ns), deployment("waited", replicas=0), expect=201)
    api.ok("DELETE", deployments(ns, "waited"), {"propagationPolicy": "Foreground"})
    assert api.request("GET", deployments(ns, "waited")).status == 404
    assert [r["metadata"]["uid"] for r in api.ok("GET", replica_sets)["items"]] == [
        rs["metadata"]["uid"]
    ]
    # ValidateDeleteOptions, on DeleteOptions in meta.k8s.io.
    api.ok("POST", deployments(ns), deployment("bad", replicas=0), expect=201)
    for body, message in [
        (
            {"propagationPolicy": "Sideways"},
            'propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", '
            '"Background", "Orphan", "nil"',
        ),
        (
            {"propagationPolicy": "Orphan", "orphanDependents": True},
            'propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation '
            "cannot be both set",
        ),
    ]:
        refused = api.request("DELETE", deployments(ns, "bad"), body)
        assert refused.status == 422, refused
        status = refused.json()
        assert status["details"] == {
            "group": "meta.k8s.io",
            "kind": "DeleteOptions",
            "causes": status["details"]["causes"],
        }
        assert status["message"] == f'DeleteOptions.meta.k8s.io "" is invalid: {message}'
    assert api.request("GET", deployments(ns, "bad")).status == 200
