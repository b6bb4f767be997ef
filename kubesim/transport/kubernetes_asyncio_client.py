"""In-process transport for ``kubernetes_asyncio``: no sockets, same wire, virtual-time waits.

``kubernetes_asyncio`` builds every request itself (URL, query, JSON body, patch content type)
in ``RESTClientObject.request`` and hands it to ``rest_client.pool_manager.request(method=...,
url=..., headers=..., timeout=aiohttp.ClientTimeout, data=str | bytes)``, an
``aiohttp.ClientSession``. :class:`FakeSession` stands in for that session and maps each request
onto :func:`kubesim.wire.routes.handle`. Its :class:`FakeResponse` has the part of
``aiohttp.ClientResponse`` the client touches: ``status``, ``reason``, ``headers`` (case
insensitive), ``await read()/text()/json()``, ``release()``, ``close()``, and ``content``, a
:class:`FakeStreamReader` with ``readline()`` (what ``kubernetes_asyncio.watch.Watch`` reads),
``readany()``, ``read()`` and line iteration. Code that reads raw responses
(``_preload_content=False``) the way aiohttp users do also finds ``ok``, ``raise_for_status()``
(``aiohttp.ClientResponseError`` with ``request_info``, ``history`` and ``headers``), ``url`` and
``real_url`` (``yarl.URL``), ``method``, ``request_info``, ``content_type``, ``charset``,
``get_encoding()``, ``content_length``, ``version`` and ``wait_for_close()``; ``read()`` keeps the
body, so ``json()`` after ``read()`` works as on aiohttp.

Waiting. A watch read that finds nothing ready awaits a future on the running loop; the
session registers one listener in ``server.change_listeners`` that resolves those futures
after every write, watch end, bookmark and fault. The server's own timers (watch timeouts,
bookmarks) live on ``server.clock``: run the program with
``kubesim.sched.aio.run(main, seed=..., clock=server.clock)`` and the loop jumps virtual time
to them whenever every task waits, so an hour of watching with expiries takes milliseconds of
wall time and the same seed gives the same events and the same ``server.trace``. Under any other
loop (stock ``asyncio.run``, or a loop on another clock) virtual time follows the loop's
``time()``: each request and each wait first advances the server by the loop time that passed,
and a waiting read schedules ``loop.call_at`` for the server clock's next deadline, so a
``timeout_seconds=1`` watch ends after about a second. (One follower per server: do not also
block threads of the official in-process client on the same server, whose waits follow the wall
clock too.) A listener called from another thread wakes the loop through
``call_soon_threadsafe``.

Client timeouts are honoured on the loop's clock: ``_request_timeout=(connect, read)`` raises
``aiohttp.SocketTimeoutError`` (an ``asyncio.TimeoutError``, which ``Watch`` treats as "reconnect"
when no ``timeout_seconds`` was given) after ``read`` seconds with no data, and a numeric
``_request_timeout`` raises ``asyncio.TimeoutError`` once the total has passed.

Ends of a watch, as the client sees them:

- clean end (server timeout, ``server.expire_watches()``): ``readline()`` returns ``b""``;
  ``Watch`` stops iterating when ``timeout_seconds`` was given, else re-watches from its last RV.
- abrupt drop (``server.drop_watches()``): ``readline()`` raises
  ``aiohttp.ClientPayloadError("Response payload is not completed")``, what aiohttp raises for
  a chunked body cut without its terminating chunk. ``Watch`` does not catch it: it closes
  itself and the error reaches the caller's ``async for``.

Usage::

    server = kubesim.APIServer(seed=1)

    async def main() -> None:
        async with kubernetes_asyncio_client(server) as api:
            v1 = kubernetes_asyncio.client.CoreV1Api(api)
            async with kubernetes_asyncio.watch.Watch() as w:
                async for event in w.stream(v1.list_namespaced_pod, "default",
                                            timeout_seconds=60):
                    ...

    kubesim.sched.aio.run(main, seed=1, clock=server.clock)

Close the client (``async with``, or ``await api.close()``): that unregisters the listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import threading
import urllib.parse
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from kubesim._core.untraced import untraced
from kubesim.apiserver.live import ClockFollower
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.watch import StreamServer, WatchDropped, WatchReadTimeout, WatchStream
from kubesim.transport.connection_errors import (
    AIOHTTP_IDEMPOTENT,
    aiohttp_connector_error,
    aiohttp_reset_error,
    connection_key,
    refusal,
)
from kubesim.wire.routes import Request, handle

_dumps = json.dumps  # FakeSession.request's ``json`` argument shadows the module there

DEFAULT_HOST = "http://kubesim.invalid"


def _require_kubernetes_asyncio() -> Any:
    try:
        import kubernetes_asyncio
        import kubernetes_asyncio.client
        import kubernetes_asyncio.client.rest
    except ImportError as exc:
        raise ImportError(
            "kubesim's in-process transport for kubernetes_asyncio needs the 'kubernetes_asyncio' "
            "package: pip install 'kubesim[asyncio]'"
        ) from exc
    return kubernetes_asyncio


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# Per server, the follower of the loop its clients run on (one per server, so two clients on a
# stock loop do not advance the clock twice).
_loop_followers: weakref.WeakKeyDictionary[
    StreamServer, tuple[weakref.ref[asyncio.AbstractEventLoop], ClockFollower]
] = weakref.WeakKeyDictionary()


def _follower(server: StreamServer, loop: asyncio.AbstractEventLoop) -> ClockFollower | None:
    """How ``server``'s clock follows ``loop``; None when the loop runs on that very clock."""
    if getattr(loop, "clock", None) is server.clock:
        return None  # kubesim.sched.aio on the server's clock: it jumps time itself
    with server.lock:
        entry = _loop_followers.get(server)
        if entry is None or entry[0]() is not loop:
            entry = (weakref.ref(loop), ClockFollower(loop.time))
            _loop_followers[server] = entry
        return entry[1]


