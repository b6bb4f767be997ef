"""Subresources that write one field: ``pods/ephemeralcontainers`` and CSR ``approval``.

As kube-rs' ``replace_ephemeral_containers``/``patch_ephemeral_containers``/
``patch_approval`` (and ``kubectl debug``, ``kubectl certificate approve``) use them: a write
changes that field alone, a GET answers with the whole object, and their validation holds.
"""

from __future__ import annotations

from typing import Any

from .objects import pod, pods
from .wire import Endpoint, rv_of

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def _debugger(name: str, command: str = "sleep 1") -> dict[str, Any]:
    return {"name": name, "image": "busybox:stable", "command": ["sh", "-c", command]}


def test_ephemeral_containers_are_written_through_their_subresource_alone(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", pods(ns), pod("debugged", labels={"app": "x"}), expect=201)
    path = pods(ns, "debugged") + "/ephemeralcontainers"
    assert "ephemeralContainers" not in api.ok("GET", path)["spec"]
    # Everything but spec.ephemeralContainers is ignored: the label change does not land.
    body = {
        "metadata": {"name": "debugged", "labels": {"app": "changed"}},
        "spec": {"ephemeralContainers": [_debugger("one")], "restartPolicy": "Never"},
    }
    replaced = api.ok("PUT", path, body)
    assert replaced["kind"] == "Pod"
    assert [c["name"] for c in replaced["spec"]["ephemeralContainers"]] == ["one"]
    assert replaced["metadata"]["labels"] == {"app": "x"}
    assert replaced["spec"]["restartPolicy"] == "Always"
    # A strategic merge patch merges by name: the second one is added (where the patch
    # strategy puts new items, ahead of the stored ones).
    patch = {"spec": {"ephemeralContainers": [_debugger("two", "sleep 2")]}}
    patched = api.ok("PATCH", path, patch, content_type=STRATEGIC)
    assert [c["name"] for c in patched["spec"]["ephemeralContainers"]] == ["two", "one"]
    assert int(rv_of(patched)) > int(rv_of(replaced))
    assert api.ok("GET", path)["spec"] == api.ok("GET", pods(ns, "debugged"))["spec"]


def test_an_ephemeral_container_may_be_neither_removed_nor_changed_and_needs_a_fresh_name(
    api: Endpoint, ns: str
) -> None:
    api.ok("POST", pods(ns), pod("kept"), expect=201)
    path = pods(ns, "kept") + "/ephemeralcontainers"
    api.ok(
        "PATCH", path, {"spec": {"ephemeralContainers": [_debugger("one")]}}, content_type=STRATEGIC
    )
    removed = api.request("PATCH", path, {"spec": {"ephemeralContainers": []}}, content_type=MERGE)
    assert removed.status == 422, removed
    assert removed.json()["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": 'Forbidden: existing ephemeral containers "one" may not be removed',
            "field": "spec.ephemeralContainers",
        }
    ]
    changed = {"spec": {"ephemeralContainers": [_debugger("one", "sleep 9")]}}
    refused = api.request("PATCH", path, changed, content_type=STRATEGIC)
    assert refused.status == 422, refused
    assert refused.json()["details"]["causes"][0]["field"] == "spec.ephemeralContainers[0]"
    clash = {"spec": {"ephemeralContainers": [{"name": "main", "image": "busybox"}]}}
    duplicate = api.request("PATCH", path, clash, content_type=STRATEGIC)
    assert duplicate.status == 422, duplicate
    assert duplicate.json()["details"]["causes"][0]["reason"] == "FieldValueDuplicate"
    assert [c["name"] for c in api.ok("GET", path)["spec"]["ephemeralContainers"]] == ["one"]
    # Only pods have it; a POST to it is not a verb it serves.
    assert api.request("POST", path, {}).status == 405


def _csr(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
        },
    }


def test_approval_writes_the_conditions_alone_and_stamps_their_update_time(
    api: Endpoint,
) -> None:
    api.ok("POST", CSRS, _csr("approved-csr"), expect=201)
    try:
        condition = {"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}
        body = {"status": {"conditions": [condition]}, "spec": {"usages": ["server auth"]}}
        approved = api.ok("PATCH", f"{CSRS}/approved-csr/approval", body, content_type=MERGE)
        [stored] = approved["status"]["conditions"]
        assert stored["type"] == "Approved"
        assert stored["lastUpdateTime"]
        assert approved["spec"]["usages"] == ["client auth"]
        assert api.ok("GET", f"{CSRS}/approved-csr/approval")["status"]["conditions"] == [stored]
        # A plain update cannot approve: the conditions are the approval subresource's.
        plain = api.ok("GET", f"{CSRS}/approved-csr")
        plain["status"] = {}
        assert api.ok("PUT", f"{CSRS}/approved-csr", plain)["status"]["conditions"] == [stored]
    finally:
        api.ok("DELETE", f"{CSRS}/approved-csr")


def test_approval_conditions_are_validated(api: Endpoint) -> None:
    api.ok("POST", CSRS, _csr("checked-csr"), expect=201)
    try:
        both = [
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "True"},
        ]
        reply = api.request(
            "PUT",
            f"{CSRS}/checked-csr/approval",
            {"metadata": {"name": "checked-csr"}, "status": {"conditions": both}},
        )
        assert reply.status == 422, reply
        [cause] = reply.json()["details"]["causes"]
        assert cause["field"] == "status.conditions[1].type"
        assert "mutually exclusive" in cause["message"]
        false_approval = {"status": {"conditions": [{"type": "Approved", "status": "False"}]}}
        reply = api.request(
            "PATCH", f"{CSRS}/checked-csr/approval", false_approval, content_type=MERGE
        )
        assert reply.status == 422, reply
        assert reply.json()["details"]["causes"][0]["reason"] == "FieldValueNotSupported"
        # Any other condition type may be False or Unknown.
        custom = {"status": {"conditions": [{"type": "ApprovedFake", "status": "Unknown"}]}}
        api.ok("PATCH", f"{CSRS}/checked-csr/approval", custom, content_type=MERGE)
    finally:
        api.ok("DELETE", f"{CSRS}/checked-csr")


def test_discovery_lists_both_subresources_with_their_verbs(api: Endpoint) -> None:
    core = {r["name"]: r for r in api.ok("GET", "/api/v1")["resources"]}
    assert core["pods/ephemeralcontainers"]["verbs"] == ["get", "patch", "update"]
    assert core["pods/ephemeralcontainers"]["kind"] == "Pod"
    certificates = api.ok("GET", "/apis/certificates.k8s.io/v1")["resources"]
    named = {r["name"]: r for r in certificates}
    assert named["certificatesigningrequests/approval"]["verbs"] == ["get", "patch", "update"]
