"""kubernetes_asyncio runs unchanged against kubesim in-process: no sockets, virtual-time waits.

Watches run under :func:`kubesim.sched.aio.run` on the server's clock, so server-side watch
timeouts and bookmarks fire as the loop autojumps: an hour of watching takes milliseconds.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kubesim import APIServer
from kubesim.sched import aio
from kubesim.workload import make_pod

Main = Callable[[client.CoreV1Api], Awaitable[Any]]


def refuse_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the in-process transport opened a socket")

    monkeypatch.setattr(socket.socket, "__init__", refuse)


@pytest.fixture(autouse=True)
def no_sockets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    # The stock-asyncio test creates its loop (whose self-pipe is a socketpair) first.
    if "stock_asyncio" not in request.node.name:
        refuse_sockets(monkeypatch)


def run(server: APIServer, main: Main, *, seed: int = 0) -> Any:
    """Run ``main(v1)`` on the deterministic loop, on the server's clock and trace."""

    async def wrapper() -> Any:
        async with kubesim.kubernetes_asyncio_client(server) as api:
            return await main(client.CoreV1Api(api))

    return aio.run(wrapper, seed=seed, clock=server.clock, trace=server.trace)


async def collect(stream: watch.Watch, into: list[str]) -> None:
    """Append each event's type to ``into`` until the stream ends (or raises)."""
    async for event in stream:
        into.append(event["type"])


def test_list_create_patch_and_delete_go_through_the_client_unchanged(server: APIServer) -> None:
    async def main(v1: client.CoreV1Api) -> None:
        created = await v1.create_namespaced_pod("default", make_pod("web-1", "default"))
        assert created.metadata.uid
        listed = await v1.list_namespaced_pod("default")
        assert [p.metadata.name for p in listed.items] == ["web-1"]
        merged = await v1.patch_namespaced_pod(
            "web-1",
            "default",
            {"metadata": {"labels": {"v": "2"}}},
            _content_type="application/merge-patch+json",
        )
        assert merged.metadata.labels["v"] == "2"
        assert int(merged.metadata.resource_version) > int(created.metadata.resource_version)
        strategic = await v1.patch_namespaced_pod(
            "web-1",
            "default",
            {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}},
            _content_type="application/strategic-merge-patch+json",
        )
        # Merged by container name: the image changed, the rest of the container stayed.
        [container] = strategic.spec.containers
        assert container.image == "nginx:2"
        assert container.ports[0].container_port == 8080
        await v1.delete_namespaced_pod("web-1", "default")
        assert (await v1.list_pod_for_all_namespaces()).items == []

    run(server, main)


def test_errors_reach_the_client_as_api_exceptions_with_the_status_body(
    server: APIServer,
) -> None:
    async def main(v1: client.CoreV1Api) -> None:
        with pytest.raises(ApiException) as missing:
            await v1.read_namespaced_pod("nope", "default")
        assert missing.value.status == 404
        assert '"reason":"NotFound"' in missing.value.body

    run(server, main)


def test_watch_stream_yields_added_modified_deleted_as_writes_happen(server: APIServer) -> None:
    async def main(v1: client.CoreV1Api) -> list[tuple[float, str, str]]:
        loop = asyncio.get_running_loop()

        async def writer() -> None:
            await v1.create_namespaced_pod("default", make_pod("web-1", "default"))
            await asyncio.sleep(10)
            await v1.patch_namespaced_pod("web-1", "default", {"metadata": {"labels": {"a": "b"}}})
            await asyncio.sleep(10)
            await v1.delete_namespaced_pod("web-1", "default")

        task = asyncio.create_task(writer())
        seen = []
        async with watch.Watch() as w:
            stream = w.stream(v1.list_namespaced_pod, "default", timeout_seconds=100)
            async for event in stream:
                seen.append((loop.time(), event["type"], event["object"].metadata.name))
        await task
        assert loop.time() == 100.0  # the stream ended at the server-side timeout, virtually
        return seen

    assert run(server, main) == [
        (0.0, "ADDED", "web-1"),
        (10.0, "MODIFIED", "web-1"),
        (20.0, "DELETED", "web-1"),
    ]


