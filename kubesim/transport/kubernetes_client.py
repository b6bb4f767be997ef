"""In-process transport for the official ``kubernetes`` client: no sockets, same wire.

The client builds every request itself (URL, query encoding, JSON body, patch content type)
and hands it to ``ApiClient.rest_client.pool_manager.request(...)``. Replacing that one
object with :class:`PoolManager` routes requests into :func:`kubesim.wire.routes.handle`
and returns urllib3-shaped responses, so everything above the pool manager, ``Watch().stream``
included, runs unchanged (the pool manager is the narrowest seam the client has: below it only
urllib3; verified on kubernetes 29 to 37).

A watch response streams lines from a :class:`~kubesim.apiserver.watch.WatchStream`. When no line
is ready the read blocks through the server's wait policy: in a simulation that parks the
store's thread and lets virtual time move; outside one (the default
:class:`~kubesim.apiserver.live.LiveWait`) it waits until another thread writes, with virtual time
following the wall clock, as against a live server. Before each request the transport brings
virtual time up to date (``wait_policy.catch_up``, when the policy has one).

Ends of a watch, as the client sees them (urllib3 2, measured against ``kubesim serve``):

- clean end (server timeout, ``server.expire_watches()``): the body ends; ``Watch().stream``
  stops when ``timeout_seconds`` was given, else re-watches from its last resource version.
- abrupt drop (``server.drop_watches()``): ``urllib3.exceptions.ProtocolError("Response ended
  prematurely")``, what urllib3 raises when a chunked body is cut at a chunk boundary. ``Watch``
  does not catch it: it reaches the caller, as over a real socket.
- ``Watch.stop()`` from another thread: kubernetes >= 37 shuts down ``resp.connection.sock`` to
  wake the blocked reader. The fake response has that socket; shutting it down cancels the watch
  and the blocked read raises the same ``ProtocolError``, which is what the real client does
  when its socket is shut down under a blocked read (it does not end cleanly).
"""

from __future__ import annotations

import contextlib
import http
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubesim._core.untraced import untraced
from kubesim.apiserver.encoding import dumps
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.watch import WatchDropped, WatchReadTimeout, WatchStream
from kubesim.sched.thread_pool import ControlledPool
from kubesim.transport.connection_errors import POOL, failed_connection, urllib3_error
from kubesim.transport.routing import exchange
from kubesim.wire.routes import Request

DEFAULT_HOST = "http://kubesim.invalid"


def _require_kubernetes() -> Any:
    try:
        import kubernetes
    except ImportError as exc:  # a clear message beats an AttributeError three calls later
        raise ImportError(
            "kubesim's in-process transport for the official client needs the 'kubernetes' "
            "package: pip install 'kubesim[client]'"
        ) from exc
    return kubernetes


# urllib3 2's message for a chunked body that ends where the next chunk's size line should be
# (HTTPResponse._update_chunk_length), with no other argument.
PREMATURE_END = "Response ended prematurely"


def _premature_end() -> Exception:
    import urllib3

    error: Exception = urllib3.exceptions.ProtocolError(PREMATURE_END)
    return error


def _read_timed_out(seconds: float | None) -> Exception:
    """What urllib3 raises when a socket read of a streamed body outlasts its read timeout
    (``HTTPResponse._error_catcher``: a ``socket.timeout`` becomes ``ReadTimeoutError``)."""
    import urllib3

    error: Exception = urllib3.exceptions.ReadTimeoutError(
        None,  # type: ignore[arg-type]
        None,
        f"Read timed out. (read timeout={seconds:g})" if seconds is not None else "Read timed out.",
    )
    return error


def read_timeout_of(timeout: Any) -> float | None:
    """The read timeout a client asked for: a ``urllib3.Timeout`` (its read or total), a number
    (both connect and read), a ``(connect, read)`` pair, or None."""
    if timeout is None:
        return None
    if isinstance(timeout, int | float):
        return float(timeout)
    if isinstance(timeout, tuple) and len(timeout) == 2:
        return None if timeout[1] is None else float(timeout[1])
    try:
        read = getattr(timeout, "read_timeout", None)
    except Exception:  # urllib3's TimeoutStateError: a total, its timer not started yet
        # The official client turns ``_request_timeout=30`` into ``Timeout(total=30)``; urllib3
        # starts its timer when it connects and reads for what is left of the total. Connecting
        # takes no time in the simulation: the read gets the whole total.
        read = getattr(timeout, "total", None)
    return float(read) if isinstance(read, int | float) else None


