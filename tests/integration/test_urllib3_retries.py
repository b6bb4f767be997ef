"""The in-process official client retries as urllib3 does over a socket.

urllib3's default ``Retry(3)`` asks again, inside ``urlopen``, when a GET (PUT, DELETE, ...)
is answered 413, 429 or 503 with ``Retry-After``, at most three times: one to three such
answers in a row never reach the client, a fourth does. The same error sequence is played
against the in-process transport and against ``kubesim serve`` (a real socket), and what the
client saw must be the same.
"""

from __future__ import annotations

from typing import Any

import pytest

kubernetes = pytest.importorskip("kubernetes")

import urllib3  # noqa: E402
from kubernetes import client  # noqa: E402

import kubesim  # noqa: E402
from kubesim import APIServer  # noqa: E402
from kubesim.sim.simulation import Simulation  # noqa: E402
from kubesim.transport.http import HTTPTransport  # noqa: E402


def _outcomes(core: client.CoreV1Api, server: APIServer, code: int, retry_after: int) -> list[Any]:
    """For 1, 3 and 4 errors in a row: what a list saw, and how many requests it took."""
    seen: list[Any] = []
    for errors in (1, 3, 4):
        before = server.request_count
        server.fail_requests(errors, code=code, verbs=("list",), retry_after=retry_after)
        try:
            core.list_namespaced_pod("default")
            outcome: Any = "ok"
        except client.ApiException as error:
            outcome = error.status
        seen.append((errors, outcome, server.request_count - before))
        server.request_failures.clear()
    return seen


@pytest.mark.parametrize("code", [429, 503, 500])
def test_in_process_and_over_a_socket_the_client_sees_the_same_answers(
    code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # urllib3 sleeps Retry-After (1 s here) between tries: recorded, not slept, on both sides.
    slept: list[float] = []
    monkeypatch.setattr(urllib3.util.retry.time, "sleep", slept.append)
    inprocess = APIServer(seed=1)
    fake = _outcomes(client.CoreV1Api(kubesim.kubernetes_client(inprocess)), inprocess, code, 1)
    fake_sleeps, slept[:] = list(slept), []
    served = APIServer(seed=1)
    with HTTPTransport(served) as transport:
        api = client.ApiClient(client.Configuration(host=transport.url))
        real = _outcomes(client.CoreV1Api(api), served, code, 1)
        api.close()
    assert (fake, fake_sleeps) == (real, slept)
    if code in (429, 503):  # urllib3 asks again after Retry-After, three times at most
        assert fake == [(1, "ok", 2), (3, "ok", 4), (4, code, 4)]
        assert fake_sleeps == [1.0] * (1 + 3 + 3)
    else:  # 500 is not among the Retry-After codes: the first error reaches the client
        assert fake == [(1, code, 1), (3, code, 1), (4, code, 1)]
        assert fake_sleeps == []


def test_a_client_configured_without_retries_sees_the_first_error() -> None:
    server = APIServer(seed=1)
    configuration = client.Configuration(host=kubesim.transport.kubernetes_client.DEFAULT_HOST)
    configuration.retries = False
    with kubesim.transport.kubernetes_client.patch_kubernetes(server):
        api = client.ApiClient(configuration)
        assert _outcomes(client.CoreV1Api(api), server, 429, 0)[0] == (1, 429, 1)


def test_in_a_simulation_the_retry_waits_retry_after_in_virtual_time() -> None:
    sim = Simulation(seed=1)
    done: list[float] = []

    def store() -> None:
        core = client.CoreV1Api(sim.kubernetes_client())
        core.list_namespaced_pod("default")
        done.append(sim.server.clock.now())

    sim.server.fail_requests(2, code=429, verbs=("list",), retry_after=7)
    start = sim.server.clock.now()
    sim.start(store)
    sim.advance(30)
    sim.stop()
    assert done == [start + 14]
