"""A controller's write that the server refuses is tried again later, as a workqueue does.

A controller's write can be refused for reasons of the moment: ResourceQuota admission
counts from a quota's ``status.used``, which the quota controller brings up to date only after
the write that changed it (a ``kube-root-ca.crt`` deleted in a namespace whose quota allows
exactly the ConfigMaps it had is made again before the quota counts the deletion). On a
cluster the controller logs the error and requeues the key with its rate limiter's
exponential backoff (client-go ``DefaultTypedControllerRateLimiter``); the client whose request
set the controller off is answered as if nothing happened, since its own write succeeded.

kubesim does the same on the server's clock: the refusal goes in the trace as
``controller-refused``, and the write is tried again after 1, 2, 4, ... seconds (at most
:data:`MAX_RETRY_SECONDS`) until it succeeds or has nothing left to do (each attempt checks the
state afresh: a namespace gone or being deleted ends the retries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kubesim.apiserver import status as st

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 1000.0  # the rate limiter's cap


def write_or_retry(
    server: APIServer,
    controller: str,
    key: tuple[str, str],
    write: Callable[[], None],
    *,
    attempt: int = 0,
) -> None:
    """Call ``write`` (a controller's sync of ``key``, the server's lock held); if the server
    refuses a write it makes, record that and call it again later."""
    try:
        write()
    except st.StatusError as exc:
        server.trace.record("controller-refused", controller, key[0], key[1], exc.code)
        delay = min(FIRST_RETRY_SECONDS * 2**attempt, MAX_RETRY_SECONDS)

        def again() -> None:
            with server.lock:
                write_or_retry(server, controller, key, write, attempt=attempt + 1)

        server.clock.call_later(delay, again)