class FakeSocket:
    """What ``Watch.stop()`` finds at ``resp.connection.sock``: shutting it down cuts the body."""

    def __init__(self, response: FakeHTTPResponse) -> None:
        self._response = response

    def shutdown(self, how: int) -> None:
        self._response._cut()

    def close(self) -> None:
        self._response._cut()


class FakeConnection:
    """Stands in for ``urllib3.connection.HTTPConnection`` as ``HTTPResponse.connection``."""

    def __init__(self, response: FakeHTTPResponse) -> None:
        self.sock = FakeSocket(response)


# The reason phrase of every status code the standard library knows (an unknown one: "").
_REASONS = {status.value: status.phrase for status in http.HTTPStatus}


class FakeHTTPResponse:
    """The subset of ``urllib3.HTTPResponse`` the kubernetes client touches."""

    def __init__(
        self,
        status: int,
        content_type: str,
        body: bytes | WatchStream,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.reason = _REASONS.get(status, "")
        self._headers = {"Content-Type": content_type, **(headers or {})}
        self._header_dict: Any = None
        self._body = body
        self._data: bytes | None = body if isinstance(body, bytes) else None
        self.closed = False
        self._socket_shut_down = False
        self.connection = FakeConnection(self)  # Watch.stop() shuts .connection.sock down

    @property
    def headers(self) -> Any:
        """urllib3's case-insensitive ``HTTPHeaderDict``, built when first asked for: most
        responses are read for their body alone, and building one costs more than the rest
        of the response."""
        if self._header_dict is None:
            import urllib3

            self._header_dict = urllib3.HTTPHeaderDict(self._headers)
        return self._header_dict

    @headers.setter
    def headers(self, value: Any) -> None:
        self._header_dict = value

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = b"".join(self.stream())
        return self._data

    def read(self, amt: int | None = None, decode_content: bool | None = None) -> bytes:
        return self.data

    def json(self) -> Any:
        """The body decoded as JSON, as urllib3 2's ``HTTPResponse.json()`` (a
        ``_preload_content=False`` answer read with ``.json()``)."""
        import json

        return json.loads(self.data.decode("utf-8"))

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        body = self._body
        if isinstance(body, bytes):
            if body:
                yield body
            return
        while not self.closed:
            if self._socket_shut_down:
                raise _premature_end()
            try:
                chunk = untraced(body.next_chunk)
            except WatchDropped as exc:
                raise _premature_end() from exc
            except WatchReadTimeout as exc:
                raise _read_timed_out(body.read_timeout) from exc
            if not chunk:
                if self._socket_shut_down:  # woken by the shutdown, not by the server's end
                    raise _premature_end()
                return
            yield chunk

    read_chunked = stream

    def getheaders(self) -> Any:
        return self.headers

    def getheader(self, name: str, default: str | None = None) -> str | None:
        value: str | None = self.headers.get(name, default)
        return value

    def close(self) -> None:
        self.closed = True
        if isinstance(self._body, WatchStream):
            self._body.close()

    def _cut(self) -> None:
        """The socket was shut down: the body ends without its terminating chunk."""
        self._socket_shut_down = True
        if isinstance(self._body, WatchStream):
            # Ends the watch (the client went away) and notifies, so a blocked read wakes.
            self._body.close()

    def release_conn(self) -> None:
        if isinstance(self._body, WatchStream):
            self._body.close()

    def drain_conn(self) -> None:
        self.release_conn()

    def get_redirect_location(self) -> bool:
        """urllib3's answer for a response that is no redirect (the server sends none)."""
        return False


def retried(
    send: Callable[[], FakeHTTPResponse], method: str, url: str, retries: Any
) -> FakeHTTPResponse:
    """``send()`` as ``urllib3.HTTPConnectionPool.urlopen`` sends a request: answers its
    ``Retry`` (``retries``: a ``Retry``, an int, False, or None for urllib3's default) says to
    ask again are asked again, after its sleep (``time.sleep``: virtual in a run)."""
    import urllib3

    policy = urllib3.util.Retry.from_int(retries)
    while True:
        try:
            response = send()
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.NewConnectionError) as error:
            # A reset or refused connection (kubesim.transport.connection_errors): asked again
            # as urlopen does (connect errors whatever the method, read errors for idempotent
            # ones); raised as it is, or in a MaxRetryError once the Retry runs out.
            policy = policy.increment(method.upper(), url, error=error, _pool=POOL)  # type: ignore[arg-type]
            policy.sleep()
            continue
        has_retry_after = bool(response.headers.get("Retry-After"))
        if not policy.is_retry(method.upper(), response.status, has_retry_after):
            return response
        try:
            policy = policy.increment(method.upper(), url, response=response)  # type: ignore[arg-type]
        except urllib3.exceptions.MaxRetryError:
            if policy.raise_on_status:
                response.drain_conn()
                raise
            return response
        response.drain_conn()
        policy.sleep(response)  # type: ignore[arg-type]


