"""The official ``kubernetes`` client over real loopback HTTP against ``kubesim.HTTPTransport``.

Each test serves a fresh :class:`kubesim.APIServer` on ``127.0.0.1`` port 0 from a background
thread. Virtual time does not move on its own under ``HTTPTransport``: watches end only when
the test calls ``server.expire_watches()`` or ``server.advance(...)``, always after the events
it waits for have been read, so no test sleeps to synchronise. Every request carries a
client-side read timeout as a hang guard.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiTypeError
from kubernetes.client.rest import ApiException

import kubesim
from kubesim import APIServer, HTTPTransport
from kubesim.apiserver.encoding import loads
from kubesim.transport.http import write_kubeconfig
from kubesim.workload import make_pod

# (connect, read) seconds: a hang guard on every socket operation, never a synchroniser.
HANG_GUARD = (10, 60)
MERGE_PATCH = "application/merge-patch+json"


@pytest.fixture
def transport(server: APIServer) -> Iterator[HTTPTransport]:
    with HTTPTransport(server, host="127.0.0.1", port=0) as served:
        yield served


@pytest.fixture
def core(transport: HTTPTransport) -> Iterator[client.CoreV1Api]:
    api_client = client.ApiClient(client.Configuration(host=transport.url))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def _status(error: ApiException) -> dict[str, Any]:
    body = loads(error.body)
    assert body["kind"] == "Status"
    return body  # type: ignore[no-any-return]


def test_transport_serves_on_an_ephemeral_loopback_port(transport: HTTPTransport) -> None:
    assert transport.host == "127.0.0.1"
    assert transport.port > 0
    assert transport.url == f"http://127.0.0.1:{transport.port}"


def test_list_create_patch_and_delete_round_trip_over_http(
    server: APIServer, core: client.CoreV1Api
) -> None:
    created = core.create_namespaced_pod(
        "default", make_pod("web-1", "default", containers=2), _request_timeout=HANG_GUARD
    )
    stored = server.get("pods", "web-1", namespace="default")
    assert created.metadata.uid == stored["metadata"]["uid"]
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["web-1"]
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces().items] == ["web-1"]

    label = {"metadata": {"labels": {"tier": "front"}}}
    try:
        merged = core.patch_namespaced_pod(
            "web-1", "default", label, _content_type=MERGE_PATCH, _request_timeout=HANG_GUARD
        )
    except ApiTypeError:
        # kubernetes 29 cannot pick the patch type (it refuses before sending anything) and sends
        # a dict body as a strategic merge patch: the same result for this label change.
        merged = core.patch_namespaced_pod("web-1", "default", label, _request_timeout=HANG_GUARD)
    assert merged.metadata.labels["tier"] == "front"
    assert int(merged.metadata.resource_version) > int(created.metadata.resource_version)

    # A dict body goes out as a strategic merge patch: containers merge by name, so the
    # untouched container stays (a JSON merge patch would replace the whole list).
    strategic = core.patch_namespaced_pod(
        "web-1",
        "default",
        {"spec": {"containers": [{"name": "sidecar-1", "image": "sidecar:2"}]}},
        _request_timeout=HANG_GUARD,
    )
    assert [(c.name, c.image) for c in strategic.spec.containers] == [
        ("app", created.spec.containers[0].image),
        ("sidecar-1", "sidecar:2"),
    ]
    stored = server.get("pods", "web-1", namespace="default")
    assert stored["metadata"]["labels"]["tier"] == "front"
    assert [c["image"] for c in stored["spec"]["containers"]][1] == "sidecar:2"

    core.delete_namespaced_pod("web-1", "default", _request_timeout=HANG_GUARD)
    assert core.list_namespaced_pod("default").items == []
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("web-1", "default", _request_timeout=HANG_GUARD)
    assert missing.value.status == 404
    assert _status(missing.value)["message"] == 'pods "web-1" not found'


def test_errors_arrive_as_api_exceptions_carrying_the_kubernetes_status(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("default", make_pod("dup", "default"), _request_timeout=HANG_GUARD)
    with pytest.raises(ApiException) as conflict:
        core.create_namespaced_pod(
            "default", make_pod("dup", "default"), _request_timeout=HANG_GUARD
        )
    assert conflict.value.status == 409
    assert _status(conflict.value)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as no_namespace:
        core.create_namespaced_pod("nowhere", make_pod("p", "nowhere"), _request_timeout=HANG_GUARD)
    assert no_namespace.value.status == 404


def test_paginated_list_follows_continue_tokens_at_one_resource_version(
    server: APIServer, core: client.CoreV1Api
) -> None:
    for index in range(5):
        server.create("pods", make_pod(f"p-{index}", "default"))
    first = core.list_namespaced_pod("default", limit=2, _request_timeout=HANG_GUARD)
    names = [p.metadata.name for p in first.items]
    token = first.metadata._continue
    assert first.metadata.remaining_item_count == 3
    server.create("pods", make_pod("p-late", "default"))  # after the snapshot: not in the pages
    while token:
        page = core.list_namespaced_pod(
            "default", limit=2, _continue=token, _request_timeout=HANG_GUARD
        )
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    assert names == [f"p-{index}" for index in range(5)]


def test_watch_stream_delivers_added_modified_deleted_in_order_and_ends_on_expiry(
    server: APIServer, core: client.CoreV1Api
) -> None:
    listed = core.list_namespaced_pod("default", _request_timeout=HANG_GUARD)
    # Committed before the watch opens: replayed from the list's resourceVersion.
    server.create("pods", make_pod("w", "default"))
    seen: list[tuple[str, str, int, dict[str, str] | None]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        "default",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=300,
        _request_timeout=HANG_GUARD,
    ):
        pod = event["object"]
        seen.append(
            (
                event["type"],
                pod.metadata.name,
                int(pod.metadata.resource_version),
                pod.metadata.labels,
            )
        )
        # Each change is made only after the previous event arrived, while the watch is live.
        if event["type"] == "ADDED":
            server.patch("pods", "w", {"metadata": {"labels": {"step": "2"}}}, namespace="default")
        elif event["type"] == "MODIFIED":
            server.delete("pods", "w", namespace="default")
        elif event["type"] == "DELETED":
            assert server.expire_watches() == 1
    assert [(kind, name) for kind, name, _, _ in seen] == [
        ("ADDED", "w"),
        ("MODIFIED", "w"),
        ("DELETED", "w"),
    ]
    versions = [rv for _, _, rv, _ in seen]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3
    assert seen[1][3] is not None
    assert seen[1][3]["step"] == "2"
    assert server.open_watches == 0


def test_watch_without_resource_version_starts_with_synthetic_added_for_existing_pods(
    server: APIServer, core: client.CoreV1Api
) -> None:
    for name in ("b", "a", "c"):
        server.create("pods", make_pod(name, "default"))
    seen: list[tuple[str, str]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod, "default", timeout_seconds=300, _request_timeout=HANG_GUARD
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 3:
            server.expire_watches()
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]  # key order, not RV order


def test_watch_ends_cleanly_when_virtual_time_reaches_its_timeout_seconds(
    server: APIServer, core: client.CoreV1Api
) -> None:
    server.create("pods", make_pod("t", "default"))
    seen: list[str] = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod, "default", timeout_seconds=30, _request_timeout=HANG_GUARD
    ):
        seen.append(event["type"])
        assert server.open_watches == 1
        server.advance(29)
        assert server.open_watches == 1  # one virtual second left
        server.advance(1)
        assert server.open_watches == 0
    assert seen == ["ADDED"]


def test_load_kube_config_with_a_written_kubeconfig_reaches_the_server(
    server: APIServer, transport: HTTPTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # load_kube_config replaces the process-wide default Configuration: restore it afterwards.
    monkeypatch.setattr(client.Configuration, "_default", client.Configuration._default)
    server.create("namespaces", {"metadata": {"name": "team-a"}})
    server.create("pods", make_pod("from-config", "team-a"))
    path = tmp_path / "kubeconfig"
    write_kubeconfig(str(path), transport.url, namespace="team-a")

    config.load_kube_config(config_file=str(path))
    assert client.Configuration.get_default_copy().host == transport.url
    _, active = config.list_kube_config_contexts(config_file=str(path))
    namespace = active["context"]["namespace"]
    assert namespace == "team-a"
    api_client = client.ApiClient()
    try:
        pods = client.CoreV1Api(api_client).list_namespaced_pod(
            namespace, _request_timeout=HANG_GUARD
        )
    finally:
        api_client.close()
    assert [p.metadata.name for p in pods.items] == ["from-config"]

    explicit = config.new_client_from_config(config_file=str(path))
    try:
        names = [n.metadata.name for n in client.CoreV1Api(explicit).list_namespace().items]
    finally:
        explicit.close()
    assert "team-a" in names


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "example.com"])
def test_http_transport_refuses_a_non_loopback_host_naming_the_argument(host: str) -> None:
    with pytest.raises(ValueError, match=rf"host='{host}'") as refused:
        HTTPTransport(APIServer(seed=1), host=host, port=0)
    assert "allow_non_loopback" in str(refused.value)


def test_http_transport_is_exported_at_the_package_top_level() -> None:
    assert kubesim.HTTPTransport is HTTPTransport


def test_the_listen_backlog_holds_a_hundred_clients_opening_at_once(
    transport: HTTPTransport,
) -> None:
    import shutil
    import socket
    import subprocess

    ss = shutil.which("ss")
    if ss is not None:
        # The backlog as the kernel has it (Send-Q of a listening socket), whatever it caps.
        listed = subprocess.run(
            [ss, "-Hltn", f"sport = :{transport.port}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
        assert int(listed[2]) >= 128, listed
    # A hundred connections opened together, then a request on each: every one is answered.
    sockets = [
        socket.create_connection(("127.0.0.1", transport.port), timeout=30) for _ in range(100)
    ]
    try:
        for sock in sockets:
            sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers = [sock.makefile("rb").readline() for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert all(line.startswith(b"HTTP/1.") and b" 200 " in line for line in answers), answers[:3]


def test_a_server_that_names_managers_as_a_cluster_does_records_the_clients_user_agent() -> None:
    # kube-apiserver records managedFields for every write; a request that names no
    # fieldManager (the official client's default) is managed by its User-Agent's product name.
    server = APIServer(seed=1, field_managers_from_user_agent=True)
    with HTTPTransport(server, host="127.0.0.1", port=0) as served:
        api_client = client.ApiClient(client.Configuration(host=served.url))
        try:
            core = client.CoreV1Api(api_client)
            body = {"metadata": {"name": "settings"}, "data": {"mode": "fast"}}
            made = core.create_namespaced_config_map("default", body, _request_timeout=HANG_GUARD)
            [(manager, operation)] = [
                (e.manager, e.operation) for e in made.metadata.managed_fields
            ]
            assert (manager, operation) == ("OpenAPI-Generator", "Update")
            patch = {"data": {"mode": "slow"}}
            core.patch_namespaced_config_map(
                "settings", "default", patch, field_manager="tuner", _request_timeout=HANG_GUARD
            )
            created = core.read_namespaced_config_map(
                "settings", "default", _request_timeout=HANG_GUARD
            )
        finally:
            api_client.close()
    entries = [(e.manager, e.operation, e.fields_v1) for e in created.metadata.managed_fields or []]
    # The create's manager owned data.mode until the patch changed it: an entry that owns
    # nothing is dropped.
    assert entries == [("tuner", "Update", {"f:data": {"f:mode": {}}})]
    # Python API writes and servers that do not name managers so record nothing, as before.
    plain = APIServer(seed=1)
    assert "managedFields" not in plain.create("configmaps", body, namespace="default")["metadata"]


@pytest.mark.parametrize(
    ("user_agent", "manager"),
    [
        ("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator"),
        ("kubectl/v1.33.0 (linux/amd64) kubernetes/8adc0f0", "kubectl"),
        ("a\tb\x00c/1", "abc"),
        ("", ""),
        ("x" * 200, "x" * 128),
        ("é" * 100, "é" * 64),  # 128 bytes of two-byte characters
    ],
)
def test_the_manager_is_the_user_agent_up_to_its_first_slash(user_agent: str, manager: str) -> None:
    from kubesim.apiserver.managed_fields import manager_from_user_agent

    assert manager_from_user_agent(user_agent) == manager


def test_serve_verbose_logs_each_request_line_and_status(tmp_path: Path) -> None:
    import urllib.request

    from serve_process import serve

    with serve(tmp_path, "--nodes", "0", "--verbose", banner_lines=1, timeout=30) as banner:
        url = banner[0].split()[-1]
        with urllib.request.urlopen(f"{url}/api/v1/namespaces/default/pods?limit=1") as reply:
            assert reply.status == 200
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{url}/api/v1/namespaces/default/pods/absent")
        assert missing.value.code == 404
        missing.value.close()
    log = (tmp_path / "serve.stderr").read_text()
    assert '"GET /api/v1/namespaces/default/pods?limit=1 HTTP/1.1" 200' in log, log
    assert '"GET /api/v1/namespaces/default/pods/absent HTTP/1.1" 404' in log, log


@pytest.mark.parametrize(("flags", "served"), [((), True), (("--no-metrics-server",), False)])
def test_serve_runs_the_metrics_api_unless_told_not_to(
    tmp_path: Path, flags: tuple[str, ...], served: bool
) -> None:
    import json
    import urllib.request

    from serve_process import serve

    with serve(tmp_path, *flags, banner_lines=1, timeout=30) as banner:
        url = banner[0].split()[-1]
        with urllib.request.urlopen(f"{url}/apis") as reply:
            groups = [g["name"] for g in json.load(reply)["groups"]]
        with urllib.request.urlopen(f"{url}/apis/apps/v1/namespaces/kube-system/deployments") as r:
            deployments = [d["metadata"]["name"] for d in json.load(r)["items"]]
    assert ("metrics.k8s.io" in groups) is served
    assert ("metrics-server" in deployments) is served


@pytest.mark.parametrize(("flags", "published"), [((), True), (("--no-controllers",), False)])
def test_serve_publishes_a_root_ca_config_map_unless_it_runs_no_controllers(
    tmp_path: Path, flags: tuple[str, ...], published: bool
) -> None:
    import json
    import urllib.request

    from serve_process import serve

    from kubesim.cluster.root_ca import PLAIN_HTTP_PLACEHOLDER

    with serve(tmp_path, "--nodes", "0", *flags, banner_lines=1, timeout=30) as banner:
        url = banner[0].split()[-1]
        with urllib.request.urlopen(
            f"{url}/api/v1/configmaps?fieldSelector=metadata.name%3Dkube-root-ca.crt"
        ) as reply:
            listed = json.load(reply)["items"]
    namespaces = sorted(item["metadata"]["namespace"] for item in listed)
    if published:
        # Plain HTTP: the placeholder, in each namespace the server starts with.
        assert namespaces == ["default", "kube-node-lease", "kube-public", "kube-system"]
        assert {item["data"]["ca.crt"] for item in listed} == {PLAIN_HTTP_PLACEHOLDER}
    else:
        assert namespaces == []
