"""The official client in-process on a live server: readers and writers in real threads.

Outside a simulation the server's default wait policy behaves like a live kube-apiserver: a
blocked watch read wakes when another thread writes, virtual time follows the wall clock (so a
watch with no ``timeout_seconds`` just waits), and ``Watch.stop()`` from another thread cuts the
watch as it cuts a real socket. The assertions are on requests and virtual time, never on wall
durations; the only wall-clock waits are hang guards and one short quiet spell.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch

import kubesim
from kubesim import APIServer
from kubesim.sim.simulation import Simulation
from kubesim.transport.http import HTTPTransport
from kubesim.workload import make_pod

HANG_GUARD = 10.0  # wall seconds; only ever reached when a test is failing
PREMATURE_END = ("Response ended prematurely",)  # urllib3 2, a chunked body cut between chunks


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Block until ``condition()`` holds (another thread makes it so); fail after the guard."""
    done = threading.Event()
    for _ in range(int(HANG_GUARD / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError(f"gave up waiting for {what}")


class Reader:
    """``Watch().stream(...)`` in a thread of its own, recording events and how it ended."""

    def __init__(self, core: client.CoreV1Api, **kwargs: Any) -> None:
        self.watch = watch.Watch()
        self.events: list[tuple[str, str]] = []
        self.error: BaseException | None = None
        self.ended = False
        self._kwargs = kwargs
        self._core = core
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            for event in self.watch.stream(
                self._core.list_namespaced_pod, "default", **self._kwargs
            ):
                self.events.append((event["type"], event["object"].metadata.name))
                if event["type"] == "ADDED":
                    self.watch.stop()  # from inside the loop: ends cleanly after this event
        except urllib3.exceptions.ProtocolError as exc:
            self.error = exc
        self.ended = True

    def start(self, server: APIServer) -> Reader:
        self.thread.start()
        # Watch.stop() can cut only the response the Watch holds (Watch._resp): wait for it.
        wait_until(
            lambda: (
                (server.open_watches == 1 and getattr(self.watch, "_resp", None) is not None)
                or self.ended
            ),
            "the watch to open",
        )
        return self

    def join(self) -> None:
        self.thread.join(HANG_GUARD)
        assert self.ended, "the watch reader is still blocked"


@pytest.fixture
def live() -> tuple[APIServer, client.CoreV1Api]:
    server = APIServer(seed=1)  # the default policy: no simulation drives this server
    return server, client.CoreV1Api(kubesim.kubernetes_client(server))


def test_a_watch_in_one_thread_sees_a_create_made_by_another(
    live: tuple[APIServer, client.CoreV1Api],
) -> None:
    server, core = live
    reader = Reader(core).start(server)  # no timeout_seconds: the most common call
    server.create("pods", make_pod("web-1", "default"))
    reader.join()
    assert reader.events == [("ADDED", "web-1")]
    assert reader.error is None
    assert server.request_count == 1  # one watch, woken by the write: no re-watch, no jump
    assert server.clock.now() < server.min_request_timeout


def test_an_idle_watch_without_timeout_does_not_rewatch_in_a_loop(
    live: tuple[APIServer, client.CoreV1Api],
) -> None:
    server, core = live
    rv = core.list_namespaced_pod("default").metadata.resource_version
    before = server.request_count
    reader = Reader(core, resource_version=rv).start(server)
    threading.Event().wait(0.2)  # a quiet spell: nothing happens on the server
    reader.watch.stop()
    reader.join()
    assert server.request_count - before == 1  # the one watch, still open when stopped
    # No watch ran to its server-side timeout (1800-3600 s): virtual time followed the wall.
    assert server.clock.now() < server.min_request_timeout
    assert reader.events == []


def test_watch_stop_from_another_thread_ends_a_blocked_stream(
    live: tuple[APIServer, client.CoreV1Api],
) -> None:
    server, core = live
    reader = Reader(core, timeout_seconds=600).start(server)
    reader.watch.stop()  # kubernetes >= 37 shuts resp.connection.sock down
    reader.join()
    # As over a socket shut down under a blocked read: urllib3's premature-end error.
    assert isinstance(reader.error, urllib3.exceptions.ProtocolError)
    assert reader.error.args == PREMATURE_END
    assert server.clock.now() < 600  # the watch did not run to its timeout
    assert server.open_watches == 0
    assert ("watch-end", 1, "cancelled") in list(server.trace)


def test_watch_stop_ends_a_blocked_stream_inside_a_simulation() -> None:
    sim = Simulation(seed=1)
    core = client.CoreV1Api(sim.kubernetes_client())
    w = watch.Watch()
    errors: list[tuple[Any, ...]] = []

    def store() -> None:
        try:
            for _ in w.stream(core.list_namespaced_pod, "default", timeout_seconds=600):
                pass
        except urllib3.exceptions.ProtocolError as exc:
            errors.append(exc.args)

    sim.start(store)  # runs until the store blocks on the watch
    w.stop()  # the driver stops the store's watch
    sim.settle()
    assert sim.store_finished
    assert errors == [PREMATURE_END]
    assert sim.clock.now() == 0  # no virtual time passed: the stop woke the reader
    sim.stop()


def _dropped_error(core: client.CoreV1Api, server: APIServer) -> BaseException:
    response = core.list_namespaced_pod("default", watch=True, _preload_content=False)
    chunks = response.stream()
    assert b'"ADDED"' in next(chunks)
    server.drop_watches()
    with pytest.raises(urllib3.exceptions.ProtocolError) as dropped:
        next(chunks)
    return dropped.value


def test_a_drop_raises_exactly_what_urllib3_raises_for_a_cut_socket() -> None:
    inprocess = APIServer(seed=1)
    inprocess.create("pods", make_pod("a", "default"))
    fake = _dropped_error(client.CoreV1Api(kubesim.kubernetes_client(inprocess)), inprocess)
    served = APIServer(seed=1)
    served.create("pods", make_pod("a", "default"))
    with HTTPTransport(served) as transport:
        api = client.ApiClient(client.Configuration(host=transport.url))
        real = _dropped_error(client.CoreV1Api(api), served)
        api.close()
    assert (type(fake), fake.args, str(fake)) == (type(real), real.args, str(real))
    assert fake.args == PREMATURE_END
