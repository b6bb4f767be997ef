"""Every stable built-in kind is served, from one table generated from the official client.

The table (kubesim/apiserver/builtin_kinds.py) is regenerated here from the installed client and
must match; then every kind is written, read, listed, watched and deleted through the server,
and shows in discovery, with the short names and categories kubectl relies on.
"""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.apiserver.builtin_kinds import (
    BUILTIN_KINDS,
    CLIENT_VERSION,
    RETURNS_DELETED_OBJECT,
    REVIEW_KINDS,
)
from kubesim.apiserver.encoding import loads
from kubesim.wire import discovery
from kubesim.wire.routes import Request, handle

kubernetes = pytest.importorskip("kubernetes")


def test_the_table_is_what_the_installed_client_describes() -> None:
    if kubernetes.__version__.split(".")[0] != CLIENT_VERSION.split(".")[0]:
        pytest.skip(
            f"the table comes from client {CLIENT_VERSION}; {kubernetes.__version__} is installed"
        )
    from tools.gen_builtin_kinds import read_client, read_reviews

    regenerated = [
        (
            r["group"],
            r["version"],
            r["kind"],
            r["plural"],
            r["namespaced"],
            r["verbs"],
            r["subresources"],
        )
        for r in read_client()
    ]
    assert regenerated == list(BUILTIN_KINDS), "run tools/gen_builtin_kinds.py"
    returning = {(r["group"], r["plural"]) for r in read_client() if r["delete_returns_object"]}
    assert returning == RETURNS_DELETED_OBJECT, "run tools/gen_builtin_kinds.py"
    assert read_reviews() == list(REVIEW_KINDS), "run tools/gen_builtin_kinds.py"
    assert ("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False) in REVIEW_KINDS
    # The kinds whose delete answers with the object in the official client's own e2e tests.
    assert {("", "pods"), ("", "services")} <= RETURNS_DELETED_OBJECT
    assert ("", "configmaps") not in RETURNS_DELETED_OBJECT
    kinds = {(g, k) for g, _, k, *_ in BUILTIN_KINDS}
    # What the users named: all of these are there.
    for wanted in [
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("", "ReplicationController"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("coordination.k8s.io", "Lease"),
        ("events.k8s.io", "Event"),
        ("", "PersistentVolumeClaim"),
        ("networking.k8s.io", "Ingress"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ]:
        assert wanted in kinds


def _request(server: APIServer, method: str, path: str, body: object = None) -> tuple[int, dict]:
    import json

    data = b"" if body is None else json.dumps(body).encode()
    response = handle(server, Request(method, path, "", {"Content-Type": "application/json"}, data))
    assert isinstance(response.body, bytes)
    return response.status, loads(response.body)


# What validation requires beyond a name: pods' containers; an APIService's group, version
# and priorities, and a name that is its version.group.
MINIMAL_SPECS = {
    "pods": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    "apiservices": {
        "spec": {
            "group": "kubesim.example.com",
            "version": "v1",
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
        }
    },
}
NAMES = {"apiservices": "v1.kubesim.example.com"}


def test_every_served_kind_is_created_read_listed_watched_and_deleted() -> None:
    server = APIServer(seed=0)
    served = [r for r in server.resources if "create" in r.verbs and not r.review]
    assert len(served) >= 60
    for resource in served:
        base = resource.path_prefix()
        collection = (
            f"{base}/namespaces/default/{resource.plural}"
            if resource.namespaced
            else f"{base}/{resource.plural}"
        )
        name = NAMES.get(resource.plural, "kubesim-test")
        start = server.resource_version
        stream = server.watch(
            resource.stored_as or resource,  # a version served by conversion keeps no objects
            namespace="default" if resource.namespaced else None,
            resource_version=str(start),
        )
        body = {"metadata": {"name": name}, **MINIMAL_SPECS.get(resource.plural, {})}
        status, created = _request(server, "POST", collection, body)
        assert status == 201, (resource.plural, created)
        assert created["kind"] == resource.kind
        assert created["apiVersion"] == resource.api_version
        status, got = _request(server, "GET", f"{collection}/{name}")
        assert (status, got["metadata"]["uid"]) == (200, created["metadata"]["uid"])
        status, listed = _request(server, "GET", collection)
        assert status == 200
        assert listed["kind"] == f"{resource.kind}List"
        assert name in [item["metadata"]["name"] for item in listed["items"]]
        status, _ = _request(server, "DELETE", f"{collection}/{name}")
        assert status == 200, resource.plural
        if resource.plural == "namespaces":
            server.advance(2)  # the namespace controller finishes the delete
        chunk = stream.poll() or b""
        stream.close()
        lines = [loads(line) for line in chunk.splitlines() if line]
        # A namespace is Terminating (MODIFIED) until its controller is done.
        expected = (
            ["ADDED", "MODIFIED", "DELETED"]
            if resource.plural == "namespaces"
            else [
                "ADDED",
                "DELETED",
            ]
        )
        assert [e["type"] for e in lines] == expected, (resource.plural, lines)


def test_discovery_lists_every_group_and_the_all_category() -> None:
    server = APIServer(seed=0)
    groups = {g["name"] for g in discovery.api_group_list(server.resources)["groups"]}
    assert {g for g, *_ in BUILTIN_KINDS if g} <= groups
    all_category = {r.plural for r in server.resources if "all" in r.categories}
    assert {
        "pods",
        "services",
        "deployments",
        "replicasets",
        "statefulsets",
        "daemonsets",
        "replicationcontrollers",
        "horizontalpodautoscalers",
        "jobs",
        "cronjobs",
    } <= all_category
    hpa = server.resource("horizontalpodautoscalers")
    assert hpa.version == "v2"  # one version per resource: the newest stable one
    assert server.resource("customresourcedefinitions").short_names == ("crd", "crds")


def test_a_service_gets_its_defaults_and_a_deterministic_cluster_ip() -> None:
    first = APIServer(seed=0)
    second = APIServer(seed=0)
    for server in (first, second):
        server.create(
            "services",
            {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}},
            namespace="default",
        )
        server.create("services", {"metadata": {"name": "b"}}, namespace="default")
    a = first.get("services", "a", namespace="default")
    assert a["status"] == {"loadBalancer": {}}
    assert a["spec"]["type"] == "ClusterIP"
    assert a["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    ips = [first.get("services", n, namespace="default")["spec"]["clusterIP"] for n in "ab"]
    assert len(set(ips)) == 2
    assert ips == [
        second.get("services", n, namespace="default")["spec"]["clusterIP"] for n in "ab"
    ]
    job = first.create(
        "jobs", {"metadata": {"name": "j"}, "spec": {"template": {}}}, namespace="default"
    )
    assert (job["spec"]["backoffLimit"], job["spec"]["completions"]) == (6, 1)
    assert job["metadata"]["generation"] == 1


def test_defaults_apply_to_every_write_and_status_only_to_creates() -> None:
    # SetDefaults_* run whenever a body is decoded: an update or a patch that adds a port or
    # drops a strategy gets them too. What a create alone does (status, the cluster IP) is not
    # redone by an update.
    server = APIServer(seed=0)
    service = server.create(
        "services",
        {"metadata": {"name": "dns"}, "spec": {"ports": [{"port": 53}]}},
        namespace="default",
    )
    patched = server.patch(
        "services",
        "dns",
        {"spec": {"ports": [{"port": 53}, {"port": 54, "protocol": "UDP"}]}},
        namespace="default",
    )
    assert patched["spec"]["ports"] == [
        {"port": 53, "protocol": "TCP", "targetPort": 53},
        {"port": 54, "protocol": "UDP", "targetPort": 54},
    ]
    assert patched["spec"]["clusterIP"] == service["spec"]["clusterIP"]
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"selector": {}, "template": {}, "strategy": {"type": "Recreate"}},
    }
    created = server.create("deployments", deployment, namespace="default")
    assert created["spec"]["replicas"] == 1
    assert created["status"] == {}
    created["spec"].pop("strategy")
    created["spec"].pop("replicas")
    updated = server.update("deployments", created, namespace="default")
    assert updated["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert updated["spec"]["replicas"] == 1
    # The defaults wrote into the server's copy, never into what the caller sent.
    assert "strategy" not in created["spec"]


def test_the_versions_served_by_conversion_are_those_converted() -> None:
    from kubesim.apiserver.conversion import CONVERSIONS
    from kubesim.apiserver.resources import CONVERTED_VERSIONS

    assert set(CONVERSIONS) == CONVERTED_VERSIONS
