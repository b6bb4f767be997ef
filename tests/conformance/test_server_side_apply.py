"""Server-side apply and field ownership (metadata.managedFields), over the wire.

PATCH with ``application/apply-patch+yaml`` and a ``fieldManager``: created when absent; the
manager's ``Apply`` entry lists its fields; another manager changing a field it does not own is a
409 naming the field and its owner unless ``force=true``; a manager that stops applying a field
removes it; ordinary writes that name a field manager are recorded as ``Update`` entries, so a
client-side apply followed by a server-side one with other values conflicts.
"""

from __future__ import annotations

import json
from typing import Any

from .objects import configmap, configmaps, deployment, deployments
from .wire import Endpoint, query

APPLY = "application/apply-patch+yaml"


def applied(data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    body = configmap("cm")
    body["data"] = data
    if labels:
        body["metadata"]["labels"] = labels
    return body


def owners(obj: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        e["manager"]: (e["operation"], e["fieldsV1"])
        for e in obj["metadata"].get("managedFields", [])
    }


def test_apply_creates_then_records_what_each_manager_owns(api: Endpoint, ns: str) -> None:
    path = configmaps(ns, "cm")
    created = api.request(
        "PATCH", path + query(fieldManager="alice"), applied({"a": "1"}), content_type=APPLY
    )
    assert created.status == 201, created
    assert owners(created.json()) == {"alice": ("Apply", {"f:data": {"f:a": {}}})}
    second = api.ok(
        "PATCH", path + query(fieldManager="bob"), applied({"b": "2"}), content_type=APPLY
    )
    assert second["data"] == {"a": "1", "b": "2"}
    assert owners(second)["bob"] == ("Apply", {"f:data": {"f:b": {}}})
    # alice stops applying "a" and applies "c": "a" goes, "c" comes, bob's "b" stays.
    third = api.ok(
        "PATCH", path + query(fieldManager="alice"), applied({"c": "3"}), content_type=APPLY
    )
    assert third["data"] == {"b": "2", "c": "3"}


def test_keys_applied_into_a_map_the_manager_applied_empty_before_are_kept(
    api: Endpoint, ns: str
) -> None:
    # lightkube's e2e test_apply: apply data {}, then apply data {key1: ...} (the empty map the
    # manager owned is the parent of what it applies now, not a field it stopped applying).
    path = configmaps(ns, "cm") + query(fieldManager="alice")
    api.request("PATCH", path, applied({"a": "1"}), content_type=APPLY)
    emptied = api.ok("PATCH", path, applied({}), content_type=APPLY)
    assert not emptied.get("data")
    assert owners(emptied)["alice"] == ("Apply", {"f:data": {}})
    refilled = api.ok("PATCH", path, applied({"b": "2"}), content_type=APPLY)
    assert refilled["data"] == {"b": "2"}
    assert owners(refilled)["alice"] == ("Apply", {"f:data": {"f:b": {}}})


def test_a_conflict_names_the_field_and_its_owner_and_force_takes_it_over(
    api: Endpoint, ns: str
) -> None:
    path = configmaps(ns, "cm")
    api.request(
        "PATCH", path + query(fieldManager="alice"), applied({"a": "1"}), content_type=APPLY
    )
    refused = api.request(
        "PATCH", path + query(fieldManager="bob"), applied({"a": "2"}), content_type=APPLY
    )
    assert refused.status == 409, refused
    status = refused.json()
    assert status["reason"] == "Conflict"
    assert (
        status["message"] == 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.a'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice" using v1',
            "field": ".data.a",
        }
    ]
    assert api.ok("GET", path)["data"] == {"a": "1"}
    # The same value is no conflict: both own it.
    api.ok("PATCH", path + query(fieldManager="bob"), applied({"a": "1"}), content_type=APPLY)
    forced = api.ok(
        "PATCH",
        path + query(fieldManager="carol", force="true"),
        applied({"a": "3"}),
        content_type=APPLY,
    )
    assert forced["data"] == {"a": "3"}
    held = owners(forced)
    assert held["carol"] == ("Apply", {"f:data": {"f:a": {}}})
    assert "alice" not in held
    assert "bob" not in held


def test_ordinary_writes_are_update_entries_that_server_side_apply_conflicts_with(
    api: Endpoint, ns: str
) -> None:
    path = configmaps(ns, "cm")
    api.ok(
        "POST",
        configmaps(ns) + query(fieldManager="kubectl-client-side-apply"),
        applied({"a": "1"}),
        expect=201,
    )
    got = api.ok("GET", path)
    assert owners(got) == {"kubectl-client-side-apply": ("Update", {"f:data": {"f:a": {}}})}
    refused = api.request(
        "PATCH", path + query(fieldManager="kubectl"), applied({"a": "2"}), content_type=APPLY
    )
    assert refused.status == 409
    assert 'conflict with "kubectl-client-side-apply"' in refused.json()["message"]