def hour_of_watching(seed: int) -> tuple[list[tuple[float, str, str, str]], str]:
    """A writer patches every 10 min while a watcher reconnects through timeouts and expiries.

    An expiry drops lines the client had not read yet; the re-watch from the last RV it saw
    delivers them again, so the watcher keeps going until it has seen the last patch.
    """
    server = APIServer(seed=seed)

    async def main(v1: client.CoreV1Api) -> list[tuple[float, str, str, str]]:
        loop = asyncio.get_running_loop()
        await v1.create_namespaced_pod("default", make_pod("web-1", "default"))

        async def writer() -> None:
            for step in range(6):
                await asyncio.sleep(600)
                await v1.patch_namespaced_pod(
                    "web-1", "default", {"metadata": {"labels": {"step": str(step)}}}
                )
                if step % 2:
                    server.expire_watches()

        task = asyncio.create_task(writer())
        seen: list[tuple[float, str, str, str]] = []
        rv = (await v1.list_namespaced_pod("default")).metadata.resource_version
        for _ in range(100):  # hang guard: about 20 reconnects are needed
            if seen and seen[-1][3] == "5":
                break
            async with watch.Watch() as w:
                stream = w.stream(
                    v1.list_namespaced_pod,
                    "default",
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=420,
                )
                async for event in stream:
                    if event["type"] == "BOOKMARK":
                        continue
                    labels = event["object"].metadata.labels or {}
                    seen.append((loop.time(), event["type"], rv, labels.get("step", "")))
                rv = w.resource_version
        await task
        return seen

    seen = run(server, main, seed=seed)
    return seen, server.trace.hexdigest()


def test_an_hour_of_watching_with_expiries_is_fast_and_deterministic_per_seed() -> None:
    first, first_hash = hour_of_watching(seed=7)
    second, second_hash = hour_of_watching(seed=7)
    assert first == second
    assert first_hash == second_hash
    # Every patch arrives exactly once, at the virtual time it was made, across reconnects.
    assert [(t, kind, step) for t, kind, _, step in first] == [
        (600.0 * (step + 1), "MODIFIED", str(step)) for step in range(6)
    ]


def test_a_different_seed_still_delivers_the_same_events() -> None:
    first, _ = hour_of_watching(seed=7)
    other, _ = hour_of_watching(seed=8)
    assert [(t, kind, step) for t, kind, _, step in first] == [
        (t, kind, step) for t, kind, _, step in other
    ]


def test_an_abrupt_drop_surfaces_as_aiohttp_client_payload_error(server: APIServer) -> None:
    async def main(v1: client.CoreV1Api) -> list[str]:
        async def dropper() -> None:
            await v1.create_namespaced_pod("default", make_pod("web-1", "default"))
            await asyncio.sleep(5)
            server.drop_watches()

        task = asyncio.create_task(dropper())
        seen = []
        async with watch.Watch() as w:
            stream = w.stream(v1.list_namespaced_pod, "default")
            with pytest.raises(aiohttp.ClientPayloadError, match="not completed"):
                await collect(stream, seen)
        await task
        return seen

    assert run(server, main) == ["ADDED"]


def test_a_watch_from_a_compacted_resource_version_raises_410(server: APIServer) -> None:
    async def main(v1: client.CoreV1Api) -> None:
        await v1.create_namespaced_pod("default", make_pod("web-1", "default"))
        old = (await v1.list_namespaced_pod("default")).metadata.resource_version
        await v1.patch_namespaced_pod("web-1", "default", {"metadata": {"labels": {"a": "b"}}})
        server.compact()
        async with watch.Watch() as w:
            stream = w.stream(
                v1.list_namespaced_pod, "default", resource_version=old, timeout_seconds=60
            )
            with pytest.raises(ApiException) as gone:
                await collect(stream, [])
        assert gone.value.status == 410

    run(server, main)


def test_a_client_read_timeout_fires_on_virtual_time(server: APIServer) -> None:
    import inspect

    import kubernetes_asyncio.client.rest as rest

    if "sock_read" not in inspect.getsource(rest):
        pytest.skip("this kubernetes_asyncio sets no read timeout from (connect, read) pairs")

    async def main(v1: client.CoreV1Api) -> float:
        loop = asyncio.get_running_loop()
        response = await v1.list_namespaced_pod(
            "default", watch=True, _preload_content=False, _request_timeout=(5, 30)
        )
        with pytest.raises(asyncio.TimeoutError):
            await response.content.read()
        response.release()
        return loop.time()

    assert run(server, main) == 30.0


