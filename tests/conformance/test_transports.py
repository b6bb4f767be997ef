"""Every in-process transport answers as kubesim's HTTP server does over a socket.

One exercise, run through each client library twice: in-process (the transport kubesim puts
behind that library's own seam) and over a real socket to :class:`kubesim.HTTPTransport` on
127.0.0.1. Both runs start from servers built the same way (same seed, same pods), so both
must see the same statuses, content types and bytes for a list, a create and three ``Status``
errors (404 NotFound, 400 bad selector, 410 Expired), the same lines from a watch that ends
cleanly on ``server.expire_watches()`` and from one cut by ``server.drop_watches()``, and the
same exception classes for the cut and for a read timeout that passes with nothing to read;
and for 1, 3 and 4 errors in a row (429 and 503 with ``Retry-After``, 500), the same status after
the same number of requests and the same sleeps: urllib3's own ``Retry`` asks again, requests,
httpx and aiohttp do not.

Libraries, each at its seam: the official client's (a urllib3 ``PoolManager``), plain urllib3
(``PoolManager.urlopen``: Patroni's Kubernetes DCS), kubernetes_asyncio's (an aiohttp session),
plain aiohttp, httpx and httpx2 (sync and async), requests. Deterministic: in-process runs never
wait (virtual time jumps to the read timeout); over the socket the read timeout is a short
wall-clock one, but its outcome does not depend on timing: nothing is ever written to that watch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest

from kubesim import APIServer, HTTPTransport, make_pod, patch_http_clients
from kubesim.apiserver.server import AutojumpWait

PODS = "/api/v1/namespaces/default/pods"
IN_PROCESS_READ_TIMEOUT = 30.0  # virtual seconds: jumped over
SOCKET_READ_TIMEOUT = 0.3  # wall seconds: nothing will come, however long it waits
HANG_GUARD = 10.0  # seconds: a connect or a read that should succeed


class Answer(NamedTuple):
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str]


class Watched(NamedTuple):
    lines: list[bytes]
    error: BaseException | None


# -- drivers: one small adapter per library, the same for both ways of reaching the server ----
class Driver:
    """``get``/``post`` answers and ``watch`` outcomes, through one library."""

    base: str

    def get(self, path: str) -> Answer:
        raise NotImplementedError

    def post(self, path: str, body: dict[str, Any]) -> Answer:
        raise NotImplementedError

    def watch(self, path: str, read_timeout: float | None, then: Callable[[], None]) -> Watched:
        """Read a watch until it ends; call ``then`` once the first line arrived."""
        raise NotImplementedError


class Reader:
    """Collects a body's bytes and calls ``then`` once, after its first complete line (or, for
    a body that may send none, such as a quiet container's log, as soon as it is reading)."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.data = b""
        self.then: Callable[[], None] | None = then
        if isinstance(then, AtOnce):
            self.then = None
            then()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk
        if self.then is not None and b"\n" in self.data:
            then, self.then = self.then, None
            then()

    def done(self, error: BaseException | None) -> Watched:
        return Watched(self.data.splitlines(), error)


class AtOnce:
    """A ``then`` for :meth:`Driver.watch` called once the response's headers are in."""

    def __init__(self, then: Callable[[], Any]) -> None:
        self.then = then

    def __call__(self) -> None:
        self.then()


def _headers(items: Any) -> dict[str, str]:
    kept = ("content-type", "cache-control", "content-length", "transfer-encoding")
    return {str(k).lower(): str(v) for k, v in items if str(k).lower() in kept}


def _json(body: dict[str, Any]) -> bytes:
    import json

    return json.dumps(body).encode()


