"""Faults that change how the server answers requests, rather than what it stores.

Two kinds live here, each driven by a verb on :class:`~kubesim.apiserver.server.APIServer`:

- **Injected request failures** (:class:`RequestFailures`, ``APIServer.fail_requests``): the
  next N requests that match a verb (and optionally a resource) are answered with an error
  ``Status`` instead of being served: 429 ``TooManyRequests`` as the cacher answers while it
  (re)initializes, 403 ``Forbidden`` as RBAC answers when a role is missing or revoked, 500
  ``InternalError``, 503 ``ServiceUnavailable`` and 504 ``Timeout``. Responses to 429 and 5xx
  carry ``details.retryAfterSeconds`` and the ``Retry-After`` header, as apiserver's
  ``responsewriters.ErrorNegotiated`` writes them. Clients differ in how they treat each code
  (client-go's reflector backs off and re-watches on 429 without relisting, and relists on
  anything else), which is exactly what a store's retry logic must get right.
- **Injected connection failures** (``APIServer.reset_connections``,
  ``APIServer.refuse_connections``): the next N matching requests are read and then their
  connection is reset with no answer (a load balancer or an API server dying mid-request:
  :class:`ConnectionReset`), or the next N requests of any kind find nothing listening (an API
  server restarting: a refused connection, which never reaches the server, so transports ask
  :meth:`RequestFailures.take_refusal` before they send). Each client library then raises its
  own error, and retries as it would over a socket.
- **A stalled watch cache** (:class:`CacheStall`, ``APIServer.stall_watch_cache``): the
  apiserver's watch cache stops at one resourceVersion while storage moves on, as a lagging
  replica or a slow cache does. While stalled, lists with ``resourceVersion=0`` ("any") are
  served from the cache and so are older than what the client may already have seen (stale
  lists, kubernetes#59848); a list or watch from a resourceVersion newer than the cache answers
  504 ``Too large resource version`` (kubernetes#91073); live watches receive nothing new. When
  the cache resumes, every held event is delivered in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesim.apiserver import status as st
from kubesim.apiserver.resources import STANDARD_VERBS, ResourceType
from kubesim.apiserver.storage import Event

JSON = dict[str, Any]

# The codes a fail_requests() fault can answer with, and the Status reason of each.
FAILURE_REASONS: dict[int, str] = {
    403: "Forbidden",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
# The verbs a request can be failed on: the REST verbs of a resource.
FAILABLE_VERBS = STANDARD_VERBS
# Those that change what the server stores.
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass
class _Rule:
    remaining: int | None  # None: every matching request until ``until``
    code: int  # 0: the connection is reset instead (reset_connections)
    verbs: frozenset[str]
    resource: ResourceType | None
    retry_after: int | None
    until: float | None = None  # the server time a lasting failure ends (an outage)


class ConnectionReset(Exception):
    """A request the server read and answered by resetting its connection: no status, no
    body. Transports turn it into their library's error (``ConnectionResetError`` below it)."""


@dataclass
class _Refusal:
    remaining: int | None  # None: every connection until ``until``
    until: float | None


