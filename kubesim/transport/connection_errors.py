"""What each client library raises when its connection is reset or refused, built in-process.

The server injects two connection failures (``APIServer.reset_connections`` and
``APIServer.refuse_connections``): a request read and answered by a reset (a load balancer or
an API server dying mid-request), and a connection refused before anything is sent (an API
server restarting). An in-process transport has no socket to fail, so it raises what its
library raises over one, with the operating system's error below it, as measured against a
loopback server that resets after reading a request and against a closed port:

=====================  =====================================  ====================================
library                reset                                  refused
=====================  =====================================  ====================================
urllib3, official      ``ProtocolError('Connection aborted.',  ``NewConnectionError`` (in
client                 ConnectionResetError(104, ...))``, in  ``MaxRetryError``): connect errors
                       ``MaxRetryError`` once ``Retry`` runs   are retried whatever the method
                       out; not retried for a POST or PATCH
requests               ``ConnectionError`` around the          ``ConnectionError`` around
                       ``ProtocolError`` (no retries)          ``MaxRetryError`` (no retries)
httpx, httpx2          ``ReadError``                          ``ConnectError``
aiohttp,               ``ClientOSError(104, ...)``; an        ``ClientConnectorError``
kubernetes_asyncio     idempotent method is asked once more
=====================  =====================================  ====================================

Transports ask :func:`refusal` before they send and look at :func:`failed_connection` after the
exchange, then raise what the functions here build; urllib3's retries live in
:func:`kubesim.transport.kubernetes_client.retried`, aiohttp's in its session (or, for
kubernetes_asyncio's session, in :mod:`kubesim.transport.kubernetes_asyncio_client`).
"""

from __future__ import annotations

import errno
from typing import Any

from kubesim.apiserver.server import APIServer
from kubesim.wire.routes import Response

RESET = "reset"
REFUSED = "refused"


def refusal(server: APIServer) -> Response | None:
    """The answer of a request whose connection is refused (``APIServer.refuse_connections``:
    it never reaches the server), or None to send it. Transports ask before they send."""
    if not server.request_failures.refusing:
        return None
    with server.lock:
        if not server.request_failures.take_refusal(now=server.clock.now()):
            return None
        server.trace.record("injected-refusal")
    return Response(0, b"", refused=True)


def failed_connection(response: Response) -> str | None:
    """``"reset"``, ``"refused"`` or None: how the connection of this answer failed."""
    if response.reset:
        return RESET
    if response.refused:
        return REFUSED
    return None


def os_error(how: str, host: str = "kubesim.invalid", port: int = 80) -> OSError:
    """The operating system's error under every library's (Linux's errno and message)."""
    if how == RESET:
        return ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    return ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")


class _Connection:
    """Stands for the ``HTTPConnection`` urllib3 names in a connection error's message."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    def __repr__(self) -> str:
        return f"HTTPConnection(host={self.host!r}, port={self.port})"


class _Pool:
    """Stands for the connection pool urllib3 names in a ``MaxRetryError``'s message."""

    def __repr__(self) -> str:
        return "HTTPConnectionPool(host='kubesim.invalid', port=80)"

    __str__ = __repr__


POOL = _Pool()


def urllib3_error(how: str, host: str = "kubesim.invalid", port: int = 80) -> Exception:
    """What ``urllib3.HTTPConnectionPool.urlopen`` hands its ``Retry`` for this failure."""
    import urllib3

    cause = os_error(how)
    error: Exception
    if how == RESET:
        error = urllib3.exceptions.ProtocolError("Connection aborted.", cause)
    else:
        message = f"Failed to establish a new connection: {cause}"
        error = urllib3.exceptions.NewConnectionError(_Connection(host, port), message)  # type: ignore[arg-type]
    error.__cause__ = cause
    return error


def requests_error(how: str, request: Any, url: str) -> Exception:
    """What ``requests.adapters.HTTPAdapter.send`` raises (its default ``max_retries`` is
    ``Retry(0, read=False)``: a refusal runs it out, a reset is raised as it is)."""
    import requests
    import urllib3

    error = urllib3_error(how)
    if how == REFUSED:
        error = urllib3.exceptions.MaxRetryError(POOL, url, error)  # type: ignore[arg-type]
    wrapped = requests.exceptions.ConnectionError(error, request=request)
    wrapped.__cause__ = error
    return wrapped


def httpx_error(module: Any, how: str, request: Any, *, asynchronous: bool) -> Exception:
    """What httpx's (or httpx2's) own transport raises: its asynchronous one (anyio) words
    them differently."""
    cause = os_error(how)
    if how == RESET:
        error = module.ReadError("" if asynchronous else str(cause), request=request)
    else:
        message = "All connection attempts failed" if asynchronous else str(cause)
        error = module.ConnectError(message, request=request)
    error.__cause__ = cause
    return error  # type: ignore[no-any-return]


def aiohttp_connector_error(connection_key: Any, host: str, port: int) -> Exception:
    """What aiohttp's ``TCPConnector`` raises when nothing listens (``connection_key``: the
    request's, naming host, port and TLS as aiohttp's message does)."""
    import aiohttp

    os_cause = OSError(errno.ECONNREFUSED, f"Connect call failed ({host!r}, {port})")
    error = aiohttp.ClientConnectorError(connection_key, os_cause)
    error.__cause__ = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    return error


def connection_key(host: str, port: int, is_ssl: bool) -> Any:
    """An ``aiohttp`` ``ConnectionKey`` for a plain connection, whatever fields this aiohttp
    release gives it (only host, port and TLS are read, for the message)."""
    import aiohttp

    key_class: Any = aiohttp.client_reqrep.ConnectionKey
    values: dict[str, Any] = {"host": host, "port": port, "is_ssl": is_ssl, "ssl": True}
    return key_class(**{name: values.get(name) for name in key_class._fields})


def aiohttp_reset_error() -> Exception:
    """aiohttp's error for a connection reset before the answer (its protocol's
    ``connection_lost`` turns the ``OSError`` into ``ClientOSError``)."""
    import aiohttp

    cause = os_error(RESET)
    error = aiohttp.ClientOSError(*cause.args)
    error.__cause__ = cause
    return error


# aiohttp asks an idempotent request once more when its connection fails (a reset, a
# disconnect), as it does for a reused keep-alive connection (client.py IDEMPOTENT_METHODS).
AIOHTTP_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


__all__ = [
    "AIOHTTP_IDEMPOTENT",
    "POOL",
    "REFUSED",
    "RESET",
    "aiohttp_connector_error",
    "aiohttp_reset_error",
    "connection_key",
    "failed_connection",
    "httpx_error",
    "os_error",
    "refusal",
    "requests_error",
    "urllib3_error",
]