class PoolManager:
    """Stands in for ``urllib3.PoolManager`` inside ``kubernetes.client.rest.RESTClientObject``.

    ``retries``: what the urllib3 pool it replaces was given (the client's
    ``Configuration.retries``; None: urllib3's default, ``Retry(3)``). urllib3 retries inside
    ``urlopen`` before the client sees an answer: a 413, 429 or 503 that carries
    ``Retry-After`` is asked again after that many seconds, up to three times by default, for
    the idempotent methods (GET, PUT, DELETE, HEAD, OPTIONS). This pool does the same with the
    same ``urllib3.Retry`` object, so a store meets exactly the errors it would meet over a
    socket, and waits as long (in virtual time, in a simulation).
    """

    def __init__(self, server: APIServer, *, retries: Any = None) -> None:
        self.server = server
        self.retries = retries

    def request(
        self,
        method: str,
        url: str,
        fields: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Any = None,
        preload_content: bool = True,
        **_: Any,
    ) -> FakeHTTPResponse:
        # All of it is kubesim's code or urllib3's, never the store's: it runs untraced (no
        # scheduling point, and on 3.10/3.11 at full speed).
        return untraced(self._urlopen, method, url, fields, body, headers, timeout)

    def _urlopen(
        self,
        method: str,
        url: str,
        fields: Mapping[str, Any] | None,
        body: Any,
        headers: Mapping[str, str] | None,
        timeout: Any,
    ) -> FakeHTTPResponse:
        """One request as ``urllib3.HTTPConnectionPool.urlopen`` makes it."""
        return retried(
            lambda: self._request(method, url, fields, body, headers, timeout),
            method,
            url,
            self.retries,
        )

    def _request(
        self,
        method: str,
        url: str,
        fields: Mapping[str, Any] | None,
        body: Any,
        headers: Mapping[str, str] | None,
        timeout: Any,
    ) -> FakeHTTPResponse:
        if fields and method.upper() in ("GET", "HEAD", "DELETE"):
            # kubernetes <= 36 passes query parameters as urllib3 `fields`.
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(fields)
        if body is None:
            payload = b""
        elif isinstance(body, bytes):
            payload = body
        elif isinstance(body, str):
            payload = body.encode()
        else:
            payload = dumps(body)
        parts = urllib.parse.urlsplit(url)
        request = Request(
            method.upper(), parts.path or "/", parts.query, dict(headers or {}), payload
        )
        # In virtual time: a watch that stays quiet longer than the client's read timeout
        # raises in the reading thread, as a socket read would.
        response = exchange(self.server, request, read_timeout_of(timeout))
        how = failed_connection(response)
        if how is not None:
            raise urllib3_error(how)
        return FakeHTTPResponse(
            response.status, response.content_type, response.body, response.headers
        )

    def clear(self) -> None:
        pass