def test_apply_needs_a_field_manager_and_force_needs_apply(api: Endpoint, ns: str) -> None:
    path = configmaps(ns, "cm")
    refused = api.request("PATCH", path, applied({"a": "1"}), content_type=APPLY)
    assert refused.status == 422, refused
    assert refused.json()["details"]["causes"][0]["field"] == "fieldManager"
    api.ok("POST", configmaps(ns), applied({"a": "1"}), expect=201)
    forced = api.request(
        "PATCH",
        path + query(force="true"),
        {"data": {"a": "2"}},
        content_type="application/merge-patch+json",
    )
    assert forced.status == 422, forced
    # Writes that name no manager and send no User-Agent (http.client sends none) leave no
    # managedFields: kubesim serve names a manager after the User-Agent, as a cluster does.
    assert "managedFields" not in api.ok("GET", path)["metadata"]


def with_containers(*containers: tuple[str, str]) -> dict[str, Any]:
    body = deployment("web")
    body["spec"]["template"]["spec"]["containers"] = [
        {"name": name, "image": image} for name, image in containers
    ]
    return body


def containers_of(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["name"], c["image"]) for c in obj["spec"]["template"]["spec"]["containers"]]


def test_associative_lists_merge_item_by_item_and_each_manager_owns_its_items(
    api: Endpoint, ns: str
) -> None:
    # Containers are a list keyed by name: two managers can each own one container of the same
    # Deployment, and a manager that stops applying its container removes only that one.
    path = deployments(ns, "web")

    def apply(manager: str, body: dict[str, Any], **extra: str) -> Any:
        return api.request(
            "PATCH", path + query(fieldManager=manager, **extra), body, content_type=APPLY
        )

    assert apply("alice", with_containers(("main", "nginx:1"))).status == 201
    merged = apply("bob", with_containers(("sidecar", "envoy:1"))).json()
    assert containers_of(merged) == [("main", "nginx:1"), ("sidecar", "envoy:1")]
    bob = owners(merged)["bob"][1]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert bob == {'k:{"name":"sidecar"}': {"f:image": {}, "f:name": {}}}

    refused = apply("bob", with_containers(("main", "nginx:2")))
    assert refused.status == 409, refused
    assert refused.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "alice" using apps/v1: '
        '.spec.template.spec.containers[name="main"].image'
    )
    both = with_containers(("main", "nginx:2"), ("sidecar", "envoy:1"))
    forced = apply("bob", both, force="true").json()
    assert containers_of(forced) == [("main", "nginx:2"), ("sidecar", "envoy:1")]
    alice = owners(forced)["alice"][1]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert alice == {'k:{"name":"main"}': {"f:name": {}}}  # the image went to bob

    # bob stops applying the sidecar (and keeps the image of main it took over).
    dropped = apply("bob", with_containers(("main", "nginx:2"))).json()
    assert containers_of(dropped) == [("main", "nginx:2")]
    assert containers_of(api.ok("GET", path)) == [("main", "nginx:2")]


def with_ports(*ports: dict[str, Any]) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "dns"},
        "spec": {"selector": {"app": "dns"}, "ports": list(ports)},
    }
    return body