class Urllib3Driver(Driver):
    """The official client's seam: ``rest_client.pool_manager.request(...)``."""

    def __init__(self, pool: Any, base: str) -> None:
        self.pool, self.base = pool, base

    def _answer(self, response: Any) -> Answer:
        body = response.data
        return Answer(
            response.status,
            response.headers.get("Content-Type"),
            body,
            _headers(response.headers.items()),
        )

    def get(self, path: str) -> Answer:
        return self._answer(self.pool.request("GET", self.base + path, timeout=HANG_GUARD))

    def post(self, path: str, body: dict[str, Any]) -> Answer:
        headers = {"Content-Type": "application/json"}
        return self._answer(
            self.pool.request(
                "POST", self.base + path, body=_json(body), headers=headers, timeout=HANG_GUARD
            )
        )

    def watch(self, path: str, read_timeout: float | None, then: Callable[[], None]) -> Watched:
        import urllib3

        timeout = urllib3.Timeout(connect=HANG_GUARD, read=read_timeout or HANG_GUARD)
        response = self.pool.request(
            "GET", self.base + path, timeout=timeout, preload_content=False
        )
        reader = Reader(then)
        try:
            for chunk in response.stream():
                reader.feed(chunk)
        except Exception as error:
            return reader.done(error)
        finally:
            response.release_conn()
        return reader.done(None)


class RequestsDriver(Driver):
    def __init__(self, base: str) -> None:
        import requests

        self.session, self.base = requests.Session(), base

    def _answer(self, response: Any) -> Answer:
        return Answer(
            response.status_code,
            response.headers.get("Content-Type"),
            response.content,
            _headers(response.headers.items()),
        )

    def get(self, path: str) -> Answer:
        return self._answer(self.session.get(self.base + path, timeout=HANG_GUARD))

    def post(self, path: str, body: dict[str, Any]) -> Answer:
        return self._answer(self.session.post(self.base + path, json=body, timeout=HANG_GUARD))

    def watch(self, path: str, read_timeout: float | None, then: Callable[[], None]) -> Watched:
        timeout = (HANG_GUARD, read_timeout or HANG_GUARD)
        with self.session.get(self.base + path, stream=True, timeout=timeout) as response:
            reader = Reader(then)
            try:
                for chunk in response.iter_content(chunk_size=None):
                    reader.feed(chunk)
            except Exception as error:
                return reader.done(error)
        return reader.done(None)


class HttpxDriver(Driver):
    def __init__(self, module: Any, base: str) -> None:
        self.module, self.base = module, base
        self.client = module.Client(base_url=base, timeout=HANG_GUARD)

    def _answer(self, response: Any) -> Answer:
        return Answer(
            response.status_code,
            response.headers.get("Content-Type"),
            response.content,
            _headers(response.headers.items()),
        )

    def get(self, path: str) -> Answer:
        return self._answer(self.client.get(path))

    def post(self, path: str, body: dict[str, Any]) -> Answer:
        return self._answer(self.client.post(path, json=body))

    def watch(self, path: str, read_timeout: float | None, then: Callable[[], None]) -> Watched:
        timeout = self.module.Timeout(HANG_GUARD, read=read_timeout or HANG_GUARD)
        with self.client.stream("GET", path, timeout=timeout) as response:
            reader = Reader(then)
            try:
                for chunk in response.iter_raw():
                    reader.feed(chunk)
            except Exception as error:
                return reader.done(error)
        return reader.done(None)


class AsyncDriver(Driver):
    """Runs each call as its own program on a loop: ``run(coroutine function)``."""

    def __init__(self, run: Callable[[Callable[[], Any]], Any], base: str) -> None:
        self.run, self.base = run, base

    def get(self, path: str) -> Answer:
        return self.run(lambda: self.aget(path))  # type: ignore[no-any-return]

    def post(self, path: str, body: dict[str, Any]) -> Answer:
        return self.run(lambda: self.apost(path, body))  # type: ignore[no-any-return]

    def watch(self, path: str, read_timeout: float | None, then: Callable[[], None]) -> Watched:
        return self.run(lambda: self.awatch(path, read_timeout, then))  # type: ignore[no-any-return]

    async def aget(self, path: str) -> Answer:
        raise NotImplementedError

    async def apost(self, path: str, body: dict[str, Any]) -> Answer:
        raise NotImplementedError

    async def awatch(
        self, path: str, read_timeout: float | None, then: Callable[[], None]
    ) -> Watched:
        raise NotImplementedError


