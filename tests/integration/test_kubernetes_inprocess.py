"""The official ``kubernetes`` client runs unchanged against kubesim, in-process (no sockets).

Each test here reads and writes from one thread, so its server autojumps virtual time: a watch
with ``timeout_seconds=60`` ends at once, at virtual time 60. Reads racing writes from other
threads, on the default (live) server, are in test_inprocess_live.py.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import kubernetes.config
import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

import kubesim
from kubesim import APIServer
from kubesim.apiserver.server import AutojumpWait
from kubesim.workload import make_pod


@pytest.fixture
def server() -> APIServer:
    return APIServer(seed=1, wait_policy=AutojumpWait())


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the in-process transport opened a socket")

    monkeypatch.setattr(socket.socket, "__init__", refuse)


@pytest.fixture
def core(server: APIServer, no_sockets: None) -> client.CoreV1Api:
    return client.CoreV1Api(kubesim.kubernetes_client(server))


def test_list_create_patch_and_delete_go_through_the_client_unchanged(
    core: client.CoreV1Api,
) -> None:
    created = core.create_namespaced_pod("default", make_pod("web-1", "default"))
    assert created.metadata.uid
    assert created.metadata.resource_version
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["web-1"]
    patched = core.patch_namespaced_pod("web-1", "default", {"metadata": {"labels": {"v": "2"}}})
    assert patched.metadata.labels["v"] == "2"
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    core.delete_namespaced_pod("web-1", "default")
    assert core.list_pod_for_all_namespaces().items == []


def test_errors_reach_the_client_as_api_exceptions_with_the_status_body(
    core: client.CoreV1Api,
) -> None:
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("nope", "default")
    assert missing.value.status == 404
    assert '"reason":"NotFound"' in missing.value.body
    core.create_namespaced_pod("default", make_pod("dup", "default"))
    with pytest.raises(ApiException) as exists:
        core.create_namespaced_pod("default", make_pod("dup", "default"))
    assert exists.value.status == 409
    assert 'pods \\"dup\\" already exists' in exists.value.body


def test_watch_stream_sees_added_modified_deleted_in_order(
    server: APIServer, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", make_pod("a", "default"))
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("a", "default")
    events = [
        (e["type"], e["object"].metadata.name, e["object"].metadata.resource_version)
        for e in watch.Watch().stream(
            core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=60
        )
    ]
    assert [(t, n) for t, n, _ in events] == [("MODIFIED", "a"), ("DELETED", "a")]
    rvs = [int(rv) for _, _, rv in events]
    assert rvs == sorted(rvs)
    assert rvs[0] > int(start)
    # The watch ended at its timeout, in virtual time: no wall-clock wait happened.
    assert server.clock.now() == 60


def test_a_raw_watch_without_rv_replays_every_pod_as_added(
    server: APIServer, core: client.CoreV1Api
) -> None:
    for name in ("b", "a", "c"):
        server.create("pods", make_pod(name, "default"))
    response = core.list_namespaced_pod(
        "default", watch=True, _preload_content=False, timeout_seconds=5
    )
    lines = list(watch.watch.iter_resp_lines(response))
    names = [line.split('"name":"')[1].split('"')[0] for line in lines]
    assert names == ["a", "b", "c"]  # key order, not creation order
    assert all(line.startswith('{"type":"ADDED"') for line in lines)


def test_an_unread_list_answer_decodes_with_json_as_urllib3s_does(
    server: APIServer, core: client.CoreV1Api
) -> None:
    server.create("pods", make_pod("a", "default"))
    listed = core.list_namespaced_pod("default", _preload_content=False).json()
    assert [pod["metadata"]["name"] for pod in listed["items"]] == ["a"]
    assert listed["kind"] == "PodList"


def test_an_abrupt_drop_surfaces_as_a_urllib3_protocol_error(
    server: APIServer, core: client.CoreV1Api
) -> None:
    server.create("pods", make_pod("a", "default"))
    response = core.list_namespaced_pod("default", watch=True, _preload_content=False)
    chunks: Iterator[bytes] = response.stream()
    assert b'"ADDED"' in next(chunks)
    server.drop_watches()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(chunks)


def test_a_410_error_event_reaches_the_watch_as_api_exception(
    server: APIServer, core: client.CoreV1Api
) -> None:
    server.create("pods", make_pod("a", "default"))
    old = core.list_namespaced_pod("default").metadata.resource_version
    server.create("pods", make_pod("b", "default"))
    server.compact()
    with pytest.raises(ApiException) as gone:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "default", resource_version=old, timeout_seconds=30
            )
        )
    assert gone.value.status == 410
    assert f"too old resource version: {old}" in str(gone.value.reason)


def test_a_request_timeout_given_as_one_number_is_the_watchs_read_timeout(
    server: APIServer, core: client.CoreV1Api
) -> None:
    # The client turns _request_timeout=30 into urllib3.Timeout(total=30), whose read_timeout
    # raises until a connection starts its timer (Airflow's job watcher passes 30).
    with pytest.raises(urllib3.exceptions.ReadTimeoutError, match="read timeout=30"):
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "default", timeout_seconds=60, _request_timeout=30
            )
        )
    assert server.clock.now() == 30


def test_patch_kubernetes_routes_clients_built_without_arguments(
    server: APIServer, no_sockets: None
) -> None:
    server.create("pods", make_pod("a", "default"))
    with kubesim.patch_kubernetes(server):
        assert [
            p.metadata.name for p in client.CoreV1Api().list_pod_for_all_namespaces().items
        ] == ["a"]
        other = client.ApiClient()
        assert isinstance(
            other.rest_client.pool_manager, kubesim.transport.kubernetes_client.PoolManager
        )
    assert not isinstance(
        client.ApiClient().rest_client.pool_manager, kubesim.transport.kubernetes_client.PoolManager
    )


def test_patch_kubernetes_puts_the_users_default_configuration_back(server: APIServer) -> None:
    before = getattr(client.Configuration, "_default", None)
    mine = client.Configuration(host="https://mine.example:6443")
    client.Configuration.set_default(mine)
    try:
        stored = client.Configuration._default
        with kubesim.patch_kubernetes(server):
            kubernetes.config.load_kube_config()  # points the default at the simulation
            assert client.Configuration.get_default_copy().host != mine.host
        assert client.Configuration._default is stored
        assert client.Configuration.get_default_copy().host == "https://mine.example:6443"
    finally:
        client.Configuration._default = before


def test_apps_v1_resources_are_served(server: APIServer, no_sockets: None) -> None:
    apps = client.AppsV1Api(kubesim.kubernetes_client(server))
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    created = apps.create_namespaced_deployment("default", body)
    assert created.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    relabelled = apps.patch_namespaced_deployment(
        "web", "default", {"metadata": {"labels": {"a": "b"}}}
    )
    assert relabelled.metadata.generation == 2  # metadata changes do not bump generation


def test_autoscaling_v1_and_v2_clients_share_their_autoscalers(
    server: APIServer, no_sockets: None
) -> None:
    # The client's typed models deserialize each version's own fields.
    api_client = kubesim.kubernetes_client(server)
    v1, v2 = client.AutoscalingV1Api(api_client), client.AutoscalingV2Api(api_client)
    target = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}
    body = client.V1HorizontalPodAutoscaler(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1HorizontalPodAutoscalerSpec(
            scale_target_ref=target, max_replicas=5, target_cpu_utilization_percentage=60
        ),
    )
    created = v1.create_namespaced_horizontal_pod_autoscaler("default", body)
    assert created.spec.target_cpu_utilization_percentage == 60
    stored = v2.read_namespaced_horizontal_pod_autoscaler("web", "default")
    [metric] = stored.spec.metrics
    assert (metric.resource.name, metric.resource.target.average_utilization) == ("cpu", 60)
    v2.patch_namespaced_horizontal_pod_autoscaler("web", "default", {"spec": {"maxReplicas": 7}})
    [listed] = v1.list_namespaced_horizontal_pod_autoscaler("default").items
    assert (listed.spec.max_replicas, listed.spec.target_cpu_utilization_percentage) == (7, 60)
    v1.delete_namespaced_horizontal_pod_autoscaler("web", "default")
    assert v2.list_namespaced_horizontal_pod_autoscaler("default").items == []


def test_the_official_clients_cleanup_and_dry_run_calls_work() -> None:
    # What an end-to-end suite written for a cluster calls to clean up and to check a write.
    server = APIServer(seed=0)
    v1 = client.CoreV1Api(kubesim.kubernetes_client(server))
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        pod = make_pod(name, "default")
        pod["metadata"]["labels"] = {"tier": tier}
        server.create("pods", pod, namespace="default")
    v1.delete_collection_namespaced_pod("default", label_selector="tier=web")
    assert [p.metadata.name for p in v1.list_namespaced_pod("default").items] == ["c"]
    before = server.resource_version
    dry = v1.create_namespaced_config_map(
        "default", {"metadata": {"name": "dry"}, "data": {"k": "v"}}, dry_run="All"
    )
    assert dry.metadata.uid
    assert server.resource_version == before
    with pytest.raises(ApiException) as refused:
        v1.read_namespaced_config_map("dry", "default")
    assert refused.value.status == 404