def _on_deadline(
    server: StreamServer, follower: ClockFollower, future: asyncio.Future[None]
) -> None:
    follower.catch_up(server)  # fires the timer that fell due (a watch timeout, a bookmark)
    _resolve(future)  # re-check the stream whether or not that timer touched it


class _Wakeups:
    """Futures of watch reads waiting for the server to change; one server listener for all."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._registered = False

    def register(self) -> None:
        with self.server.lock:
            if not self._registered:
                self.server.change_listeners.append(self.notify)
                self._registered = True

    def unregister(self) -> None:
        with self.server.lock:
            if self._registered:
                self.server.change_listeners.remove(self.notify)
                self._registered = False

    def add(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
        with self._lock:
            self._waiters.append((loop, future))

    def discard(self, future: asyncio.Future[None]) -> None:
        with self._lock:
            self._waiters = [(lp, f) for lp, f in self._waiters if f is not future]

    def notify(self) -> None:
        """The server changed (called with its lock held, from any thread)."""
        with self._lock:
            waiters, self._waiters = self._waiters, []
        current = _running_loop()
        for loop, future in waiters:
            if loop is current:
                _resolve(future)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def wait_for_change(
    wakeups: _Wakeups,
    stream: WatchStream,
    *,
    read_timeout: float | None = None,
    deadline: float | None = None,
) -> None:
    """Return once the server changed (or might have) since ``stream`` had nothing to read.

    Waits on the running loop's clock: :class:`~kubesim.apiserver.watch.WatchReadTimeout` after
    ``read_timeout`` seconds, ``asyncio.TimeoutError`` at ``deadline`` (a ``loop.time()``), the
    caller's total timeout. On a loop that is not on the server's clock, the server's timers
    (watch timeouts, bookmarks) are scheduled on the loop so they fire in its time.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    wakeups.add(loop, future)
    server = stream.server
    follower = _follower(server, loop)
    deadline_handle: asyncio.TimerHandle | None = None
    try:
        if follower is not None:
            follower.catch_up(server)  # may end the watch (its timeout fell due)
        if stream.ready():  # changed between the poll and the registration
            return
        if follower is not None:
            until = follower.seconds_until_next_deadline(server)
            if until is not None:
                deadline_handle = loop.call_later(until, _on_deadline, server, follower, future)
        timeout = read_timeout
        total_left = None if deadline is None else deadline - loop.time()
        if total_left is not None and (timeout is None or total_left < timeout):
            timeout = max(total_left, 0.0)
        if timeout is None:
            await future
            return
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            if total_left is not None and timeout >= total_left:
                raise
            raise WatchReadTimeout(f"read timed out after {timeout:g} s") from None
    finally:
        wakeups.discard(future)
        if deadline_handle is not None:
            deadline_handle.cancel()