class AiohttpDriver(AsyncDriver):
    """A plain ``aiohttp.ClientSession`` (``session``: how to make one on the running loop)."""

    def __init__(self, run: Any, base: str, session: Callable[[], Any]) -> None:
        super().__init__(run, base)
        self.session = session

    async def _answer(self, response: Any) -> Answer:
        body = await response.read()
        return Answer(
            response.status,
            response.headers.get("Content-Type"),
            body,
            _headers(response.headers.items()),
        )

    async def aget(self, path: str) -> Answer:
        import aiohttp

        session = self.session()
        try:
            timeout = aiohttp.ClientTimeout(total=HANG_GUARD)
            response = await session.request("GET", self.base + path, timeout=timeout)
            try:
                return await self._answer(response)
            finally:
                response.release()
        finally:
            await session.close()

    async def apost(self, path: str, body: dict[str, Any]) -> Answer:
        import aiohttp

        session = self.session()
        try:
            timeout = aiohttp.ClientTimeout(total=HANG_GUARD)
            response = await session.request("POST", self.base + path, json=body, timeout=timeout)
            try:
                return await self._answer(response)
            finally:
                response.release()
        finally:
            await session.close()

    async def awatch(
        self, path: str, read_timeout: float | None, then: Callable[[], None]
    ) -> Watched:
        import aiohttp

        session = self.session()
        try:
            timeout = aiohttp.ClientTimeout(sock_read=read_timeout or HANG_GUARD)
            response = await session.request("GET", self.base + path, timeout=timeout)
            reader = Reader(then)
            try:
                while True:
                    chunk = await response.content.readany()
                    if not chunk:
                        return reader.done(None)
                    reader.feed(chunk)
            except Exception as error:
                return reader.done(error)
            finally:
                response.release()
        finally:
            await session.close()


class AsyncHttpxDriver(AsyncDriver):
    def __init__(self, module: Any, run: Any, base: str) -> None:
        super().__init__(run, base)
        self.module = module

    def _client(self) -> Any:
        return self.module.AsyncClient(base_url=self.base, timeout=HANG_GUARD)

    async def _answer(self, response: Any) -> Answer:
        return Answer(
            response.status_code,
            response.headers.get("Content-Type"),
            response.content,
            _headers(response.headers.items()),
        )

    async def aget(self, path: str) -> Answer:
        async with self._client() as client:
            return await self._answer(await client.get(path))

    async def apost(self, path: str, body: dict[str, Any]) -> Answer:
        async with self._client() as client:
            return await self._answer(await client.post(path, json=body))

    async def awatch(
        self, path: str, read_timeout: float | None, then: Callable[[], None]
    ) -> Watched:
        timeout = self.module.Timeout(HANG_GUARD, read=read_timeout or HANG_GUARD)
        async with (
            self._client() as client,
            client.stream("GET", path, timeout=timeout) as response,
        ):
            reader = Reader(then)
            try:
                async for chunk in response.aiter_raw():
                    reader.feed(chunk)
            except Exception as error:
                return reader.done(error)
        return reader.done(None)


# -- the two ways in -----------------------------------------------------------------------------
def _aio_runner(server: APIServer) -> Callable[[Callable[[], Any]], Any]:
    from kubesim.sched import aio

    def run(main: Callable[[], Any]) -> Any:
        return aio.run(main, seed=0, clock=server.clock, trace=server.trace)

    return run


def _asyncio_runner(main: Callable[[], Any]) -> Any:
    return asyncio.run(main())


KUBESIM = "http://kubesim.invalid"


def in_process(library: str, server: APIServer) -> Driver:
    """The driver for ``library`` through kubesim's in-process transport (under
    ``patch_http_clients`` for the libraries it patches: the client is built as a user's)."""
    if library == "kubernetes":
        from kubesim.transport.kubernetes_client import PoolManager

        return Urllib3Driver(PoolManager(server), KUBESIM)
    if library == "urllib3":
        import urllib3

        return Urllib3Driver(urllib3.PoolManager(), KUBESIM)
    if library == "kubernetes_asyncio":
        from kubesim.transport.kubernetes_asyncio_client import FakeSession

        return AiohttpDriver(_aio_runner(server), KUBESIM, lambda: FakeSession(server))
    if library == "aiohttp":
        import aiohttp

        return AiohttpDriver(_aio_runner(server), KUBESIM, aiohttp.ClientSession)
    if library == "requests":
        return RequestsDriver(KUBESIM)
    module_name, _, flavour = library.partition("-")
    module = pytest.importorskip(module_name)
    if flavour == "async":
        return AsyncHttpxDriver(module, _aio_runner(server), KUBESIM)
    return HttpxDriver(module, KUBESIM)


