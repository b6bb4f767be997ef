"""Raw-HTTP helpers for the conformance suite: plain requests and a chunked watch reader.

Nothing here knows kubesim's internals: requests go over a real socket with the standard
library only (``http.client`` for plain requests, a raw socket for watches, so that the chunk
framing itself can be checked). Socket timeouts are hang guards, never part of an assertion.

:class:`WatchReader` is the reusable piece. It reads the status line and headers itself, then
decodes the chunked body into watch lines and tells a *clean* end (the terminating 0-size
chunk) from an *abrupt* one (the connection closed without it), the two ways kube-apiserver
ends a watch (k8s-wire.md §1.4, behaviour 12).
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

JSON = dict[str, Any]

# Hang guard for every socket read: far longer than any request should take.
HANG_GUARD_SECONDS = 15.0

CLEAN = "clean"
ABRUPT = "abrupt"


def query(**params: str | int | None) -> str:
    """``?a=1&b=2`` from keyword arguments, skipping None values ('' gives a bare ``?a=``)."""
    items = [(k, str(v)) for k, v in params.items() if v is not None]
    return "?" + urllib.parse.urlencode(items) if items else ""


def compact(obj: Any) -> str:
    """The compact JSON encoding Go's json.Encoder produces (no spaces, key order kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Reply:
    """A complete (non-streaming) HTTP response."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def __repr__(self) -> str:  # shows up in assertion failures
        return f"Reply({self.status}, {self.body[:600]!r})"


@dataclass
class Endpoint:
    """Where a kubesim server listens; every request opens its own connection."""

    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = "application/json",
        leave_streams: bool = False,
    ) -> Reply:
        """Send one request. ``body`` may be bytes (sent as is) or a JSON value (encoded).

        ``leave_streams``: a chunked answer (a watch that opened) is returned with an empty
        body as soon as its headers arrive, instead of read until the server ends it."""
        data: bytes | None
        if body is None:
            data = None
        elif isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body).encode()
        sent_headers = {"Accept": "application/json"}
        if data is not None and content_type is not None:
            sent_headers["Content-Type"] = content_type
        sent_headers.update(headers or {})
        connection = http.client.HTTPConnection(self.host, self.port, timeout=HANG_GUARD_SECONDS)
        try:
            connection.request(method, path, body=data, headers=sent_headers)
            response = connection.getresponse()
            lowered = {k.lower(): v for k, v in response.getheaders()}
            if leave_streams and lowered.get("transfer-encoding") == "chunked":
                return Reply(response.status, lowered, b"")
            return Reply(response.status, lowered, response.read())
        finally:
            connection.close()

    # -- conveniences for the verbs -------------------------------------------------------
    def get(self, path: str, **headers: str) -> Reply:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, body: Any) -> Reply:
        return self.request("POST", path, body)

    def put(self, path: str, body: Any) -> Reply:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any, patch_type: str) -> Reply:
        return self.request("PATCH", path, body, content_type=patch_type)

    def delete(self, path: str) -> Reply:
        return self.request("DELETE", path)

    def ok(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        expect: int | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """Send and return the decoded JSON body, asserting a 2xx (or the exact ``expect``)."""
        reply = self.request(method, path, body, content_type=content_type)
        if expect is not None:
            assert reply.status == expect, f"{method} {path}: {reply!r}"
        else:
            assert 200 <= reply.status < 300, f"{method} {path}: {reply!r}"
        return reply.json()

    # -- admin API ------------------------------------------------------------------------
    def admin(self, verb: str, **params: str | int) -> JSON:
        reply = self.request("POST", f"/kubesim/{verb}{query(**params)}")
        assert reply.status == 200, f"POST /kubesim/{verb}: {reply!r}"
        result: JSON = reply.json()
        return result

    def state(self) -> JSON:
        reply = self.get("/kubesim/state")
        assert reply.status == 200, reply
        result: JSON = reply.json()
        return result

    def current_rv(self) -> int:
        return int(self.state()["resourceVersion"])

    def advance(self, seconds: float) -> None:
        self.admin("advance", seconds=str(seconds))

    def watch(
        self,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        receive_buffer: int | None = None,
    ) -> WatchReader:
        return WatchReader.open(
            self.host, self.port, path, headers=headers, receive_buffer=receive_buffer
        )

    def alive(self) -> bool:
        """The server still answers a plain request."""
        return self.get("/version").status == 200


class WireError(AssertionError):
    """The server broke the wire format (framing, compact JSON lines, headers)."""


@dataclass
class WatchReader:
    """One watch request on a raw socket, read line by line.

    ``status``/``headers`` are available as soon as :meth:`open` returns, before any event.
    A non-200 answer is read whole into ``body``. For a 200 answer, :meth:`next_event` returns
    one decoded watch event at a time and None once the stream ended; ``end`` is then
    :data:`CLEAN` (0-size chunk seen) or :data:`ABRUPT` (connection closed without it).
    Every raw chunk and line is kept in ``chunks``/``lines`` for wire-level assertions.
    """

    sock: socket.socket
    status: int
    reason: str
    headers: dict[str, str]
    body: bytes = b""
    chunks: list[bytes] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    end: str | None = None
    _file: BinaryIO | None = None
    _pending: bytearray = field(default_factory=bytearray)
    _ready: list[bytes] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        host: str,
        port: int,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        receive_buffer: int | None = None,
    ) -> WatchReader:
        """Send the request and read the response head.

        ``receive_buffer`` pins the socket's SO_RCVBUF (before connecting), so that a client
        that does not read makes the server block on a known amount of unsent data.
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.settimeout(HANG_GUARD_SECONDS)
        sock.connect((host, port))
        sent = {"Host": f"{host}:{port}", "Accept": "application/json", "User-Agent": "conformance"}
        sent.update(headers or {})
        head = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items())
        sock.sendall((head + "\r\n").encode("latin-1"))
        stream = sock.makefile("rb")
        status_line = stream.readline(65537).decode("latin-1").rstrip("\r\n")
        if not status_line:
            raise WireError(f"GET {path}: connection closed before a status line")
        version, _, rest = status_line.partition(" ")
        code_text, _, reason = rest.partition(" ")
        if version != "HTTP/1.1" or not code_text.isdigit():
            raise WireError(f"GET {path}: bad status line {status_line!r}")
        received: dict[str, str] = {}
        while True:
            line = stream.readline(65537).decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            name, _, value = line.partition(":")
            received[name.strip().lower()] = value.strip()
        reader = cls(sock, int(code_text), reason, received, _file=stream)
        if reader.status != 200 or received.get("transfer-encoding", "").lower() != "chunked":
            length = int(received.get("content-length") or 0)
            reader.body = stream.read(length) if length else b""
            reader.end = CLEAN
        return reader

    # -- checks on the response head ------------------------------------------------------
    def assert_watch_head(self) -> None:
        """200, ``Transfer-Encoding: chunked``, ``Content-Type: application/json`` (§1.2)."""
        assert self.status == 200, f"watch answered {self.status}: {self.body[:600]!r}"
        assert self.headers.get("transfer-encoding", "").lower() == "chunked", self.headers
        assert self.headers.get("content-type") == "application/json", self.headers
        assert "content-length" not in self.headers, self.headers

    def json_body(self) -> Any:
        return json.loads(self.body)

    # -- chunk decoding -------------------------------------------------------------------
    def _read_chunk(self) -> bytes | None:
        """The next chunk's data; None at the end (``end`` says how it ended)."""
        assert self._file is not None
        size_line = self._file.readline(65537)
        if not size_line:
            self.end = ABRUPT
            return None
        if not size_line.endswith(b"\r\n"):
            self.end = ABRUPT  # cut inside the size line
            return None
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError:
            raise WireError(f"bad chunk size line {size_line!r}") from None
        if size == 0:
            trailer = self._file.readline(65537)
            if trailer != b"\r\n":
                raise WireError(f"terminating chunk not followed by CRLF: {trailer!r}")
            self.end = CLEAN
            return None
        data = self._file.read(size)
        if len(data) < size:
            self.end = ABRUPT
            return None
        crlf = self._file.read(2)
        if crlf != b"\r\n":
            if len(crlf) < 2:
                self.end = ABRUPT
                return None
            raise WireError(f"chunk data not followed by CRLF: {crlf!r}")
        self.chunks.append(data)
        return data

    def _fill(self) -> bool:
        """Read chunks until at least one complete line is ready; False at the end."""
        while not self._ready:
            if self.end is not None:
                return False
            data = self._read_chunk()
            if data is None:
                if self._pending:
                    raise WireError(f"stream ended inside a line: {bytes(self._pending)[:200]!r}")
                return False
            self._pending += data
            while True:
                newline = self._pending.find(b"\n")
                if newline < 0:
                    break
                line = bytes(self._pending[: newline + 1])
                del self._pending[: newline + 1]
                self._ready.append(line)
        return True

    def next_line(self) -> bytes | None:
        if not self._fill():
            return None
        line = self._ready.pop(0)
        self.lines.append(line)
        return line

    def next_event(self) -> JSON | None:
        """The next event, checked to be one compact JSON object on its own line."""
        line = self.next_line()
        if line is None:
            return None
        return parse_event_line(line)

    def read_events(self, count: int) -> list[JSON]:
        """Exactly ``count`` events; the stream ending first is an assertion failure."""
        events: list[JSON] = []
        for _ in range(count):
            event = self.next_event()
            assert event is not None, (
                f"stream ended ({self.end}) after {len(events)} of {count} events: {events}"
            )
            events.append(event)
        return events

    def read_until(self, predicate: Any) -> list[JSON]:
        """Events up to and including the first one ``predicate`` accepts."""
        events: list[JSON] = []
        while True:
            event = self.next_event()
            assert event is not None, (
                f"stream ended ({self.end}) before the awaited event: {events}"
            )
            events.append(event)
            if predicate(event):
                return events

    def read_to_end(self) -> list[JSON]:
        """Every remaining event; afterwards ``end`` is CLEAN or ABRUPT."""
        events: list[JSON] = []
        while (event := self.next_event()) is not None:
            events.append(event)
        return events

    def close(self) -> None:
        try:
            if self._file is not None:
                self._file.close()
        finally:
            self.sock.close()

    def __enter__(self) -> WatchReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_event_line(line: bytes) -> JSON:
    """Decode one watch line, asserting the §1.2 framing: compact JSON, one object, ``\\n``."""
    if not line.endswith(b"\n") or line.count(b"\n") != 1:
        raise WireError(f"a watch line must end with exactly one newline: {line[:200]!r}")
    text = line[:-1].decode("utf-8")
    if not text.strip():
        raise WireError("blank line in a watch stream")
    event = json.loads(text)
    if not isinstance(event, dict) or set(event) != {"type", "object"}:
        raise WireError(f"a watch line must be {{type, object}}: {text[:200]}")
    if compact(event) != text:
        raise WireError(f"watch line is not compact JSON: {text[:200]}")
    if event["type"] not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"):
        raise WireError(f"unknown event type {event['type']!r}")
    return event


# -- small readers over events --------------------------------------------------------------
def summary(events: list[JSON]) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) per event, the usual thing to compare."""
    out = []
    for event in events:
        meta = event["object"].get("metadata", {})
        out.append((event["type"], meta.get("name", ""), meta.get("resourceVersion", "")))
    return out


def rv_of(obj: JSON) -> str:
    return str(obj["metadata"]["resourceVersion"])


def is_named(name: str) -> Any:
    """Predicate for :meth:`WatchReader.read_until`: an event about the object ``name``."""
    return lambda event: event["object"].get("metadata", {}).get("name") == name
