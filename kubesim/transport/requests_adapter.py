"""In-process transport adapter for ``requests``: pykube-ng and code that calls the API itself.

requests sends every request through the transport adapter its ``Session`` picks for the URL
(``Session.get_adapter(url)``; ``HTTPAdapter`` over urllib3 by default). :class:`KubesimAdapter`
is such an adapter: it maps the prepared request onto :func:`kubesim.wire.routes.handle` and
hands ``HTTPAdapter.build_response`` the urllib3-shaped response of the official client's
in-process transport (:class:`~kubesim.transport.kubernetes_client.FakeHTTPResponse`) as
``raw``, so ``Response.content``, ``iter_content``, ``iter_lines``, ``json()`` and
``raise_for_status()`` are requests' own, errors included.

:func:`patch_requests` overrides ``Session.get_adapter`` for the block: a URL on
``kubesim.invalid`` gets the adapter, whatever the session mounted (pykube-ng mounts its own
``KubernetesHTTPAdapter``, whose ``send`` calls ``HTTPAdapter.send`` captured when the class was
defined, so patching ``HTTPAdapter.send`` would not reach it); any other URL is unchanged.

Ends of a watch (``stream=True``), as requests over a socket reports them:

- clean end: ``iter_lines()``/``iter_content()`` stop.
- abrupt drop (``server.drop_watches()``): ``requests.exceptions.ChunkedEncodingError``
  (requests' mapping of urllib3's ``ProtocolError("Response ended prematurely")``).
- the read timeout (``timeout=(connect, read)`` or a number) passing with nothing to read, in
  the server's time: ``requests.exceptions.ConnectionError`` wrapping urllib3's
  ``ReadTimeoutError`` (what ``iter_content`` raises for a socket read timeout mid-body; a
  ``ReadTimeout`` is only raised before the headers arrive).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from kubesim.apiserver.server import APIServer
from kubesim.transport.connection_errors import failed_connection, requests_error
from kubesim.transport.kubernetes_client import FakeHTTPResponse, read_timeout_of
from kubesim.transport.routing import (
    UnsupportedClient,
    body_bytes,
    current_server,
    exchange,
    is_kubesim_host,
    request_of,
    wire_headers,
)


def _requests() -> Any:
    try:
        import requests
        import requests.adapters
    except ImportError as exc:  # pragma: no cover - requests comes with the kubernetes client
        raise ImportError("kubesim's adapter for requests needs the 'requests' package") from exc
    if not hasattr(requests.adapters.HTTPAdapter, "build_response"):
        raise UnsupportedClient(
            f"requests {getattr(requests, '__version__', '?')} has no "
            "HTTPAdapter.build_response: kubesim builds its responses with it"
        )
    return requests


def _body(body: Any) -> bytes:
    return body_bytes(body, client="requests adapter", instead="bytes or str (json=..., data=...)")


def kubesim_adapter(server: APIServer | None = None) -> Any:
    """A ``requests`` transport adapter serving ``server`` in-process (None: the server routed
    when a request is sent): ``session.mount("http://kubesim.invalid", kubesim_adapter(s))``."""
    return _adapter_class()(server)


_adapter: type[Any] | None = None


def _adapter_class() -> type[Any]:
    global _adapter
    if _adapter is not None:
        return _adapter
    requests = _requests()

    class KubesimAdapter(requests.adapters.HTTPAdapter):  # type: ignore[misc,name-defined]
        """``HTTPAdapter`` whose ``send`` serves the request in-process."""

        def __init__(self, server: APIServer | None = None) -> None:
            super().__init__()
            self.server = server

        def send(
            self,
            request: Any,
            stream: bool = False,
            timeout: Any = None,
            verify: Any = True,
            cert: Any = None,
            proxies: Any = None,
        ) -> Any:
            server = self.server if self.server is not None else current_server()
            routed = request_of(
                request.method or "GET", request.url, dict(request.headers), _body(request.body)
            )
            answer = exchange(server, routed, read_timeout_of(timeout))
            how = failed_connection(answer)
            if how is not None:
                raise requests_error(how, request, routed.path)
            headers = [(k, v) for k, v in wire_headers(answer) if k != "Content-Type"]
            raw = FakeHTTPResponse(answer.status, answer.content_type, answer.body, dict(headers))
            return self.build_response(request, raw)  # Session.send reads it unless stream

    KubesimAdapter.__module__ = __name__
    _adapter = KubesimAdapter
    return _adapter


@contextlib.contextmanager
def patch_requests() -> Iterator[None]:
    """Every ``requests.Session`` sends its requests for ``kubesim.invalid`` to the server
    routed when they are sent, inside the block; other URLs go where they went. Restored
    afterwards; blocks nest."""
    requests = _requests()
    import urllib.parse

    session_class = requests.Session
    original = session_class.__dict__["get_adapter"]
    adapter = kubesim_adapter()

    def get_adapter(self: Any, url: str) -> Any:
        if is_kubesim_host(urllib.parse.urlsplit(url).hostname):
            return adapter
        return original(self, url)

    session_class.get_adapter = get_adapter
    try:
        yield
    finally:
        session_class.get_adapter = original


__all__ = ["kubesim_adapter", "patch_requests"]