def kubernetes_client(server: APIServer, *, host: str = DEFAULT_HOST) -> Any:
    """A ``kubernetes.client.ApiClient`` whose every request goes to ``server``, in-process.

    ``CoreV1Api(client)``, ``AppsV1Api(client)``, ``kubernetes.watch.Watch().stream(...)`` and
    ``_preload_content=False`` raw watches all work; no socket is opened.
    """
    kubernetes = _require_kubernetes()
    configuration = kubernetes.client.Configuration(host=host)
    client = kubernetes.client.ApiClient(configuration)
    client.rest_client.pool_manager = PoolManager(
        server, retries=_configured_retries(client.rest_client.pool_manager)
    )
    return client


def _configured_retries(pool: Any) -> Any:
    """The ``retries`` the client gave the urllib3 pool manager it built (None: the default)."""
    return getattr(pool, "connection_pool_kw", {}).get("retries")


@contextlib.contextmanager
def patch_kubernetes(server: APIServer) -> Iterator[Any]:
    """Route *every* ``ApiClient`` created inside the block to ``server``.

    For code that builds its own clients (``CoreV1Api()`` with no argument,
    ``config.load_kube_config()``, ``config.load_incluster_config()``): inside the block the
    configuration loaders read no file and no environment, they point the default
    configuration at ``server``. Yields the default ``ApiClient``; restores everything after.
    """
    kubernetes = _require_kubernetes()
    import importlib

    config_modules = [
        importlib.import_module(name)
        for name in (
            "kubernetes.config",
            "kubernetes.config.kube_config",
            "kubernetes.config.incluster_config",
        )
    ]
    rest = kubernetes.client.rest
    original_init = rest.RESTClientObject.__init__

    def init(self: Any, configuration: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, configuration, *args, **kwargs)
        self.pool_manager = PoolManager(server, retries=_configured_retries(self.pool_manager))

    def load(*args: Any, **kwargs: Any) -> None:
        # load_kube_config(client_configuration=c) fills c; without one, the default.
        target = kwargs.get("client_configuration")
        if target is None:
            target = kubernetes.client.Configuration(host=DEFAULT_HOST)
            kubernetes.client.Configuration.set_default(target)
        else:
            target.host = DEFAULT_HOST

    loaders = [
        (module, name)
        for module in config_modules
        for name in ("load_kube_config", "load_incluster_config", "load_config")
        if hasattr(module, name)
    ]
    saved_loaders = [(module, name, getattr(module, name)) for module, name in loaders]
    # The default itself, put back as it was: set_default/get_default_copy deep-copy it (two
    # copies of a Configuration per run, a third of what patching costs).
    previous_configuration = getattr(kubernetes.client.Configuration, "_default", None)
    previous_default = getattr(kubernetes.client.ApiClient, "_default", None)
    # async_req=True calls run on the client's ThreadPool, built at the first such call: one
    # whose workers the scheduler controls and whose waits are all simulated.
    api_client_module: Any = importlib.import_module("kubernetes.client.api_client")
    previous_pool = getattr(api_client_module, "ThreadPool", None)
    rest.RESTClientObject.__init__ = init
    for module, name in loaders:
        setattr(module, name, load)
    if previous_pool is not None:
        api_client_module.ThreadPool = ControlledPool
    try:
        client = kubernetes_client(server)
        # kubernetes >= 37 keeps a default ApiClient; older clients build a fresh one per API
        # object, which the patched __init__ above already covers.
        set_default = getattr(kubernetes.client.ApiClient, "set_default", None)
        if set_default is not None:
            set_default(client)
        yield client
    finally:
        rest.RESTClientObject.__init__ = original_init
        if previous_pool is not None:
            api_client_module.ThreadPool = previous_pool
        for module, name, original in saved_loaders:
            setattr(module, name, original)
        kubernetes.client.Configuration._default = previous_configuration
        if hasattr(kubernetes.client.ApiClient, "_default"):
            kubernetes.client.ApiClient._default = previous_default
