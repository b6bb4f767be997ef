"""kopf in-process: every API session an operator opens goes to the simulated server.

kopf opens one ``aiohttp.ClientSession`` per login (``APIContext`` in ``kopf._cogs.clients.auth``,
built from whatever the login handlers returned: by default ``login_via_client``, which reads the
official client's default configuration) and sends every list, watch and patch through it
(``session.request(method=, url=, json=, headers=, timeout=)``, watch bodies read with
``response.content.iter_chunked``). :func:`patch_kopf` swaps the ``aiohttp`` name inside that one
module for a shim whose ``ClientSession`` is kubesim's :class:`FakeSession`, so an operator runs
unchanged: its own login handlers, settings and registry, no socket opened.

kopf offers no public seam for this short of a login handler returning ``kopf.AiohttpSession``
(which would make the operator's code kubesim-specific); the private module is the one place
kopf builds sessions, and a kopf that moved it fails loudly here rather than connecting out.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from kubesim.apiserver.server import APIServer
from kubesim.transport.kubernetes_asyncio_client import _AiohttpShim

KOPF_AUTH = "kopf._cogs.clients.auth"


@contextlib.contextmanager
def patch_kopf(server: APIServer) -> Iterator[None]:
    """Route every kopf API session created inside the block to ``server``.

    Process-wide and not thread-safe; the previous value is restored afterwards (blocks nest).
    Raises ``ImportError`` when kopf is not installed or no longer builds its sessions in
    ``kopf._cogs.clients.auth``.
    """
    auth: Any = importlib.import_module(KOPF_AUTH)
    previous = getattr(auth, "aiohttp", None)
    if previous is None:
        raise ImportError(
            f"{KOPF_AUTH} no longer imports aiohttp; kubesim cannot route its sessions"
        )
    real = previous._real if isinstance(previous, _AiohttpShim) else previous
    auth.aiohttp = _AiohttpShim(server, real)
    try:
        yield
    finally:
        auth.aiohttp = previous
