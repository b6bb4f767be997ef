"""In-process transports for ``httpx`` and ``httpx2``: the libraries' own seam, no socket.

httpx hands every request to a transport (``httpx.BaseTransport.handle_request`` for ``Client``,
``httpx.AsyncBaseTransport.handle_async_request`` for ``AsyncClient``) and reads the response's
body from the stream the transport returns; everything above (auth, base URLs, params, redirects,
``raise_for_status``, ``iter_lines``) is the library's. The transports here map each request onto
:func:`kubesim.wire.routes.handle` and stream watches from the server's
:class:`~kubesim.apiserver.watch.WatchStream`. ``httpx2`` (which lightkube imports as ``httpx``)
has the same API in a module of its own, so the classes are built per module
(:func:`transport_classes`).

Headers are those :class:`~kubesim.transport.http.HTTPTransport` sends (``Content-Length`` for a
body, ``Transfer-Encoding: chunked`` for a watch). Ends of a watch, as httpx over a socket
reports them (measured against ``kubesim serve`` in tests/conformance/test_transports.py):

- clean end (server timeout, ``server.expire_watches()``): the body ends.
- abrupt drop (``server.drop_watches()``): ``httpx.RemoteProtocolError("peer closed connection
  without sending complete message body (incomplete chunked read)")``.
- the client's read timeout (``httpx.Timeout(read=...)``) passing with nothing to read, in the
  server's time: ``httpx.ReadTimeout("timed out")`` (``Client``; ``AsyncClient``'s says nothing).

Waits: the sync transport blocks its thread through the server's wait policy (virtual time in a
simulation); the async one awaits the server's change listeners on the running loop, on virtual
time under ``kubesim.sched.aio`` on the server's clock, else following the loop's clock (see
:mod:`kubesim.transport.kubernetes_asyncio_client`).

A transport built with no server (what :func:`patch_httpx` mounts) serves the server routed *at
request time* (:func:`kubesim.transport.routing.current_server`), so a client cached across
simulations (kr8s keeps its own) reaches whichever simulation runs now.
"""

from __future__ import annotations

import contextlib
import http
import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple

from kubesim.apiserver.server import APIServer
from kubesim.apiserver.watch import WatchDropped, WatchReadTimeout, WatchStream
from kubesim.transport.connection_errors import failed_connection, httpx_error
from kubesim.transport.routing import (
    KUBESIM_HOST,
    UnsupportedClient,
    current_server,
    exchange,
    exchange_async,
    request_of,
    wire_headers,
)
from kubesim.wire.routes import Response

MODULES = ("httpx", "httpx2")
"""The modules with httpx's API that kubesim serves."""

# What httpx (via httpcore and h11) raises for a chunked body cut before its last chunk.
INCOMPLETE_BODY = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)
READ_TIMED_OUT = "timed out"  # str(socket.timeout), which httpcore's read re-raises as ReadTimeout
ASYNC_READ_TIMED_OUT = ""  # str() of the anyio timeout httpcore's async read re-raises
_NEEDED = ("BaseTransport", "AsyncBaseTransport", "SyncByteStream", "AsyncByteStream", "Response")


class TransportClasses(NamedTuple):
    """The sync and async transport classes for one httpx-like module."""

    sync: type[Any]
    asynchronous: type[Any]


_classes: dict[str, TransportClasses] = {}


def _read_timeout(request: Any) -> float | None:
    read = (request.extensions.get("timeout") or {}).get("read")
    return None if read is None else float(read)


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