def over_socket(library: str, url: str) -> Driver:
    if library in ("kubernetes", "urllib3"):
        import urllib3

        return Urllib3Driver(urllib3.PoolManager(), url)
    if library in ("kubernetes_asyncio", "aiohttp"):
        import aiohttp

        return AiohttpDriver(_asyncio_runner, url, aiohttp.ClientSession)
    if library == "requests":
        return RequestsDriver(url)
    module_name, _, flavour = library.partition("-")
    module = pytest.importorskip(module_name)
    if flavour == "async":
        return AsyncHttpxDriver(module, _asyncio_runner, url)
    return HttpxDriver(module, url)


# -- the exercise --------------------------------------------------------------------------------
def populated(**options: Any) -> APIServer:
    server = APIServer(seed=1, **options)
    for name in ("web-0", "web-1", "web-2"):
        server.create("pods", make_pod(name, "default"), namespace="default")
    server.delete("pods", "web-2", namespace="default")
    server.create("namespaces", {"metadata": {"name": "quiet"}})
    server.compact()  # resourceVersion 1 is history now: a list at it is 410 Expired
    return server


@dataclass
class Outcomes:
    answers: dict[str, Answer] = field(default_factory=dict)
    watches: dict[str, Watched] = field(default_factory=dict)


def exercise(driver: Driver, server: APIServer, read_timeout: float) -> Outcomes:
    done = Outcomes()
    done.answers["list"] = driver.get(PODS)
    done.answers["create"] = driver.post(PODS, make_pod("web-3", "default"))
    done.answers["not found"] = driver.get(f"{PODS}/nope")
    done.answers["bad selector"] = driver.get(f"{PODS}?labelSelector=a%20in%20(")
    done.answers["expired"] = driver.get(f"{PODS}?resourceVersion=1&resourceVersionMatch=Exact")
    done.watches["expired watch"] = driver.watch(f"{PODS}?watch=1", None, server.expire_watches)
    done.watches["dropped watch"] = driver.watch(f"{PODS}?watch=1", None, server.drop_watches)
    quiet = f"/api/v1/namespaces/quiet/pods?watch=1&resourceVersion={server.resource_version}"
    done.watches["silent watch"] = driver.watch(quiet, read_timeout, lambda: None)
    return done


@contextlib.contextmanager
def served_over_socket() -> Iterator[tuple[APIServer, str]]:
    server = populated()
    with HTTPTransport(server, host="127.0.0.1") as transport:
        yield server, transport.url


LIBRARIES = [
    "kubernetes",
    "urllib3",
    "kubernetes_asyncio",
    "aiohttp",
    "httpx",
    "httpx-async",
    "httpx2",
    "httpx2-async",
    "requests",
]
REQUIRED = {
    "kubernetes": "urllib3",
    "urllib3": "urllib3",
    "kubernetes_asyncio": "aiohttp",
    "aiohttp": "aiohttp",
    "requests": "requests",
}


def _both(library: str) -> tuple[Outcomes, Outcomes]:
    pytest.importorskip(REQUIRED.get(library, library.partition("-")[0]))
    server = populated(wait_policy=AutojumpWait())
    with patch_http_clients(server):
        inside = exercise(in_process(library, server), server, IN_PROCESS_READ_TIMEOUT)
    with served_over_socket() as (socket_server, url):
        outside = exercise(over_socket(library, url), socket_server, SOCKET_READ_TIMEOUT)
    return inside, outside


_cache: dict[str, tuple[Outcomes, Outcomes]] = {}


@pytest.fixture(params=LIBRARIES)
def outcomes(request: pytest.FixtureRequest) -> tuple[str, Outcomes, Outcomes]:
    library = str(request.param)
    if library not in _cache:
        _cache[library] = _both(library)
    return (library, *_cache[library])


