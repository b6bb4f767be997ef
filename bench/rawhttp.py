"""A raw HTTP/1.1 watch reader: one socket, no HTTP library, chunked framing parsed by hand.

Kept minimal so that what it costs is the floor for any Python client: a ``recv`` loop, the
chunk-size lines, and one ``count`` (or one ``orjson.loads`` per line). The same parser runs
over captured bytes from memory for the "limit" rows.
"""

from __future__ import annotations

import socket
from typing import Any

import orjson

RECV_BYTES = 1 << 18  # 256 KiB per recv: a few chunks of kubesim's watch stream at most

JSON = dict[str, Any]


class ChunkedLineParser:
    """Parses a ``Transfer-Encoding: chunked`` body of newline-terminated watch lines.

    ``feed`` takes whatever ``recv`` returned. Each complete chunk is either counted
    (``lines`` += its newlines) or, with ``decode=True``, split into lines that go through
    ``orjson.loads`` into :attr:`store` keyed by ``object.metadata.uid``. A line may span chunks.
    """

    def __init__(self, *, decode: bool = False) -> None:
        self.decode = decode
        self.store: dict[str, JSON] = {}
        self.lines = 0
        self.chunks = 0
        self.body_bytes = 0
        self.done = False
        self._buffer = bytearray()
        self._chunk_size: int | None = None  # size of the chunk whose data is awaited
        self._partial = b""  # an incomplete line carried to the next chunk (decode mode)

    def feed(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        pos = 0
        end = len(buffer)
        while not self.done:
            size = self._chunk_size
            if size is None:
                eol = buffer.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(buffer[pos:eol].split(b";", 1)[0], 16)
                pos = eol + 2
                if size == 0:
                    self.done = True  # trailers, if any, are not read
                    break
                self._chunk_size = size
            if end - pos < size + 2:
                break  # wait for the rest of this chunk and its CRLF
            self._chunk(buffer, pos, pos + size)
            pos += size + 2
            self._chunk_size = None
        del buffer[:pos]

    def _chunk(self, buffer: bytearray, start: int, stop: int) -> None:
        self.body_bytes += stop - start
        self.chunks += 1
        if not self.decode:
            self.lines += buffer.count(b"\n", start, stop)
            return
        data = self._partial + bytes(buffer[start:stop])
        lines = data.split(b"\n")
        self._partial = lines.pop()
        loads = orjson.loads
        store = self.store
        for line in lines:
            if line:
                obj = loads(line)["object"]
                store[obj["metadata"]["uid"]] = obj
        self.lines += len(lines)


class WatchReader:
    """``GET <path>`` on a fresh loopback connection; then :meth:`read_lines` from the body."""

    def __init__(self, port: int, target: str, *, decode: bool = False) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.target = target
        self.parser = ChunkedLineParser(decode=decode)
        self.captured: list[bytes] = []  # every recv after the headers, for the limit replay

    def send_request(self) -> None:
        request = (
            f"GET {self.target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
            "User-Agent: kubesim-bench\r\n\r\n"
        )
        self.sock.sendall(request.encode("ascii"))

    def read_headers(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = self.sock.recv(RECV_BYTES)
            if not data:
                raise ConnectionError(f"connection closed before the response headers: {head!r}")
            head += data
        head, _, rest = head.partition(b"\r\n\r\n")
        status_line, *fields = head.decode("latin-1").split("\r\n")
        if not status_line.startswith("HTTP/1.1 200"):
            raise ConnectionError(f"watch answered {status_line!r}")
        headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
        if headers.get("transfer-encoding", "").lower() != "chunked":
            raise ConnectionError(f"watch response is not chunked: {headers}")
        if rest:
            self.captured.append(rest)
            self.parser.feed(rest)

    def read_lines(self, count: int) -> None:
        """Receive until ``count`` lines have been parsed (or the stream ends)."""
        recv = self.sock.recv
        parser = self.parser
        feed = parser.feed
        captured = self.captured.append
        while parser.lines < count and not parser.done:
            data = recv(RECV_BYTES)
            if not data:
                raise ConnectionError(f"connection closed after {parser.lines} lines")
            captured(data)
            feed(data)

    def read_to_end(self) -> None:
        """Read until the terminating chunk (after the server ended the watch)."""
        while not self.parser.done:
            data = self.sock.recv(RECV_BYTES)
            if not data:
                return
            self.parser.feed(data)

    def close(self) -> None:
        self.sock.close()


def replay(captured: list[bytes], count: int, *, decode: bool) -> ChunkedLineParser:
    """The limit: the same parser over the same received pieces, from memory."""
    parser = ChunkedLineParser(decode=decode)
    feed = parser.feed
    for data in captured:
        feed(data)
        if parser.lines >= count:
            break
    return parser