def transport_classes(module: Any = "httpx") -> TransportClasses:
    """kubesim's ``BaseTransport`` and ``AsyncBaseTransport`` subclasses for ``module`` (the
    ``httpx`` or ``httpx2`` module, or its name). :class:`UnsupportedClient` when the module
    lacks the transport API."""
    if isinstance(module, str):
        module = importlib.import_module(module)
    name = module.__name__
    if name in _classes:
        return _classes[name]
    missing = [attribute for attribute in _NEEDED if not hasattr(module, attribute)]
    if missing:
        raise UnsupportedClient(
            f"{name} {getattr(module, '__version__', '?')} has no {', '.join(missing)}: "
            "kubesim routes httpx through its transport API (httpx >= 0.20)"
        )

    def response_of(answer: Response, stream: Any) -> Any:
        extensions = {"http_version": b"HTTP/1.1", "reason_phrase": _reason(answer.status)}
        headers = wire_headers(answer)
        if stream is None:
            assert isinstance(answer.body, bytes)
            return module.Response(
                answer.status, headers=headers, content=answer.body, extensions=extensions
            )
        return module.Response(answer.status, headers=headers, stream=stream, extensions=extensions)

    class WatchBody(module.SyncByteStream):  # type: ignore[misc]
        """A watch's body, read in the calling thread."""

        def __init__(self, stream: WatchStream) -> None:
            self._stream = stream

        def __iter__(self) -> Iterator[bytes]:
            while True:
                try:
                    chunk = self._stream.next_chunk()
                except WatchDropped as exc:
                    raise module.RemoteProtocolError(INCOMPLETE_BODY) from exc
                except WatchReadTimeout as exc:
                    raise module.ReadTimeout(READ_TIMED_OUT) from exc
                if not chunk:
                    return
                yield chunk

        def close(self) -> None:
            self._stream.close()

    class AsyncWatchBody(module.AsyncByteStream):  # type: ignore[misc]
        """A watch's body, read on the running loop."""

        def __init__(self, stream: WatchStream, read_timeout: float | None) -> None:
            self._stream = stream
            self._read_timeout = read_timeout

        async def __aiter__(self) -> AsyncIterator[bytes]:
            from kubesim.transport.kubernetes_asyncio_client import _Wakeups, wait_for_change

            stream = self._stream
            wakeups = _Wakeups(stream.server)  # type: ignore[arg-type]
            wakeups.register()
            try:
                while True:
                    try:
                        chunk = stream.poll()
                    except WatchDropped as exc:
                        raise module.RemoteProtocolError(INCOMPLETE_BODY) from exc
                    if chunk is None:
                        try:
                            await wait_for_change(wakeups, stream, read_timeout=self._read_timeout)
                        except WatchReadTimeout as exc:
                            raise module.ReadTimeout(ASYNC_READ_TIMED_OUT) from exc
                        continue
                    if not chunk:
                        return
                    yield chunk
            finally:
                wakeups.unregister()

        async def aclose(self) -> None:
            self._stream.close()

    class KubesimTransport(module.BaseTransport):  # type: ignore[misc]
        """Serves ``server`` in-process (None: the server routed when a request is sent)."""

        def __init__(self, server: APIServer | None = None) -> None:
            self.server = server

        def handle_request(self, request: Any) -> Any:
            server = self.server if self.server is not None else current_server()
            body = request.read()
            routed = request_of(request.method, str(request.url), dict(request.headers), body)
            answer = exchange(server, routed, _read_timeout(request))
            how = failed_connection(answer)
            if how is not None:
                raise httpx_error(module, how, request, asynchronous=False)
            if isinstance(answer.body, WatchStream):
                return response_of(answer, WatchBody(answer.body))
            return response_of(answer, None)

    class AsyncKubesimTransport(module.AsyncBaseTransport):  # type: ignore[misc]
        """Serves ``server`` in-process on the running loop (None: the server routed now)."""

        def __init__(self, server: APIServer | None = None) -> None:
            self.server = server

        async def handle_async_request(self, request: Any) -> Any:
            server = self.server if self.server is not None else current_server()
            body = await request.aread()
            routed = request_of(request.method, str(request.url), dict(request.headers), body)
            answer = await exchange_async(server, routed)
            how = failed_connection(answer)
            if how is not None:
                raise httpx_error(module, how, request, asynchronous=True)
            if isinstance(answer.body, WatchStream):
                return response_of(answer, AsyncWatchBody(answer.body, _read_timeout(request)))
            return response_of(answer, None)

    for cls in (KubesimTransport, AsyncKubesimTransport, WatchBody, AsyncWatchBody):
        cls.__qualname__ = cls.__name__
        cls.__module__ = __name__
    _classes[name] = TransportClasses(KubesimTransport, AsyncKubesimTransport)
    return _classes[name]


def httpx_transport(server: APIServer | None = None, *, module: Any = "httpx") -> Any:
    """An ``httpx.BaseTransport`` serving ``server`` in-process: ``httpx.Client(transport=...,
    base_url="http://kubesim.invalid")``. ``module``: ``"httpx"`` or ``"httpx2"``."""
    return transport_classes(module).sync(server)


def httpx_async_transport(server: APIServer | None = None, *, module: Any = "httpx") -> Any:
    """An ``httpx.AsyncBaseTransport`` serving ``server`` in-process, for ``AsyncClient``."""
    return transport_classes(module).asynchronous(server)


MOUNT = f"all://{KUBESIM_HOST}"


@contextlib.contextmanager
def patch_httpx(modules: tuple[str, ...] = MODULES) -> Iterator[None]:
    """Every ``Client`` and ``AsyncClient`` of the imported ``modules`` built inside the block
    mounts kubesim's transport for ``kubesim.invalid`` (httpx's public ``mounts=`` argument), so
    its requests for that host reach the server routed when they are sent; any other host goes
    where it went. Only modules already imported are patched (importing httpx costs 0.2 s; a
    store imports its client library before it runs). Restored afterwards; blocks nest."""
    saved: list[tuple[type[Any], Any]] = []
    try:
        for name in modules:
            module = sys.modules.get(name)
            if module is None:
                continue
            classes = transport_classes(module)
            for client_class, transport_class in (
                (module.Client, classes.sync),
                (module.AsyncClient, classes.asynchronous),
            ):
                original = client_class.__dict__["__init__"]
                saved.append((client_class, original))
                client_class.__init__ = _mounting(original, transport_class)
        yield
    finally:
        for client_class, original in reversed(saved):
            client_class.__init__ = original


def _mounting(original: Any, transport_class: type[Any]) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        mounts = dict(kwargs.get("mounts") or {})
        mounts.setdefault(MOUNT, transport_class())
        kwargs["mounts"] = mounts
        original(self, *args, **kwargs)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


__all__ = [
    "ASYNC_READ_TIMED_OUT",
    "INCOMPLETE_BODY",
    "MODULES",
    "READ_TIMED_OUT",
    "TransportClasses",
    "httpx_async_transport",
    "httpx_transport",
    "patch_httpx",
    "transport_classes",
]
