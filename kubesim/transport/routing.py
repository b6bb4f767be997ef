"""Which server a request for ``http://kubesim.invalid`` reaches, and how one exchange goes.

The transports of :mod:`kubesim.transport.http_clients` (httpx, requests, aiohttp) are installed
into clients that may outlive the block that installed them: kr8s keeps its API objects (and
their ``httpx.AsyncClient``) in a process-wide cache, so a client built during one simulation is
handed out again in the next. Such a transport therefore looks its server up *at request time*:
:func:`routed_to` pushes a server for the length of a block (blocks nest; the innermost wins)
and :func:`current_server` answers with it, or raises :class:`NoServerRouted` outside every
block, naming the problem instead of letting the request wander off to DNS.

:func:`exchange` is one request/response for a client whose reads block a thread (httpx's
``Client``, requests), with the same steps as the official client's in-process pool manager:
virtual time caught up first, the watch cache's wait (``Response.wait``) slept in virtual time
and asked again, and the client's read timeout handed to the watch stream, which raises
:class:`~kubesim.apiserver.watch.WatchReadTimeout` when it passes in the server's time.
:func:`exchange_async` is the same on an event loop (kubernetes_asyncio's session does it too).
"""

from __future__ import annotations

import contextlib
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from kubesim._core.untraced import untraced
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.watch import WatchStream
from kubesim.transport.connection_errors import refusal
from kubesim.wire.routes import Request, Response, handle

KUBESIM_HOST = "kubesim.invalid"
"""The host every kubeconfig kubesim writes points at (``.invalid`` never resolves, RFC 2606)."""

KUBESIM_URL = f"http://{KUBESIM_HOST}"


class NoServerRouted(RuntimeError):
    """A request for ``kubesim.invalid`` was sent outside every ``routed_to(server)`` block: a
    client built during a simulation was used after it ended (or before the next began)."""


class UnsupportedClient(RuntimeError):
    """A client library kubesim cannot put in front of the simulation: its version lacks the
    seam kubesim uses (named in the message), or the request is one the seam cannot carry."""


_lock = threading.Lock()
_servers: list[APIServer] = []


@contextlib.contextmanager
def routed_to(server: APIServer) -> Iterator[APIServer]:
    """Requests for ``kubesim.invalid`` reach ``server`` inside the block (process-wide)."""
    with _lock:
        _servers.append(server)
    try:
        yield server
    finally:
        with _lock:
            # Not pop(): blocks of different threads may end out of order.
            for index in range(len(_servers) - 1, -1, -1):
                if _servers[index] is server:
                    del _servers[index]
                    break


def current_server() -> APIServer:
    """The server of the innermost :func:`routed_to` block; :class:`NoServerRouted` if none."""
    with _lock:
        if _servers:
            return _servers[-1]
    raise NoServerRouted(
        f"a request for {KUBESIM_URL} was sent with no kubesim server routed: the client was "
        "used outside kubesim.patch_http_clients(server) (or a simulation that applies it)"
    )


def is_kubesim_host(host: str | None) -> bool:
    return (host or "").lower().rstrip(".") == KUBESIM_HOST


def request_of(
    method: str, url: str, headers: Mapping[str, str] | None = None, body: bytes = b""
) -> Request:
    """The routes' request for an absolute URL (scheme and host dropped, query kept raw)."""
    parts = urllib.parse.urlsplit(url)
    return Request(method.upper(), parts.path or "/", parts.query, dict(headers or {}), body)


def body_bytes(body: Any, *, client: str, instead: str) -> bytes:
    """A request body as bytes (None: empty). A stream or a generator is refused: the server
    takes a body whole, so the error names the ``client`` and what to send ``instead``."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    raise UnsupportedClient(
        f"kubesim's {client} cannot send a {type(body).__name__} body (a stream or a "
        f"generator): send {instead}"
    )


def _virtual_time() -> bool:
    """True in a controlled thread, where ``time.sleep`` passes virtual time."""
    from kubesim.sched import scheduler

    active = scheduler.active()
    return active is not None and active.current_thread() is not None


def exchange(server: APIServer, request: Request, read_timeout: float | None) -> Response:
    """Serve ``request`` for a client that blocks its thread while it reads.

    A watch's stream gets ``read_timeout`` (seconds of the server's clock; None: no limit).
    An answer may be no answer: its connection refused or reset (``Response.refused``,
    ``Response.reset``), which the caller raises as its library would.
    """
    refused = refusal(server)
    if refused is not None:
        return refused
    catch_up = getattr(server.wait_policy, "catch_up", None)
    if catch_up is not None:
        catch_up(server)  # a watch opened now times out from now, not from a stale time
    response = untraced(handle, server, request, asks_again=_virtual_time())
    if response.wait and _virtual_time():
        import time

        time.sleep(response.wait)  # the watch cache's wait, in virtual time; then ask again
        response = untraced(handle, server, request, waited=True)
    if isinstance(response.body, WatchStream):
        response.body.read_timeout = read_timeout
    return response


async def exchange_async(server: APIServer, request: Request) -> Response:
    """Serve ``request`` for a client on an event loop (read timeouts are the caller's)."""
    import asyncio

    from kubesim.transport.kubernetes_asyncio_client import _follower

    # In flight for at least one turn of the loop, as over a socket: other tasks run meanwhile.
    await asyncio.sleep(0)
    refused = refusal(server)
    if refused is not None:
        return refused
    follower = _follower(server, asyncio.get_running_loop())
    if follower is not None:
        follower.catch_up(server)  # a watch opened now times out from now
    response = untraced(handle, server, request, asks_again=follower is None)
    if response.wait and follower is None:
        await asyncio.sleep(response.wait)  # on the server's clock: the watch cache's wait
        response = untraced(handle, server, request, waited=True)
    return response


def wire_headers(response: Response) -> list[tuple[str, str]]:
    """The headers :class:`~kubesim.transport.http.HTTPTransport` sends with ``response``, less
    the connection's own (``Server``, ``Date``): what a client over a socket would see."""
    headers = [("Content-Type", response.content_type), ("Cache-Control", "no-cache, private")]
    headers += [(str(name), str(value)) for name, value in response.headers.items()]
    if isinstance(response.body, WatchStream):
        headers.append(("Transfer-Encoding", "chunked"))
    else:
        headers.append(("Content-Length", str(len(response.body))))
    return headers


__all__ = [
    "KUBESIM_HOST",
    "KUBESIM_URL",
    "NoServerRouted",
    "UnsupportedClient",
    "body_bytes",
    "current_server",
    "exchange",
    "exchange_async",
    "is_kubesim_host",
    "request_of",
    "routed_to",
    "wire_headers",
]