def test_answers_are_the_same_bytes_as_over_a_socket(
    outcomes: tuple[str, Outcomes, Outcomes],
) -> None:
    library, inside, outside = outcomes
    for name, answer in inside.answers.items():
        theirs = outside.answers[name]
        assert (answer.status, answer.content_type) == (theirs.status, theirs.content_type), name
        assert answer.body == theirs.body, name
        if library not in ("kubernetes", "kubernetes_asyncio"):  # kubesim's older fakes: no
            assert answer.headers == theirs.headers, name  # Cache-Control, Content-Length
    assert inside.answers["list"].status == 200
    assert inside.answers["list"].body.count(b'"name":"web-') == 2
    assert inside.answers["create"].status == 201


@pytest.mark.parametrize(
    ("name", "code", "reason"),
    [
        ("not found", 404, "NotFound"),
        ("bad selector", 400, "BadRequest"),
        ("expired", 410, "Expired"),
    ],
)
def test_errors_are_status_objects_with_their_code_and_reason(
    outcomes: tuple[str, Outcomes, Outcomes], name: str, code: int, reason: str
) -> None:
    import json

    _library, inside, _outside = outcomes
    answer = inside.answers[name]
    status = json.loads(answer.body)
    assert answer.status == code
    assert (status["kind"], status["code"], status["reason"]) == ("Status", code, reason)


def test_a_watch_delivers_its_events_then_ends_cleanly_on_expiry(
    outcomes: tuple[str, Outcomes, Outcomes],
) -> None:
    _library, inside, outside = outcomes
    watched = inside.watches["expired watch"]
    assert watched.error is None
    assert len(watched.lines) == 3
    assert all(line.startswith(b'{"type":"ADDED",') for line in watched.lines)
    assert watched == outside.watches["expired watch"]


# The library's own error for a body cut short, and for a read that outlasts its timeout.
def _expected(library: str) -> tuple[type[BaseException], type[BaseException]]:
    if library in ("kubernetes", "urllib3"):
        import urllib3

        return urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError
    if library in ("kubernetes_asyncio", "aiohttp"):
        import aiohttp

        timeout = getattr(aiohttp, "SocketTimeoutError", aiohttp.ServerTimeoutError)
        return aiohttp.ClientPayloadError, timeout
    if library == "requests":
        import requests

        return requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError
    module = pytest.importorskip(library.partition("-")[0])
    return module.RemoteProtocolError, module.ReadTimeout


def test_a_cut_watch_raises_the_librarys_incomplete_body_error(
    outcomes: tuple[str, Outcomes, Outcomes],
) -> None:
    library, inside, outside = outcomes
    cut, _ = _expected(library)
    watched, theirs = inside.watches["dropped watch"], outside.watches["dropped watch"]
    assert type(watched.error) is type(theirs.error), (watched.error, theirs.error)
    assert isinstance(watched.error, cut), repr(watched.error)
    if library != "kubernetes_asyncio":  # its session's message leaves aiohttp's cause out
        assert str(watched.error) == str(theirs.error)
    assert watched.lines == theirs.lines
    assert len(watched.lines) == 3


def test_a_read_timeout_raises_the_librarys_timeout_error(
    outcomes: tuple[str, Outcomes, Outcomes],
) -> None:
    library, inside, outside = outcomes
    _, timed_out = _expected(library)
    watched, theirs = inside.watches["silent watch"], outside.watches["silent watch"]
    assert type(watched.error) is type(theirs.error), (watched.error, theirs.error)
    assert isinstance(watched.error, timed_out), repr(watched.error)
    if library.startswith("httpx") or library == "aiohttp":  # urllib3's names its pool
        assert str(watched.error) == str(theirs.error)
    assert watched.lines == theirs.lines == []


# -- followed logs: open while the container runs, then ended or cut -------------------------
def _running(**options: Any) -> APIServer:
    from kubesim.cluster import Cluster
    from kubesim.cluster.kubelet import CONTAINER_START_SECONDS

    server = Cluster(seed=1, nodes=1, **options)
    for name in ("ends", "cut"):
        spec = {"containers": [{"name": "main", "image": "busybox"}]}
        server.create("pods", {"metadata": {"name": name}, "spec": spec}, namespace="default")
    server.advance(CONTAINER_START_SECONDS)
    return server