def test_under_stock_asyncio_a_watch_wakes_on_writes_from_another_task(
    server: APIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> list[str]:
        async with kubesim.kubernetes_asyncio_client(server) as api:
            v1 = client.CoreV1Api(api)

            deleted = asyncio.Event()

            async def writer() -> None:
                await asyncio.sleep(0)
                await v1.create_namespaced_pod("default", make_pod("web-1", "default"))
                await v1.delete_namespaced_pod("web-1", "default")
                await deleted.wait()
                server.expire_watches()  # wakes the reader waiting for the next line

            seen = []
            async with watch.Watch() as w:
                stream = w.stream(v1.list_namespaced_pod, "default", timeout_seconds=60)
                task = asyncio.create_task(writer())
                async for event in stream:
                    seen.append(event["type"])
                    if event["type"] == "DELETED":
                        deleted.set()
            await task
            return seen

    loop = asyncio.new_event_loop()
    refuse_sockets(monkeypatch)
    try:
        seen = loop.run_until_complete(asyncio.wait_for(main(), 30))
    finally:
        loop.close()
    assert seen == ["ADDED", "DELETED"]
    assert server.change_listeners == []


def test_patch_kubernetes_asyncio_routes_clients_built_inside_the_block(
    server: APIServer,
) -> None:
    async def main() -> list[str]:
        with kubesim.patch_kubernetes_asyncio(server):
            api = client.ApiClient()
        async with api:
            await client.CoreV1Api(api).create_namespaced_pod(
                "default", make_pod("web-1", "default")
            )
            listed = await client.CoreV1Api(api).list_namespaced_pod("default")
            return [p.metadata.name for p in listed.items]

    assert aio.run(main, clock=server.clock) == ["web-1"]
    assert server.change_listeners == []


def test_clients_in_process_load_no_ca_bundle_but_still_the_cafile_they_name(
    server: APIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # Loading the system's CA bundle cost ~17 ms of CPU per client; stores that make a client
    # per watch (kubespawner) spent most of a property test there. No in-process request
    # speaks TLS, so none is loaded; a cafile the configuration names is, so a missing one
    # still fails as on a real connection.
    import ssl

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an in-process client loaded the system's CA bundle")

    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", refuse)
    monkeypatch.setattr(ssl.SSLContext, "set_default_verify_paths", refuse)
    kubesim.kubernetes_asyncio_client(server)
    configuration = client.Configuration(host="https://kubesim.invalid")
    configuration.ssl_ca_cert = str(tmp_path / "missing-ca.pem")
    with kubesim.patch_kubernetes_asyncio(server), pytest.raises(FileNotFoundError):
        client.ApiClient(configuration)
    from kubernetes_asyncio.client import rest

    assert rest.ssl is ssl  # restored after the block


def test_a_raw_response_has_aiohttps_ok_and_raise_for_status(server: APIServer) -> None:
    async def main(v1: client.CoreV1Api) -> None:
        found = await v1.list_namespaced_pod("default", _preload_content=False)
        assert found.ok is True  # aiohttp: status < 400
        assert found.raise_for_status() is None
        assert str(found.url).endswith("/api/v1/namespaces/default/pods")
        assert found.request_info.method == "GET"
        assert found.request_info.url == found.url
        assert found.content_type == "application/json"
        assert (await found.json())["kind"] == "PodList"
        assert (await found.json())["kind"] == "PodList"  # the body is kept, as aiohttp does

        missing = await v1.read_namespaced_pod("nope", "default", _preload_content=False)
        assert missing.ok is False
        with pytest.raises(aiohttp.ClientResponseError) as error:
            missing.raise_for_status()
        assert (error.value.status, error.value.message) == (404, "Not Found")
        assert error.value.request_info.url == missing.url
        assert error.value.headers is not None
        assert error.value.headers["Content-Type"] == "application/json"
        assert missing.closed  # released, as aiohttp does outside ``async with``

    run(server, main)


def test_a_reflector_written_like_kubespawners_runs_in_process(server: APIServer) -> None:
    """jupyterhub-kubespawner's ResourceReflector: raw list, ``ok`` check, then a watch."""
    import functools
    import json

    async def main(v1: client.CoreV1Api) -> dict[str, str]:
        resources: dict[str, str] = {}

        async def list_and_update(resource_version: str | None) -> str:
            kwargs: dict[str, Any] = {
                "namespace": "default",
                "label_selector": "",
                "field_selector": "",
                "_request_timeout": 60,
                "_preload_content": False,
            }
            if resource_version is not None:
                kwargs["resource_version"] = resource_version
                kwargs["resource_version_match"] = "NotOlderThan"
            raw = await v1.list_namespaced_pod(**kwargs)
            if not raw.ok:
                raise ApiException(status=raw.status, reason=raw.reason)
            initial = json.loads(await raw.read())
            resources.clear()
            for pod in initial["items"]:
                key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                resources[key] = pod["metadata"]["resourceVersion"]
            return str(initial["metadata"]["resourceVersion"])

        await v1.create_namespaced_pod("default", make_pod("web-1", "default"))
        rv = await list_and_update("0")

        async def writer() -> None:
            await asyncio.sleep(5)
            await v1.create_namespaced_pod("default", make_pod("web-2", "default"))
            await v1.delete_namespaced_pod("web-1", "default")

        task = asyncio.create_task(writer())
        w = watch.Watch()
        method = functools.partial(v1.list_namespaced_pod, _preload_content=False)
        async with w.stream(
            method, namespace="default", resource_version=rv, timeout_seconds=30
        ) as stream:
            async for event in stream:
                pod = event["raw_object"]
                key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                if event["type"] == "DELETED":
                    resources.pop(key, None)
                else:
                    resources[key] = pod["metadata"]["resourceVersion"]
        w.stop()
        await w.close()
        await task
        return resources

    resources = run(server, main)
    assert list(resources) == ["default/web-2"]
    assert (
        resources["default/web-2"]
        == server.get("pods", "web-2", namespace="default")["metadata"]["resourceVersion"]
    )


def test_under_stock_asyncio_a_watch_timeout_fires_on_the_loops_time(
    server: APIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> list[str]:
        async with kubesim.kubernetes_asyncio_client(server) as api:
            v1 = client.CoreV1Api(api)
            seen = []
            async with watch.Watch() as w:
                async for event in w.stream(v1.list_namespaced_pod, "default", timeout_seconds=1):
                    seen.append(event["type"])
            return seen

    server.create("pods", make_pod("web-1", "default"))
    loop = asyncio.new_event_loop()
    refuse_sockets(monkeypatch)
    try:
        # The hang guard: before the fix, nothing moved virtual time under a stock loop.
        seen = loop.run_until_complete(asyncio.wait_for(main(), 15))
    finally:
        loop.close()
    assert seen == ["ADDED"]
    assert ("watch-end", 1, "closed") in list(server.trace)  # the server-side timeout
    assert server.clock.now() >= 1.0
    assert server.change_listeners == []


def test_a_raw_session_sends_json_bodies_and_streams_watches_in_chunks() -> None:
    # What aiohttp users (kopf) call on a session: request(json=...), session-wide headers,
    # and watch bodies read with content.iter_chunked(n).
    from kubesim.transport.kubernetes_asyncio_client import DEFAULT_HOST, FakeSession

    server = APIServer(seed=0)

    async def main(_: Any) -> tuple[int, str, list[bytes]]:
        session = FakeSession(server)
        session.headers["User-Agent"] = "kopf/test"
        pods = f"{DEFAULT_HOST}/api/v1/namespaces/default/pods"
        created = await session.request("post", pods, json=make_pod("web-0", "default"))
        body = await created.json()
        watching = await session.request(
            "get", f"{pods}?watch=true&resourceVersion=0&timeoutSeconds=5"
        )
        chunks = [chunk async for chunk in watching.content.iter_chunked(16)]
        await session.close()
        return created.status, body["metadata"]["name"], chunks

    status, name, chunks = run(server, main)
    assert (status, name) == (201, "web-0")
    assert chunks
    assert all(len(chunk) <= 16 for chunk in chunks)
    event = b"".join(chunks).splitlines()[0]
    assert b'"type":"ADDED"' in event
    assert b'"web-0"' in event
    with pytest.raises(ValueError, match="data and json"):
        run(server, lambda _: FakeSession(server).request("post", "/x", data=b"{}", json={}))