class RequestFailures:
    """Pending injected failures, consumed first-registered first."""

    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._refusals: list[_Refusal] = []
        self._refused_at: float | None = None  # the server time of the last refusal counted
        self.injected = 0
        self.injected_writes = 0  # of those, on a write (WRITE_VERBS)
        # The verbs of the requests asked of the server so far, each once, in the order first
        # asked: what a fault can draw among (a poller's get, a controller's patch).
        self.sent: dict[str, None] = {}
        # Asked before each request: True lets it through untouched, consuming no rule (the
        # requests of an instrument, such as the history oracle's fresh store).
        self.exempt: Callable[[], bool] | None = None

    def add(
        self,
        count: int | None,
        *,
        code: int,
        verbs: Iterable[str],
        resource: ResourceType | None,
        retry_after: int | None,
        until: float | None = None,
    ) -> None:
        verb_set = frozenset(verbs)
        self._rules.append(_Rule(count, code, verb_set, resource, retry_after, until))

    def refuse(self, count: int | None, *, until: float | None = None) -> None:
        self._refusals.append(_Refusal(count, until))

    @property
    def active(self) -> bool:
        """Whether any failure is still to come (counted or lasting)."""
        return bool(self._rules or self._refusals)

    @property
    def pending(self) -> int:
        """Failures counted out still to come (an outage's are not counted: they last)."""
        failures = sum(rule.remaining or 0 for rule in self._rules)
        return failures + sum(refusal.remaining or 0 for refusal in self._refusals)

    def lasting(self, now: float) -> str | None:
        """What a request gets now from a lasting failure (an outage, a restart), in words:
        ``"answered 503"``, ``"refused"``; None when none lasts."""
        for refusal in self._refusals:
            if refusal.remaining is None and (refusal.until is None or now < refusal.until):
                return "refused (the API server is restarting)"
        for rule in self._rules:
            if rule.remaining is None and (rule.until is None or now < rule.until):
                ends = f" until {rule.until:g} s" if rule.until is not None else ""
                answer = f"answered {rule.code}" if rule.code else "reset"
                return f"{answer} (an outage{ends})"
        return None

    def clear(self) -> None:
        self._rules.clear()
        self._refusals.clear()

    @property
    def refusing(self) -> bool:
        """Whether a refusal is pending (read without the lock: a cheap first look)."""
        return bool(self._refusals)

    def take_refusal(self, *, now: float) -> bool:
        """Whether the connection of the request about to be sent is refused (consumed)."""
        if not self._refusals or (self.exempt is not None and self.exempt()):
            return False
        for refusal in list(self._refusals):
            if refusal.until is not None and now >= refusal.until:
                self._refusals.remove(refusal)  # the server is back
                continue
            if refusal.remaining is not None:
                refusal.remaining -= 1
                if refusal.remaining == 0:
                    self._refusals.remove(refusal)
            if now != self._refused_at:
                # urllib3 asks a refused connection again three times at once: one attempt of
                # the store's, as the progress oracle judges retries (its backoff, not urllib3's).
                self._refused_at = now
                self.injected += 1
            return True
        return False

    def take(
        self, verb: str, resource: ResourceType, namespace: str | None, *, now: float = 0.0
    ) -> st.StatusError | ConnectionReset | None:
        """The error to answer this request with (a ``Status``, or a reset connection), or None
        to serve it."""
        if verb not in self.sent:
            self.sent[verb] = None
        if self.exempt is not None and self._rules and self.exempt():
            return None
        for rule in list(self._rules):
            if rule.until is not None and now >= rule.until:
                self._rules.remove(rule)  # the outage is over
                continue
            if verb in rule.verbs and rule.resource in (None, resource):
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._rules.remove(rule)
                self.injected += 1
                if verb in WRITE_VERBS:
                    self.injected_writes += 1
                if rule.code == 0:
                    return ConnectionReset(f"connection reset before the answer to a {verb}")
                return failure_status(
                    rule.code, verb, resource, namespace, retry_after=rule.retry_after
                )
        return None


def failure_status(
    code: int,
    verb: str,
    resource: ResourceType,
    namespace: str | None,
    *,
    retry_after: int | None = None,
) -> st.StatusError:
    """The Status kube-apiserver sends for ``code`` on this request (apimachinery errors.go)."""
    qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    if code == 403:
        # RBAC's authorizer message (authorization/authorizer.go via NewForbidden).
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        reason = (
            f'User "system:serviceaccount:default:kubesim-store" cannot {verb} resource '
            f'"{resource.plural}" in API group "{resource.group}" {scope}'
        )
        details: JSON = {"kind": resource.plural}
        if resource.group:
            details["group"] = resource.group
        return st.StatusError(
            st.failure(403, "Forbidden", f"{qualified} is forbidden: {reason}", details)
        )
    if code == 429:
        # cacher.go while the watch cache is not ready: NewTooManyRequests(..., 1).
        seconds = 1 if retry_after is None else retry_after
        return st.StatusError(
            st.failure(
                429,
                "TooManyRequests",
                "Too many requests: storage is (re)initializing",
                {"retryAfterSeconds": seconds},
            )
        )
    if code == 500:
        return st.internal_error("injected by kubesim: fail_requests(code=500)")
    if code == 503:
        details = {"retryAfterSeconds": retry_after} if retry_after else {}
        return st.StatusError(
            st.failure(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
                details,
            )
        )
    if code == 504:
        return st.timeout(
            f"request did not complete within the allowed duration ({verb} {qualified})",
            retry_after=1 if retry_after is None else retry_after,
        )
    raise ValueError(f"code must be one of {sorted(FAILURE_REASONS)}, got code={code!r}")


class CacheStall:
    """A watch cache stopped at ``rv``: the events committed since, held for delivery."""

    def __init__(self, rv: int) -> None:
        self.rv = rv
        self.held: list[Event] = []