def _follow(driver: Driver, server: APIServer) -> dict[str, Watched]:
    def stop() -> None:
        server.delete("pods", "ends", namespace="default", grace_period_seconds=0)

    return {
        "ended": driver.watch(f"{PODS}/ends/log?follow=true", None, AtOnce(stop)),
        "cut": driver.watch(f"{PODS}/cut/log?follow=true", None, AtOnce(server.drop_watches)),
    }


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_followed_log_ends_with_its_container_and_is_cut_as_over_a_socket(
    library: str,
) -> None:
    pytest.importorskip(REQUIRED.get(library, library.partition("-")[0]))
    server = _running(wait_policy=AutojumpWait())
    with patch_http_clients(server):
        inside = _follow(in_process(library, server), server)
    socket_server = _running()
    with HTTPTransport(socket_server, host="127.0.0.1") as transport:
        outside = _follow(over_socket(library, transport.url), socket_server)
    assert inside["ended"] == outside["ended"] == Watched([], None)
    cut, _ = _expected(library)
    assert type(inside["cut"].error) is type(outside["cut"].error), (inside, outside)
    assert isinstance(inside["cut"].error, cut), repr(inside["cut"].error)
    assert inside["cut"].lines == outside["cut"].lines == []


# -- connections reset or refused: each library's error, and its retries ---------------------
def _root(error: BaseException) -> BaseException:
    """The operating system's error at the bottom of a library's (through causes, urllib3's
    ``reason`` and ``ProtocolError`` arguments)."""
    seen = error
    for _ in range(8):
        below = seen.__cause__ or getattr(seen, "reason", None)
        if not isinstance(below, BaseException):
            args = [a for a in getattr(seen, "args", ()) if isinstance(a, BaseException)]
            below = args[0] if args else seen.__context__
        if below is None:
            return seen
        seen = below
    return seen


def _connecting(driver: Driver, server: APIServer, fault: Callable[[], None], post: bool) -> Any:
    """What the library made of ``fault``: the status it got, or its error's type and the
    operating system's error below it; and how many requests reached the server."""
    fault()
    before = server.request_count
    try:
        answer = driver.post(PODS, make_pod("web-9", "default")) if post else driver.get(PODS)
    except Exception as error:
        root = _root(error)
        return type(error).__name__, type(root).__name__, server.request_count - before
    return answer.status, None, server.request_count - before


CONNECTION_FAULTS = {
    "one reset list": (lambda s: s.reset_connections(1, verbs=["list"]), False),
    "four reset lists": (lambda s: s.reset_connections(4, verbs=["list"]), False),
    "one reset create": (lambda s: s.reset_connections(1, verbs=["create"]), True),
}


@pytest.mark.parametrize("fault", list(CONNECTION_FAULTS))
@pytest.mark.parametrize("library", LIBRARIES)
def test_a_reset_connection_is_the_librarys_error_and_retried_as_over_a_socket(
    library: str, fault: str
) -> None:
    pytest.importorskip(REQUIRED.get(library, library.partition("-")[0]))
    inject, post = CONNECTION_FAULTS[fault]
    server = populated(wait_policy=AutojumpWait())
    with patch_http_clients(server):
        inside = _connecting(in_process(library, server), server, lambda: inject(server), post)
    with served_over_socket() as (socket_server, url):
        outside = _connecting(
            over_socket(library, url), socket_server, lambda: inject(socket_server), post
        )
    assert inside == outside
    retrying = library in ("kubernetes", "urllib3", "kubernetes_asyncio", "aiohttp")
    if fault == "one reset list" and retrying:
        assert inside == (200, None, 2)  # asked again (urllib3's Retry; aiohttp's once)
    elif fault == "one reset create":
        assert inside[1:] == ("ConnectionResetError", 1)  # a POST is never asked again
    else:
        assert inside[1] == "ConnectionResetError", inside


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_refused_connection_is_the_librarys_error_as_against_a_closed_port(
    library: str,
) -> None:
    import socket

    pytest.importorskip(REQUIRED.get(library, library.partition("-")[0]))
    server = populated(wait_policy=AutojumpWait())
    with patch_http_clients(server):
        inside = _connecting(
            in_process(library, server),
            server,
            lambda: server.refuse_connections(seconds=60),
            False,
        )
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    probe.close()  # nothing listens there now: every connect is refused
    outside = _connecting(over_socket(library, closed), server, lambda: None, False)
    assert inside == outside
    assert inside[1:] == ("ConnectionRefusedError", 0)


