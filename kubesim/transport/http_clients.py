"""Every Python HTTP client library in front of one server: httpx, httpx2, requests, aiohttp,
urllib3.

:func:`patch_http_clients` is for stores built on lightkube, kr8s, pykube-ng, or plain HTTP
calls what :func:`~kubesim.transport.kubernetes_client.patch_kubernetes` is for the official
client: inside the block a store that loads its configuration and builds its own client as in
production reaches ``server``, in-process, unchanged. Three parts, each in its own module:

- the configuration: ``KUBECONFIG`` names a kubeconfig for ``http://kubesim.invalid`` and the
  in-cluster variables are hidden (:mod:`kubesim.transport.kubeconfig_env`);
- the route: requests for ``kubesim.invalid`` reach the server routed *when they are sent*
  (:mod:`kubesim.transport.routing`), so a client cached across simulations still works;
- the seams, one per library, each the library's own: a transport mounted on every httpx or
  httpx2 ``Client``/``AsyncClient`` (:mod:`kubesim.transport.httpx_transport`), a transport
  adapter every ``requests.Session`` picks for the host
  (:mod:`kubesim.transport.requests_adapter`), in-memory connections from every aiohttp
  ``TCPConnector`` (:mod:`kubesim.transport.aiohttp_connector`), and ``PoolManager.urlopen``
  for code that calls urllib3 itself (:mod:`kubesim.transport.urllib3_pool`: Patroni's DCS).

Only libraries already imported are patched (a store imports its client library at the top of
its module; importing all four would cost ~0.7 s per process). Requests for other hosts are
untouched.

What each library raises when the watch ends abruptly (``server.drop_watches()``) and when its
read timeout passes with nothing to read, as over a socket (tests/conformance/test_transports.py
checks each against ``kubesim serve``):

- kubernetes (urllib3): ``urllib3.exceptions.ProtocolError``;
  ``urllib3.exceptions.ReadTimeoutError``.
- kubernetes_asyncio and aiohttp: ``aiohttp.ClientPayloadError``; ``aiohttp.SocketTimeoutError``
  (an ``asyncio.TimeoutError``).
- httpx and httpx2, sync and async: ``httpx.RemoteProtocolError``; ``httpx.ReadTimeout``.
- requests: ``requests.exceptions.ChunkedEncodingError``; ``requests.exceptions.ConnectionError``
  (wrapping urllib3's ``ReadTimeoutError``: a timeout mid-body is not ``requests.ReadTimeout``).

Above them, lightkube raises the httpx2 errors from ``Client.watch`` (its default watch has no
read timeout), kr8s wraps the httpx ones (a timeout becomes ``kr8s.APITimeoutError``), and
pykube-ng lets the requests ones through ``Query.watch()`` (its default timeout, 10 s, applies
to watches as a read timeout).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from kubesim.apiserver.server import APIServer
from kubesim.transport.kubeconfig_env import pointed_env
from kubesim.transport.routing import routed_to


@contextlib.contextmanager
def patch_http_clients(server: APIServer) -> Iterator[str]:
    """Route httpx, httpx2, requests and aiohttp clients' requests for ``kubesim.invalid`` to
    ``server`` and point ``KUBECONFIG`` at it, inside the block; yields the kubeconfig's path.

    Process-wide and not thread-safe to enter (as ``patch_kubernetes``); restored afterwards;
    blocks nest (the innermost server wins). A client used after every block ended raises
    :class:`~kubesim.transport.routing.NoServerRouted`; a library version without the seam
    kubesim uses raises :class:`~kubesim.transport.routing.UnsupportedClient`.
    """
    with contextlib.ExitStack() as patches:
        path = patches.enter_context(pointed_env())
        patches.enter_context(routed_to(server))
        if "httpx" in sys.modules or "httpx2" in sys.modules:
            from kubesim.transport.httpx_transport import patch_httpx

            patches.enter_context(patch_httpx())
        if "requests" in sys.modules:
            from kubesim.transport.requests_adapter import patch_requests

            patches.enter_context(patch_requests())
        if "aiohttp" in sys.modules:
            from kubesim.transport.aiohttp_connector import patch_aiohttp

            patches.enter_context(patch_aiohttp())
        if "urllib3" in sys.modules:
            from kubesim.transport.urllib3_pool import patch_urllib3

            patches.enter_context(patch_urllib3())
        yield path


__all__ = ["patch_http_clients"]