class FakeStreamReader:
    """The subset of ``aiohttp.StreamReader`` read by watch consumers."""

    def __init__(self, response: FakeResponse) -> None:
        self._response = response
        self._buffer = bytearray()
        self._eof = False

    def at_eof(self) -> bool:
        return self._eof and not self._buffer

    async def _fill(self) -> None:
        """Append at least one chunk to the buffer, or reach the end."""
        body = self._response._body
        if not isinstance(body, WatchStream):
            if not self._eof:
                self._buffer += body
                self._eof = True
            return
        while not self._eof:
            chunk = self._poll(body)
            if chunk is None:
                await self._response._wait_for_change(body)
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
            return

    def _poll(self, body: WatchStream) -> bytes | None:
        import aiohttp

        try:
            return body.poll()
        except WatchDropped as exc:
            self._eof = True
            raise aiohttp.ClientPayloadError("Response payload is not completed") from exc

    async def readline(self) -> bytes:
        """One line with its ``\\n``; the unterminated rest at the end; ``b""`` after the end."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[: newline + 1])
                del self._buffer[: newline + 1]
                return line
            if self._eof:
                rest = bytes(self._buffer)
                self._buffer.clear()
                return rest
            await self._fill()

    async def readany(self) -> bytes:
        if not self._buffer and not self._eof:
            await self._fill()
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    async def read(self, n: int = -1) -> bytes:
        if n < 0:
            while not self._eof:
                await self._fill()
            data = bytes(self._buffer)
            self._buffer.clear()
            return data
        if not self._buffer and not self._eof:
            await self._fill()
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[bytes]:
        while True:
            line = await self.readline()
            if not line:
                return
            yield line

    async def iter_any(self) -> AsyncIterator[bytes]:
        while True:
            data = await self.readany()
            if not data:
                return
            yield data

    async def iter_chunked(self, n: int) -> AsyncIterator[bytes]:
        """Chunks of at most ``n`` bytes as they arrive (kopf reads watches this way)."""
        while True:
            data = await self.read(n)
            if not data:
                return
            yield data


class FakeResponse:
    """The subset of ``aiohttp.ClientResponse`` that ``kubernetes_asyncio`` touches."""

    def __init__(
        self,
        session: FakeSession,
        method: str,
        url: str,
        status: int,
        content_type: str,
        body: bytes | WatchStream,
        *,
        read_timeout: float | None,
        deadline: float | None,
        request_headers: dict[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        import aiohttp
        from multidict import CIMultiDict, CIMultiDictProxy
        from yarl import URL

        self._session = session
        self.method = method
        self.url = URL(url)
        self.real_url = self.url
        self.status = status
        try:
            self.reason = http.HTTPStatus(status).phrase
        except ValueError:
            self.reason = ""
        self.headers = CIMultiDictProxy(
            CIMultiDict({"Content-Type": content_type, **(headers or {})})
        )
        media_type, _, parameters = content_type.partition(";")
        self.content_type = media_type.strip()
        charset = parameters.strip().partition("charset=")[2].strip() if parameters else ""
        self.charset: str | None = charset or None
        self.content_length = len(body) if isinstance(body, bytes) else None
        self.version = aiohttp.HttpVersion11
        self.history: tuple[Any, ...] = ()
        self.request_info = aiohttp.RequestInfo(
            self.url, method, CIMultiDictProxy(CIMultiDict(request_headers)), self.url
        )
        self._in_context = False
        self._read: bytes | None = None
        self._body = body
        self._read_timeout = read_timeout
        self._deadline = deadline
        self.closed = False
        self.content = FakeStreamReader(self)

    async def _wait_for_change(self, stream: WatchStream) -> None:
        """Return once the server changed (or might have); honour the client timeouts."""
        try:
            await wait_for_change(
                self._session._wakeups,
                stream,
                read_timeout=self._read_timeout,
                deadline=self._deadline,
            )
        except WatchReadTimeout:
            import aiohttp

            error = getattr(aiohttp, "SocketTimeoutError", aiohttp.ServerTimeoutError)
            raise error("Timeout on reading data from socket") from None

    @property
    def ok(self) -> bool:
        """``status < 400``, as aiohttp's (not a check for ``200 OK``)."""
        return self.status < 400

    def get_encoding(self) -> str:
        return self.charset or "utf-8"  # JSON's default (RFC 7159), as aiohttp decides

    async def read(self) -> bytes:
        """The whole body; kept, so later ``read()``/``text()``/``json()`` see it again."""
        if self._read is None:
            self._read = await self.content.read()
        return self._read

    async def text(self, encoding: str | None = None, errors: str = "strict") -> str:
        return (await self.read()).decode(encoding or self.get_encoding(), errors)

    async def json(self, *, loads: Any = json.loads, **_: Any) -> Any:
        return loads(await self.text())

    async def wait_for_close(self) -> None:
        self.release()

    def release(self) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True
        if isinstance(self._body, WatchStream):
            self._body.close()

    def raise_for_status(self) -> None:
        """aiohttp's: below 400 nothing; else release (outside ``async with``) and raise."""
        if not self.ok:
            import aiohttp

            if not self._in_context:
                self.release()
            raise aiohttp.ClientResponseError(
                self.request_info,
                self.history,
                status=self.status,
                message=self.reason,
                headers=self.headers,
            )

    async def __aenter__(self) -> FakeResponse:
        self._in_context = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._in_context = False
        self.release()