def test_ports_are_keyed_by_port_and_protocol_with_the_protocol_defaulted(
    api: Endpoint, ns: str
) -> None:
    # A Service's ports (and a container's) are a list keyed by port *and* protocol: DNS serves
    # 53/UDP and 53/TCP, two items two managers can own apart. A port applied without a protocol
    # is keyed by the default, TCP, so it is the same item as one that names it.
    path = f"/api/v1/namespaces/{ns}/services/dns"

    def apply(manager: str, body: dict[str, Any], **extra: str) -> Any:
        return api.request(
            "PATCH", path + query(fieldManager=manager, **extra), body, content_type=APPLY
        )

    created = apply("alice", with_ports({"name": "dns", "port": 53, "protocol": "UDP"}))
    assert created.status == 201, created
    merged = apply("bob", with_ports({"name": "dns-tcp", "port": 53})).json()
    assert [(p["port"], p["protocol"], p["name"]) for p in merged["spec"]["ports"]] == [
        (53, "UDP", "dns"),
        (53, "TCP", "dns-tcp"),
    ]
    bob = owners(merged)["bob"][1]["f:spec"]["f:ports"]
    assert bob == {'k:{"port":53,"protocol":"TCP"}': {"f:name": {}, "f:port": {}}}

    refused = apply("alice", with_ports({"name": "dns", "port": 53, "protocol": "TCP"}))
    assert refused.status == 409, refused
    assert refused.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "bob" using v1: '
        '.spec.ports[port=53,protocol="TCP"].name'
    )
    # bob names the default he relied on: the same item, still his, nothing removed.
    same = apply("bob", with_ports({"name": "dns-tcp", "port": 53, "protocol": "TCP"})).json()
    assert [(p["port"], p["protocol"]) for p in same["spec"]["ports"]] == [(53, "UDP"), (53, "TCP")]
    # ... and leaves it out again: the protocol field goes back to its default, the item stays.
    again = apply("bob", with_ports({"name": "dns-tcp", "port": 53})).json()
    assert [(p["port"], p.get("protocol", "TCP")) for p in again["spec"]["ports"]] == [
        (53, "UDP"),
        (53, "TCP"),
    ]


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _client_side_applied(api: Endpoint, ns: str, data: dict[str, str]) -> dict[str, Any]:
    """An object as `kubectl apply` (client-side) creates it: the annotation, its manager."""
    body = applied(data)
    body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(applied(data)) + "\n"}
    manager = query(fieldManager="kubectl-client-side-apply")
    created: dict[str, Any] = api.ok("POST", configmaps(ns) + manager, body, expect=201)
    return created


def test_kubectl_takes_over_the_fields_its_client_side_apply_last_applied(
    api: Endpoint, ns: str
) -> None:
    _client_side_applied(api, ns, {"a": "1"})
    path = configmaps(ns, "cm")
    # Another manager's apply conflicts, as before: the exemption is kubectl's alone.
    other = api.request(
        "PATCH", path + query(fieldManager="helm"), applied({"a": "2"}), content_type=APPLY
    )
    assert other.status == 409, other
    taken = api.ok(
        "PATCH", path + query(fieldManager="kubectl"), applied({"a": "2"}), content_type=APPLY
    )
    assert taken["data"] == {"a": "2"}
    assert owners(taken)["kubectl"] == ("Apply", {"f:data": {"f:a": {}}})
    # The annotation now holds what kubectl applied: the object as Go encodes a map.
    text = taken["metadata"]["annotations"][LAST_APPLIED]
    assert text.endswith("\n")
    assert json.loads(text) == applied({"a": "2"}) | {"metadata": {"name": "cm"}}
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) + "\n"


def test_fields_the_last_applied_configuration_does_not_name_still_conflict(
    api: Endpoint, ns: str
) -> None:
    _client_side_applied(api, ns, {"a": "1"})
    path = configmaps(ns, "cm")
    api.ok(
        "PATCH",
        path + query(fieldManager="editor"),
        {"data": {"b": "x"}},
        content_type="application/merge-patch+json",
    )
    refused = api.request(
        "PATCH",
        path + query(fieldManager="kubectl"),
        applied({"a": "2", "b": "y"}),
        content_type=APPLY,
    )
    assert refused.status == 409, refused
    assert [c["field"] for c in refused.json()["details"]["causes"]] == [".data.b"]


def test_a_client_may_rewrite_the_managed_fields_and_clear_them(api: Endpoint, ns: str) -> None:
    created = _client_side_applied(api, ns, {"a": "1", "legacy": "x"})
    path = configmaps(ns, "cm")
    [entry] = created["metadata"]["managedFields"]
    # What kubectl 1.33 sends before its first server-side apply of a client-side-applied
    # object: the same fields, owned by its server-side manager.
    moved = {**entry, "manager": "kubectl", "operation": "Apply"}
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [moved]}]
    rewritten = api.ok(
        "PATCH",
        path + query(fieldManager="kubectl"),
        patch,
        content_type="application/json-patch+json",
    )
    assert owners(rewritten) == {"kubectl": ("Apply", entry["fieldsV1"])}
    # Now an apply without "legacy" removes it: kubectl owns it and stopped applying it.
    reapplied = api.ok(
        "PATCH", path + query(fieldManager="kubectl"), applied({"a": "1"}), content_type=APPLY
    )
    assert reapplied["data"] == {"a": "1"}
    cleared = api.ok(
        "PATCH",
        path,
        {"metadata": {"managedFields": [{}]}},
        content_type="application/merge-patch+json",
    )
    assert "managedFields" not in cleared["metadata"], cleared["metadata"]["managedFields"]
