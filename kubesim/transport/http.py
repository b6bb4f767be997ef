"""The fake API server on a real HTTP/1.1 socket, for kubectl, client-go and any client.

Plain responses carry a ``Content-Length``. Watches are ``Transfer-Encoding: chunked``: headers
are flushed before the first event (apiserver ``watch.go`` ``BeginStream``), every chunk holds
whole lines (one compact JSON object per line, never a blank line), a clean end writes the
terminating chunk, and an abrupt drop closes the socket without it.

The transport never reads the clock: virtual time moves only when its owner advances the
server (``kubesim serve`` does so from the wall clock; tests may use ``POST /kubesim/advance``).

Two security options live here rather than in the server core: ``tls`` (an
:class:`ssl.SSLContext`; the handshake runs in the connection's own thread, so a silent or
plain-HTTP client never blocks the accept loop) and ``token`` (bearer-token authentication:
every request without ``Authorization: Bearer <token>`` gets a 401 ``Unauthorized`` Status, as
kube-apiserver's authentication filter answers before anything else runs). Client certificates
the TLS context verified and service account tokens the server issued authenticate too, and
a bearer token nothing accepts is a 401 with or without ``token``.
"""

from __future__ import annotations

import contextlib
import hmac
import socket
import ssl
import struct
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubesim.apiserver import reviews
from kubesim.apiserver.encoding import dumps
from kubesim.apiserver.live import LiveWait
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.status import bad_request, too_large_entity, unauthorized
from kubesim.apiserver.watch import WatchDropped, WatchStream
from kubesim.wire.routes import MAX_BODY_BYTES, Request, handle

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# How often the accept loop checks for close(); the stdlib default (0.5 s) makes every close slow.
_SHUTDOWN_POLL = 0.05
# SO_LINGER on, zero seconds: close() sends a reset and drops what is unsent.
_LINGER_ZERO = struct.pack("ii", 1, 0)
# Hang guard for a TLS handshake (it runs in the connection's thread, never the accept loop).
_HANDSHAKE_TIMEOUT = 10.0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubesim"
    sys_version = ""
    # TCP_NODELAY, as Go (and so kube-apiserver) sets on every connection. Headers and body go
    # out in separate writes; with Nagle on, the body waits for the client's delayed ACK and
    # every keep-alive request costs about 40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _read_body(self) -> bytes | None:
        """The request body; None when there is nothing to serve (413 answered, client gone)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(body)
                if len(body) + size > MAX_BODY_BYTES:
                    self._send_status(too_large_entity(MAX_BODY_BYTES).status, 413)
                    self.close_connection = True
                    return None
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send_status(too_large_entity(MAX_BODY_BYTES).status, 413)
            self.close_connection = True  # the unread body makes the connection unusable
            return None
        data = self.rfile.read(length) if length else b""
        if len(data) < length:
            # The client left mid-body: there is no request to serve and no one to answer.
            self.close_connection = True
            return None
        return data

    def _send_status(self, status: dict[str, Any], code: int) -> None:
        self._send(code, dumps(status), "application/json")

    def _send(
        self, code: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache, private")
        for name, value in (headers or {}).items():  # Retry-After, Warning
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _certificate_user(self) -> dict[str, Any] | None:
        """The user of the client certificate the TLS handshake verified, or None: x509
        request authentication, the common name the user and the organizations its groups."""
        if not isinstance(self.connection, ssl.SSLSocket):
            return None
        certificate = self.connection.getpeercert()
        if not certificate:
            return None
        # ``subject`` is a tuple of relative distinguished names, each a tuple of (key, value).
        names: list[tuple[str, str]] = [
            (str(pair[0]), str(pair[1])) for rdn in certificate.get("subject", ()) for pair in rdn
        ]
        common = [value for key, value in names if key == "commonName"]
        if not common:
            return None
        groups = [value for key, value in names if key == "organizationName"]
        return {"username": common[0], "groups": [*groups, "system:authenticated"]}

    def _authorized(self, user: dict[str, Any] | None) -> bool:
        """kube-apiserver's authenticators, any one enough: a verified client certificate, the
        ``--token``, or a service account token the server issued. A request that presents a
        bearer token none of them accepts is refused even without ``--token``, as a cluster
        that allows anonymous requests refuses bad credentials; one that presents none is
        refused only under ``--token``."""
        if user is not None:
            return True
        token = self.server.token
        header = self.headers.get("Authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return token is None
        if token is not None and hmac.compare_digest(credentials.strip().encode(), token.encode()):
            return True
        api = self.server.api
        with api.lock:
            return reviews.token_user(api, header) is not None

    def _serve(self) -> None:
        user = self._certificate_user()
        if not self._authorized(user):
            # Answered before the body is read: a request with a body leaves it unread.
            if self.headers.get("Content-Length", "0") != "0" or self.headers.get(
                "Transfer-Encoding"
            ):
                self.close_connection = True
            self._send_status(unauthorized().status, 401)
            return
        try:
            body = self._read_body()
        except ValueError:
            self._send_status(bad_request("malformed chunked request body").status, 400)
            self.close_connection = True
            return
        if body is None:
            return
        target = self.path
        path, _, query = target.partition("?")
        lines = tuple(self.headers.items())
        request = Request(self.command, path or "/", query, dict(lines), body, user, lines)
        response = handle(self.server.api, request)
        if response.reset:
            self._reset()
            return
        if isinstance(response.body, WatchStream):
            self._stream(response.body, response.content_type, response.headers)
        else:
            try:
                self._send(response.status, response.body, response.content_type, response.headers)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client went away before its answer

    def _reset(self) -> None:
        """Answer nothing: close with a zero linger, which sends a TCP reset, not a FIN (the
        client reads ``ECONNRESET``, as from a load balancer or server that died)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)
            self.connection.close()

    def _stream(self, stream: WatchStream, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)  # a watch's JSON, a followed log's text
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():  # a deprecated version's Warning
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()  # headers before the first event, as BeginStream does
        try:
            while not self.server.closing:
                try:
                    chunk = stream.poll()
                except WatchDropped:
                    self.close_connection = True
                    # The peer may already be gone; the drop is what we wanted either way.
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if chunk is None:
                    # Returns on any change, close() included, or after a short recheck.
                    self.server.wait.wait(stream)
                    continue
                if not chunk:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            stream.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def __getattr__(self, name: str) -> Any:
        # Any other method (TRACE, PROPFIND, a made-up one) goes to the routes too, which answer
        # a Status 405 MethodNotAllowed as kube-apiserver does, not http.server's HTML 501.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog. socketserver's default of 5 drops the SYNs of a sixth client opening
    # at the same moment, which retries a second later: ten watchers starting together waited
    # that second, long enough for a short history window to expire them. The kernel caps it
    # at net.core.somaxconn (4096 on current kernels).
    request_queue_size = 1024

    def __init__(
        self,
        address: tuple[str, int],
        api: APIServer,
        verbose: bool,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> None:
        self.api = api
        self.verbose = verbose
        self.closing = False
        # How a watch handler waits for its next line, whatever api.wait_policy is later set to.
        self.wait = LiveWait(follow_wall_clock=False)
        self.tls = tls
        self.token = token
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | ssl.SSLError | TimeoutError) and not self.verbose:
            return  # the client went away or spoke no TLS: not a server failure, no traceback
        super().handle_error(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        try:
            request.settimeout(_HANDSHAKE_TIMEOUT)
            connection = self.tls.wrap_socket(request, server_side=True)
        except OSError:  # ssl.SSLError included: plain HTTP, a bad client, a silent one
            if self.verbose:
                self.handle_error(request, client_address)
            return
        try:
            connection.settimeout(None)
            _Handler(connection, client_address, self)
        finally:
            connection.close()


class HTTPTransport:
    """Serve ``api`` on ``host:port`` in a background thread. Loopback only unless allowed.

    Use as a context manager, or call :meth:`start` and :meth:`close`.
    """

    def __init__(
        self,
        api: APIServer,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        allow_non_loopback: bool = False,
        verbose: bool = False,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> None:
        if host not in LOOPBACK_HOSTS and not allow_non_loopback:
            raise ValueError(
                f"refusing to bind host={host!r}: kubesim serves on loopback only unless "
                "allow_non_loopback=True (the CLI: --host with --allow-non-loopback)"
            )
        self.api = api
        # The live server's policy, minus the clock: whoever owns the transport advances time.
        api.wait_policy = LiveWait(follow_wall_clock=False)
        if token is not None and not token:
            raise ValueError("an empty token would let every request in")
        self._httpd = _HTTPServer((host, port), api, verbose, tls, token)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def url(self) -> str:
        host = self.host
        scheme = "https" if self._httpd.tls is not None else "http"
        netloc = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        return f"{scheme}://{netloc}"

    def start(self) -> HTTPTransport:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            args=(_SHUTDOWN_POLL,),
            name="kubesim-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def close(self) -> None:
        self._httpd.closing = True
        with self.api.lock:
            self.api.changed.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> HTTPTransport:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_kubeconfig(
    path: str,
    url: str,
    *,
    namespace: str = "default",
    ca_pem: bytes | None = None,
    token: str | None = None,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
) -> None:
    """A kubeconfig with one cluster, user and context named ``kubesim``.

    ``ca_pem`` goes in as ``certificate-authority-data``, ``token`` as the user's bearer token,
    the client certificate and key as ``client-certificate-data`` and ``client-key-data``; with
    any secret in it, the file is readable by its owner only.
    """
    import base64
    import json
    import os

    cluster: dict[str, Any] = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    user: dict[str, Any] = {}
    if client_cert_pem is not None and client_key_pem is not None:
        user["client-certificate-data"] = base64.b64encode(client_cert_pem).decode("ascii")
        user["client-key-data"] = base64.b64encode(client_key_pem).decode("ascii")
    if token is not None:
        user["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubesim", "cluster": cluster}],
        "users": [{"name": "kubesim", "user": user}],
        "contexts": [
            {
                "name": "kubesim",
                "context": {"cluster": "kubesim", "user": "kubesim", "namespace": namespace},
            }
        ],
        "current-context": "kubesim",
        "preferences": {},
    }
    with open(path, "w", encoding="utf-8") as handle_:
        if user:
            os.chmod(path, 0o600)
        json.dump(config, handle_, indent=2)
        handle_.write("\n")