class FakeSession:
    """Stands in for the ``aiohttp.ClientSession`` in ``RESTClientObject.pool_manager``."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self._wakeups = _Wakeups(server)
        self._wakeups.register()
        self.closed = False
        # Default headers, as ``aiohttp.ClientSession.headers``: kopf sets its User-Agent here.
        self.headers: dict[str, str] = {}

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Any = None,
        data: Any = None,
        json: Any = None,
        timeout: Any = None,
        **_: Any,
    ) -> FakeResponse:
        if self.closed:
            raise RuntimeError("Session is closed")
        headers = {**self.headers, **dict(headers or {})}
        if json is not None:
            if data is not None:
                raise ValueError("data and json parameters can not be used at the same time")
            # aiohttp's ``json=``: the body serialised with json.dumps, as application/json.
            data = _dumps(json)
            headers.setdefault("Content-Type", "application/json")
        # A request is in flight for at least one turn of the loop, as over aiohttp (which
        # suspends to acquire a connection and to read the response): other tasks run
        # meanwhile, and a consumer can see the store between sending a list and getting it.
        await asyncio.sleep(0)
        if data is None:
            payload = b""
        elif isinstance(data, bytes):
            payload = data
        elif isinstance(data, str):
            payload = data.encode()
        else:
            raise TypeError(
                f"kubesim's in-process session cannot send a {type(data).__name__} body"
            )
        parts = urllib.parse.urlsplit(url)
        request = Request(method.upper(), parts.path or "/", parts.query, headers, payload)
        read_timeout = getattr(timeout, "sock_read", None)
        total = getattr(timeout, "total", None)
        loop = asyncio.get_running_loop()
        deadline = None if total is None else loop.time() + total
        follower = _follower(self.server, loop)
        # aiohttp's session asks an idempotent request once more when its connection fails.
        attempts = 2 if request.method in AIOHTTP_IDEMPOTENT else 1
        for attempt in range(attempts):
            if refusal(self.server) is not None:
                host, port = parts.hostname or "", parts.port or 80
                key = connection_key(host, port, parts.scheme == "https")
                raise aiohttp_connector_error(key, host, port)
            if follower is not None:
                follower.catch_up(self.server)  # a watch opened now times out from now
            response = untraced(handle, self.server, request, asks_again=follower is None)
            if response.wait and follower is None:
                # On virtual time the client waits as long as the watch cache did, then gets
                # what the cache says by then (kubesim.wire.routes.Response.wait).
                await asyncio.sleep(response.wait)
                response = untraced(handle, self.server, request, waited=True)
            if not response.reset:
                break
            if attempt + 1 == attempts:
                raise aiohttp_reset_error()
        return FakeResponse(
            self,
            method.upper(),
            url,
            response.status,
            response.content_type,
            response.body,
            read_timeout=read_timeout,
            deadline=deadline,
            request_headers={str(k): str(v) for k, v in headers.items()},
            headers=response.headers,
        )

    async def close(self) -> None:
        self.closed = True
        self._wakeups.unregister()


class _AiohttpShim:
    """Stands in for the ``aiohttp`` module inside ``kubernetes_asyncio.client.rest``.

    ``RESTClientObject.__init__`` builds its session with ``aiohttp.ClientSession(...)``; the shim
    hands it a :class:`FakeSession` instead (and no connector), so no real session exists to be
    left unclosed. Everything else (``ClientTimeout``, ``FormData``) is the real module's.
    """

    def __init__(self, server: APIServer, real: Any) -> None:
        self._server = server
        self._real = real

    def TCPConnector(self, *args: Any, **kwargs: Any) -> None:
        return None

    def ClientSession(self, *args: Any, headers: Any = None, **kwargs: Any) -> FakeSession:
        session = FakeSession(self._server)
        session.headers.update(headers or {})
        return session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _SslShim:
    """Stands in for the ``ssl`` module inside ``kubernetes_asyncio.client.rest``.

    ``RESTClientObject.__init__`` builds a TLS context for its connector with
    ``ssl.create_default_context(cafile=...)``, which loads the system's CA bundle: about 17 ms
    of CPU per client, and a store that makes a client per watch (kubespawner's reflector) spent
    most of a property test there. The in-process session never speaks TLS, so the context
    here has no default CAs; a ``cafile`` the configuration names is still loaded, so a missing
    one fails as it would. Everything else is the real module's.
    """

    def __init__(self, real: Any) -> None:
        self._real = real

    def create_default_context(self, purpose: Any = None, *, cafile: Any = None, **_: Any) -> Any:
        context = self._real.SSLContext(self._real.PROTOCOL_TLS_CLIENT)
        if cafile is not None:
            context.load_verify_locations(cafile)
        return context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextlib.contextmanager
def _sessions_from(server: APIServer) -> Iterator[None]:
    rest = _require_kubernetes_asyncio().client.rest
    previous, previous_ssl = rest.aiohttp, rest.ssl
    real = previous._real if isinstance(previous, _AiohttpShim) else previous
    real_ssl = previous_ssl._real if isinstance(previous_ssl, _SslShim) else previous_ssl
    rest.aiohttp = _AiohttpShim(server, real)
    rest.ssl = _SslShim(real_ssl)
    try:
        yield
    finally:
        # The previous values, not the real modules: blocks nest (a client made for a store
        # inside patch_kubernetes_asyncio must leave the outer patch in place).
        rest.aiohttp, rest.ssl = previous, previous_ssl


def kubernetes_asyncio_client(server: APIServer, *, host: str = DEFAULT_HOST) -> Any:
    """A ``kubernetes_asyncio.client.ApiClient`` whose every request goes to ``server``.

    ``CoreV1Api(client)``, ``kubernetes_asyncio.watch.Watch().stream(...)`` and
    ``_preload_content=False`` responses work; no socket is opened and no aiohttp session is
    created. May be called with or without a running loop. Close it (``async with`` or
    ``await client.close()``) to unregister it from ``server.change_listeners``.
    """
    kubernetes_asyncio = _require_kubernetes_asyncio()
    configuration = kubernetes_asyncio.client.Configuration(host=host)
    with _sessions_from(server):
        return kubernetes_asyncio.client.ApiClient(configuration)


@contextlib.contextmanager
def patch_kubernetes_asyncio(server: APIServer) -> Iterator[None]:
    """Route every ``kubernetes_asyncio`` ``ApiClient`` created inside the block to ``server``.

    For code that builds its own clients (``ApiClient()`` with no argument, after
    ``await config.load_kube_config()`` or ``config.load_incluster_config()``): inside the block
    the loaders read no file and no environment, they point the default configuration (or the
    ``client_configuration`` they are given) at ``server``; ``new_client_from_config()`` returns
    a client of ``server``. Process-wide and not thread-safe: it swaps the ``aiohttp`` name inside
    ``kubernetes_asyncio.client.rest`` and the loaders in ``kubernetes_asyncio.config``;
    everything is restored afterwards.
    """
    import importlib

    kubernetes_asyncio = _require_kubernetes_asyncio()
    configuration_class = kubernetes_asyncio.client.Configuration

    def point(client_configuration: Any = None) -> None:
        if client_configuration is None:
            configuration_class.set_default(configuration_class(host=DEFAULT_HOST))
        else:
            client_configuration.host = DEFAULT_HOST

    def load_incluster_config(client_configuration: Any = None, **_: Any) -> None:
        point(client_configuration)

    async def load_kube_config(*_: Any, client_configuration: Any = None, **__: Any) -> None:
        point(client_configuration)

    async def new_client_from_config(*_: Any, **__: Any) -> Any:
        return kubernetes_asyncio_client(server)

    replacements = {
        "load_incluster_config": load_incluster_config,
        "load_kube_config": load_kube_config,
        "load_kube_config_from_dict": load_kube_config,
        "load_config": load_kube_config,
        "new_client_from_config": new_client_from_config,
        "new_client_from_config_dict": new_client_from_config,
    }
    modules = [
        importlib.import_module(name)
        for name in (
            "kubernetes_asyncio.config",
            "kubernetes_asyncio.config.kube_config",
            "kubernetes_asyncio.config.incluster_config",
        )
    ]
    saved = [
        (module, name, getattr(module, name))
        for module in modules
        for name in replacements
        if hasattr(module, name)
    ]
    # The default itself, put back as it was (set_default and get_default_copy deep-copy it).
    previous_configuration = getattr(configuration_class, "_default", None)
    for module, name, _original in saved:
        setattr(module, name, replacements[name])
    try:
        with _sessions_from(server):
            yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)
        configuration_class._default = previous_configuration


def detach(client: Any) -> None:
    """Unregister an in-process client from its server without a running loop (the loop it
    lived on is gone: its store crashed). ``await client.close()`` is the usual way."""
    session = getattr(getattr(client, "rest_client", None), "pool_manager", None)
    if isinstance(session, FakeSession):
        session.closed = True
        session._wakeups.unregister()


__all__ = [
    "FakeResponse",
    "FakeSession",
    "FakeStreamReader",
    "detach",
    "kubernetes_asyncio_client",
    "patch_kubernetes_asyncio",
]
