"""In-process connections for plain ``aiohttp`` sessions: aiohttp's own connector seam.

An ``aiohttp.ClientSession`` gets every connection from its connector
(``BaseConnector._create_connection(req, traces, timeout)``, which returns the protocol of a new
connection) and then speaks HTTP/1.1 over it with its own writer and parser. The connector here
returns a protocol whose transport is in memory (:class:`MemoryTransport`): the bytes aiohttp
writes are parsed as a request and served by :func:`kubesim.wire.routes.handle`, and the answer
is written back in the bytes :class:`~kubesim.transport.http.HTTPTransport` would send
(``Content-Length`` bodies, chunked watches of whole lines, the terminating chunk at a clean
end). So the response a store holds is aiohttp's own ``ClientResponse``: its parser, its errors,
its timeouts (``ClientTimeout(sock_read=...)`` and ``total`` run on the loop's clock: virtual time
under ``kubesim.sched.aio`` on the server's clock), keep-alive and ``raise_for_status`` as over a
socket.

Ends of a watch, as aiohttp over a socket reports them:

- clean end: the body ends (``resp.content`` reads ``b""``).
- abrupt drop (``server.drop_watches()``): the connection closes without the terminating chunk;
  reads raise ``aiohttp.ClientPayloadError("Response payload is not completed: ...")``.
- the read timeout (``ClientTimeout(sock_read=...)``) passing with nothing to read:
  ``aiohttp.SocketTimeoutError("Timeout on reading data from socket")`` (an
  ``asyncio.TimeoutError``); ``ClientTimeout(total=...)`` (a session's default is 300 s):
  ``asyncio.TimeoutError`` from aiohttp's own timer.

:func:`patch_aiohttp` routes every ``TCPConnector`` (the one a ``ClientSession()`` makes for
itself, or one a store passes) to the simulation for ``kubesim.invalid`` during the block,
sessions made before it included; other hosts connect as before (a connector made inside the
block without a resolver resolves them with aiohttp's ``ThreadedResolver``: aiodns' would start
a process-wide thread). kubernetes_asyncio and kopf do
not come this way: they have sessions of their own kind
(:mod:`kubesim.transport.kubernetes_asyncio_client`).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import importlib
from collections.abc import Iterator
from typing import Any

from kubesim.apiserver.server import APIServer
from kubesim.apiserver.watch import WatchDropped, WatchStream
from kubesim.transport.connection_errors import (
    RESET,
    aiohttp_connector_error,
    os_error,
    refusal,
)
from kubesim.transport.routing import (
    KUBESIM_HOST,
    UnsupportedClient,
    current_server,
    exchange_async,
    is_kubesim_host,
    wire_headers,
)
from kubesim.wire.routes import Request

# The largest request head aiohttp sends is far below this; more is a client bug, not a request.
_MAX_HEAD = 1 << 20


def _parse_request(buffer: bytearray) -> tuple[Request, int] | None:
    """The first complete HTTP/1.1 request in ``buffer`` and its length, or None if partial."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > _MAX_HEAD:
            raise UnsupportedClient("aiohttp sent a request head longer than 1 MiB")
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    header_lines = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:] if line)
    )
    headers = {name.lower(): value for name, value in header_lines}
    start = end + 4
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        position = start
        while True:
            size_end = buffer.find(b"\r\n", position)
            if size_end < 0:
                return None
            size = int(bytes(buffer[position:size_end]).split(b";")[0].strip() or b"0", 16)
            chunk_start = size_end + 2
            if len(buffer) < chunk_start + size + 2:
                return None
            if size == 0:
                consumed = chunk_start + 2  # no trailers: aiohttp sends none
                break
            body += buffer[chunk_start : chunk_start + size]
            position = chunk_start + size + 2
        payload = bytes(body)
    else:
        length = int(headers.get("content-length") or 0)
        if len(buffer) < start + length:
            return None
        payload = bytes(buffer[start : start + length])
        consumed = start + length
    path, _, query = target.partition("?")
    request = Request(
        method.upper(), path or "/", query, dict(header_lines), payload, None, header_lines
    )
    return request, consumed


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class MemoryTransport(asyncio.Transport):
    """One in-memory connection: request bytes in, the server's answer out, keep-alive."""

    def __init__(
        self, protocol: asyncio.Protocol, server: APIServer | None, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__()
        self._protocol = protocol
        self._server = server
        self._loop = loop
        self._inbox = bytearray()
        self._closing = False
        self._reading = asyncio.Event()
        self._reading.set()
        self._serving: asyncio.Task[None] | None = None
        self._stream: WatchStream | None = None

    # -- the client's side ------------------------------------------------------------------
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        self._inbox += data
        if self._serving is None or self._serving.done():
            parsed = _parse_request(self._inbox)
            if parsed is not None:
                request, consumed = parsed
                del self._inbox[:consumed]
                self._serving = self._loop.create_task(self._serve(request))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._lose(None)

    def abort(self) -> None:
        self._lose(None)

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def is_reading(self) -> bool:
        return self._reading.is_set()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": (KUBESIM_HOST, 80), "sockname": ("127.0.0.1", 0)}.get(name, default)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol  # type: ignore[assignment]

    # -- the server's side ------------------------------------------------------------------
    def _lose(self, exc: Exception | None) -> None:
        """The connection ends (either side): the watch is cancelled, the protocol told once."""
        if self._closing:
            return
        self._closing = True
        self._reading.set()
        if self._stream is not None:
            self._stream.close()
        if self._serving is not None and self._serving is not _current_task():
            self._serving.cancel()
        self._loop.call_soon(self._protocol.connection_lost, exc)

    def _deliver(self, data: bytes) -> None:
        if not self._closing:
            self._protocol.data_received(data)

    async def _serve(self, request: Request) -> None:
        server = self._server if self._server is not None else current_server()
        answer = await exchange_async(server, request)
        if self._closing:
            if isinstance(answer.body, WatchStream):
                answer.body.close()
            return
        if answer.reset or answer.refused:
            # Reset unanswered; a refusal met on a kept-alive connection is the same to the
            # client (the server it was talking to is gone): aiohttp's protocol makes it a
            # ClientOSError, and the session asks an idempotent request once more.
            self._lose(os_error(RESET))
            return
        self._deliver(_head(answer.status, wire_headers(answer)))
        if not isinstance(answer.body, WatchStream):
            if request.method != "HEAD":
                self._deliver(answer.body)
            return
        self._stream = answer.body
        try:
            await self._pump(answer.body)
        finally:
            self._stream = None

    async def _pump(self, stream: WatchStream) -> None:
        """Chunks as the watch has them, while the client reads; the end as the server ends."""
        from kubesim.transport.kubernetes_asyncio_client import _Wakeups, wait_for_change

        wakeups = _Wakeups(stream.server)  # type: ignore[arg-type]
        wakeups.register()
        try:
            while not self._closing:
                if not self._reading.is_set():
                    await self._reading.wait()  # the client's buffer is full: TCP would wait
                    continue
                try:
                    chunk = stream.poll()
                except WatchDropped:
                    # The server shut the socket down: EOF, then the connection is gone.
                    self._protocol.eof_received()
                    self._lose(None)
                    return
                if chunk is None:
                    await wait_for_change(wakeups, stream)
                    continue
                if not chunk:
                    self._deliver(b"0\r\n\r\n")
                    return
                self._deliver(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        finally:
            wakeups.unregister()


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _aiohttp() -> Any:
    try:
        import aiohttp
    except ImportError as exc:
        raise ImportError("kubesim's aiohttp connector needs the 'aiohttp' package") from exc
    if not hasattr(aiohttp.BaseConnector, "_create_connection"):
        raise UnsupportedClient(
            f"aiohttp {aiohttp.__version__} connectors have no _create_connection: kubesim "
            "cannot give its sessions in-process connections"
        )
    return aiohttp


async def _connect(connector: Any, server: APIServer | None, req: Any) -> Any:
    """A new connection, unless the server refuses it (``APIServer.refuse_connections``): then
    what aiohttp's ``TCPConnector`` raises when nothing listens."""
    if refusal(server if server is not None else current_server()) is not None:
        raise aiohttp_connector_error(req.connection_key, req.host, req.port)
    protocol = connector._factory()
    protocol.connection_made(MemoryTransport(protocol, server, asyncio.get_running_loop()))
    return protocol


def kubesim_connector(server: APIServer | None = None, **kwargs: Any) -> Any:
    """An ``aiohttp`` connector whose every connection reaches ``server`` in-process (None:
    the server routed when a request is sent): ``aiohttp.ClientSession(connector=...)``.
    Call it on the loop the session runs on; ``kwargs`` go to ``aiohttp.BaseConnector``."""
    aiohttp = _aiohttp()

    class KubesimConnector(aiohttp.BaseConnector):  # type: ignore[misc,name-defined]
        async def _create_connection(self, req: Any, traces: Any, timeout: Any) -> Any:
            return await _connect(self, server, req)

    return KubesimConnector(**kwargs)


@contextlib.contextmanager
def patch_aiohttp() -> Iterator[None]:
    """Connections to ``kubesim.invalid`` that any ``aiohttp.TCPConnector`` opens inside the
    block reach the server routed then, in-process; other hosts connect as before. Restored
    afterwards; blocks nest."""
    aiohttp = _aiohttp()
    connector_module: Any = importlib.import_module("aiohttp.connector")
    threaded_resolver = importlib.import_module("aiohttp.resolver").ThreadedResolver

    connector_class = aiohttp.TCPConnector
    original = connector_class.__dict__["_create_connection"]
    default_resolver = connector_module.DefaultResolver

    async def _create_connection(self: Any, req: Any, traces: Any, timeout: Any) -> Any:
        if is_kubesim_host(req.host):
            return await _connect(self, None, req)
        return await original(self, req, traces, timeout)

    connector_class._create_connection = _create_connection
    # With aiodns installed a connector's default resolver is pycares', whose channels are
    # destroyed by a process-wide thread started on first use that blocks on a real queue
    # forever: started inside a simulation, it is a thread kubesim cannot schedule. The
    # threaded resolver starts nothing until it resolves a name (never, for kubesim.invalid).
    connector_module.DefaultResolver = threaded_resolver
    try:
        yield
    finally:
        connector_class._create_connection = original
        connector_module.DefaultResolver = default_resolver


__all__ = ["MemoryTransport", "kubesim_connector", "patch_aiohttp"]