# -- errors in a row: what a library's own retries absorb -------------------------------------
def _in_a_row(driver: Driver, server: APIServer, code: int) -> list[tuple[int, int, int]]:
    """For 1, 3 and 4 errors in a row: the status a GET saw, and how many requests it took."""
    seen: list[tuple[int, int, int]] = []
    for errors in (1, 3, 4):
        before = server.request_count
        server.fail_requests(errors, code=code, verbs=("list",), retry_after=1)
        seen.append((errors, driver.get(PODS).status, server.request_count - before))
        server.request_failures.clear()
    return seen


# Libraries that ask again by themselves: urllib3's default Retry(3) repeats a GET answered
# 413, 429 or 503 with Retry-After, after sleeping it. requests mounts Retry(0) (no retry), and
# httpx and aiohttp have none: the first error reaches the caller.
_RETRYING = ("kubernetes", "urllib3")


@pytest.mark.parametrize("code", [429, 503, 500])
@pytest.mark.parametrize("library", LIBRARIES)
def test_errors_in_a_row_reach_the_client_as_over_a_socket(
    library: str, code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip(REQUIRED.get(library, library.partition("-")[0]))
    slept: list[float] = []
    with contextlib.suppress(ImportError):
        import urllib3.util.retry

        # Retry-After is slept between tries: recorded, not slept, on both sides.
        monkeypatch.setattr(urllib3.util.retry.time, "sleep", slept.append)
    server = populated(wait_policy=AutojumpWait())
    with patch_http_clients(server):
        inside = _in_a_row(in_process(library, server), server, code)
    inside_slept, slept[:] = list(slept), []
    with served_over_socket() as (socket_server, url):
        outside = _in_a_row(over_socket(library, url), socket_server, code)
    assert (inside, inside_slept) == (outside, slept)
    if library in _RETRYING and code in (429, 503):
        assert inside == [(1, 200, 2), (3, 200, 4), (4, code, 4)]
    else:
        assert inside == [(1, code, 1), (3, code, 1), (4, code, 1)]


# -- routing: which server a client built under the patch reaches -------------------------------
def test_a_client_reaches_the_server_routed_when_it_sends_and_none_after() -> None:
    httpx = pytest.importorskip("httpx")
    from kubesim.transport.routing import NoServerRouted

    first, second = populated(), APIServer(seed=2)
    with patch_http_clients(first):
        client = httpx.Client(base_url=KUBESIM)  # as kr8s caches one across simulations
        assert client.get(PODS).json()["items"]
    with patch_http_clients(second):
        assert client.get(PODS).json()["items"] == []  # the server of the block it is sent in
    with pytest.raises(NoServerRouted, match="no kubesim server routed"):
        client.get(PODS)


def test_a_library_without_the_seam_is_named() -> None:
    import types

    from kubesim.transport.httpx_transport import transport_classes
    from kubesim.transport.routing import UnsupportedClient

    old = types.ModuleType("httpx_old")
    with pytest.raises(UnsupportedClient, match=r"httpx_old .* has no BaseTransport"):
        transport_classes(old)


def test_a_plain_urllib3_response_is_urllib3s_and_its_socket_cuts_the_watch() -> None:
    # Patroni's ObjectCache closes a watch's response only if it is an ``urllib3.HTTPResponse``,
    # and stops a watch by shutting down ``response.connection.sock``.
    import urllib3

    server = populated(wait_policy=AutojumpWait())
    with patch_http_clients(server):
        pool = urllib3.PoolManager()
        assert isinstance(pool.request("GET", KUBESIM + PODS), urllib3.HTTPResponse)
        response = pool.request("GET", KUBESIM + PODS + "?watch=1", preload_content=False)
        assert isinstance(response, urllib3.HTTPResponse)
        chunks = response.read_chunked(decode_content=False)
        assert next(chunks).startswith(b'{"type":"ADDED",')
        response.connection.sock.shutdown(2)
        with pytest.raises(urllib3.exceptions.ProtocolError, match="ended prematurely"):
            list(chunks)
        response.release_conn()
