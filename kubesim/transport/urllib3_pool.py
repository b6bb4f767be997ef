"""In-process transport for code that calls ``urllib3.PoolManager`` itself (Patroni's K8s DCS).

Some clients skip every Kubernetes library and speak to the API server with a
``urllib3.PoolManager`` of their own: Patroni's Kubernetes DCS (``patroni.dcs.kubernetes``) builds
``urllib3.PoolManager(**pool_config)`` from the kubeconfig's server, sends lists with
``pool_manager.request(...)`` and reads watches with ``response.read_chunked()``. Every such
request goes through ``PoolManager.urlopen(method, url, **kw)`` (``request()`` encodes the query
or the body, then calls it). :func:`patch_urllib3` overrides that method for the block: a URL on
``kubesim.invalid`` is served in-process by the server routed when it is sent; any other URL is
unchanged.

The response is the official client's in-process response
(:class:`~kubesim.transport.kubernetes_client.FakeHTTPResponse`) made an instance of
``urllib3.HTTPResponse`` too, since such code tests for it (Patroni closes a watch's response
only when ``isinstance(response, urllib3.HTTPResponse)``). Ends of a watch are what urllib3
raises over a socket: a cut is ``urllib3.exceptions.ProtocolError("Response ended
prematurely")`` from ``read_chunked()``/``stream()``, a read timeout (``timeout=`` a number, a
``(connect, read)`` pair or a ``urllib3.Timeout``) ``urllib3.exceptions.ReadTimeoutError``, in
the server's time; ``response.connection.sock.shutdown()`` cuts the body, as on a socket.
Answers urllib3's ``Retry`` asks again (a 429 or 503 with ``Retry-After``: three more tries by
default) are asked again, as the connection pool does over a socket.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from kubesim.transport.connection_errors import failed_connection, urllib3_error
from kubesim.transport.kubernetes_client import FakeHTTPResponse, read_timeout_of, retried
from kubesim.transport.routing import (
    body_bytes,
    current_server,
    exchange,
    is_kubesim_host,
    request_of,
    wire_headers,
)

_response_class: type[Any] | None = None


def _response() -> type[Any]:
    """``FakeHTTPResponse`` that is also an ``urllib3.HTTPResponse`` (built once, lazily)."""
    global _response_class
    if _response_class is None:
        import urllib3

        class Urllib3Response(FakeHTTPResponse, urllib3.HTTPResponse):  # type: ignore[misc]
            # Plain attributes, set by FakeHTTPResponse.__init__: they shadow urllib3's
            # read-only properties of the same names.
            connection: Any = None
            closed: Any = False

            def __bool__(self) -> bool:
                return True

            def __del__(self) -> None:  # io.IOBase's finalizer would close() a live watch
                pass

        Urllib3Response.__module__ = __name__
        _response_class = Urllib3Response
    return _response_class


def serve(method: str, url: str, **kw: Any) -> Any:
    """One ``urlopen`` for ``kubesim.invalid``: the routed server's answer as urllib3's."""
    routed = request_of(
        method,
        url,
        dict(kw.get("headers") or {}),
        body_bytes(kw.get("body"), client="urllib3 transport", instead="bytes or str"),
    )
    answer = exchange(current_server(), routed, read_timeout_of(kw.get("timeout")))
    how = failed_connection(answer)
    if how is not None:
        raise urllib3_error(how)  # retried() asks again as the pool's Retry says
    headers = [(k, v) for k, v in wire_headers(answer) if k != "Content-Type"]
    response = _response()(answer.status, answer.content_type, answer.body, dict(headers))
    if kw.get("preload_content", True):
        response.data  # noqa: B018 - read now, as urllib3 does (a watch would block here)
    return response


@contextlib.contextmanager
def patch_urllib3() -> Iterator[None]:
    """Every ``urllib3.PoolManager`` sends its requests for ``kubesim.invalid`` to the server
    routed when they are sent, inside the block; other URLs go where they went. Restored
    afterwards; blocks nest."""
    import urllib.parse

    import urllib3

    manager = urllib3.PoolManager
    original = manager.__dict__["urlopen"]

    def urlopen(self: Any, method: str, url: str, redirect: bool = True, **kw: Any) -> Any:
        if is_kubesim_host(urllib.parse.urlsplit(url).hostname):
            # The Retry the connection pool would use: the call's, else the manager's.
            retries = kw.pop("retries", None)
            if retries is None:
                retries = self.connection_pool_kw.get("retries")
            return retried(lambda: serve(method, url, **kw), method, url, retries)
        return original(self, method, url, redirect=redirect, **kw)

    manager.urlopen = urlopen  # type: ignore[method-assign]
    try:
        yield
    finally:
        manager.urlopen = original  # type: ignore[method-assign]


__all__ = ["patch_urllib3", "serve"]
