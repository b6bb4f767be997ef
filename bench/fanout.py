"""Section 4: many watches at once over loopback HTTP (``kubesim serve``'s serving model).

One repetition opens ``watches`` watches on one server (connections opened a hundred at a
time, each request sent before any answer is read, as clients starting together do), then a
writer creates ``events`` ConfigMaps while one reader thread multiplexes every socket
(``selectors``) and notes when each watcher received each event. It checks every watcher got
every event, in order, then reports:

* events delivered per second to all watchers (``watches x events`` over the time from the
  first write to the last arrival);
* delivery latency, write to arrival, p50 and p99 over every (watcher, event);
* memory per watch: the growth of this process's resident set while the watches opened,
  divided by their number (server handler threads and buffers, plus the client's sockets).

Used by ``bench/run.py --only fanout`` and by tests/integration/test_load.py (which checks the
deliveries, never the times).
"""

from __future__ import annotations

import re
import resource
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

from kubesim import APIServer, HTTPTransport

NAME = re.compile(rb'"name":"cm-(\d+)"')
BATCH = 100  # connections opened together


@dataclass
class FanOut:
    watches: int
    events: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    rss_per_watch: float = 0.0

    @property
    def delivered_per_second(self) -> float:
        return self.watches * self.events / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _raise_file_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(needed, soft)), hard))


def run_fanout(watches: int = 1000, events: int = 100, *, deadline: float = 120.0) -> FanOut:
    """One repetition; raises AssertionError if any watcher misses or reorders an event."""
    _raise_file_limit(2 * watches + 256)  # both ends live in this process
    server = APIServer(seed=0)
    server.create("namespaces", {"metadata": {"name": "fanout"}})
    with HTTPTransport(server, host="127.0.0.1", port=0) as http:
        rv = server.resource_version
        request = (
            f"GET /api/v1/namespaces/fanout/configmaps?watch=1&resourceVersion={rv}"
            f"&timeoutSeconds=3600 HTTP/1.1\r\nHost: kubesim\r\n\r\n"
        ).encode()
        rss_before = _rss_bytes()
        sockets: list[socket.socket] = []
        for start in range(0, watches, BATCH):
            batch = [
                socket.create_connection(("127.0.0.1", http.port), timeout=deadline)
                for _ in range(min(BATCH, watches - start))
            ]
            for sock in batch:
                sock.sendall(request)
            sockets.extend(batch)
        try:
            for sock in sockets:  # every watch is answered before the writes start
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = sock.recv(4096)
                    assert chunk, "a watch connection closed before its headers"
                    head += chunk
                assert head.startswith(b"HTTP/1.1 200"), head[:100]
            rss_after = _rss_bytes()
            return _deliver(server, sockets, watches, events, deadline, rss_after - rss_before)
        finally:
            server.expire_watches()
            for sock in sockets:
                sock.close()


def _deliver(
    server: APIServer,
    sockets: list[socket.socket],
    watches: int,
    events: int,
    deadline: float,
    rss_growth: int,
) -> FanOut:
    written: list[float] = [0.0] * events

    def write() -> None:
        for i in range(events):
            written[i] = time.perf_counter()
            server.create("configmaps", {"metadata": {"name": f"cm-{i}"}}, namespace="fanout")

    selector = selectors.DefaultSelector()
    seen: dict[int, list[int]] = {}
    tails: dict[int, bytes] = {}
    latencies: list[float] = []
    for index, sock in enumerate(sockets):
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, index)
        seen[index], tails[index] = [], b""
    writer = threading.Thread(target=write, name="fanout-writer")
    started = time.perf_counter()
    writer.start()
    done = 0
    last = started
    while done < watches:
        if time.perf_counter() - started > deadline:
            raise AssertionError(f"only {done} of {watches} watchers got all {events} events")
        for key, _ in selector.select(timeout=1.0):
            index = key.data
            data = key.fileobj.recv(65536)  # type: ignore[union-attr]
            now = time.perf_counter()
            buffer = tails[index] + data
            for match in NAME.finditer(buffer):
                event = int(match.group(1))
                seen[index].append(event)
                latencies.append(now - written[event])
            tails[index] = buffer[-32:]  # a name split across two reads is found next time
            if len(seen[index]) >= events:
                selector.unregister(key.fileobj)
                done += 1
                last = now
    writer.join()
    for index, order in seen.items():
        assert order[:events] == list(range(events)), f"watcher {index} got {order[:10]}..."
    return FanOut(
        watches=watches,
        events=events,
        seconds=last - started,
        latencies=latencies,
        rss_per_watch=rss_growth / watches,
    )


def run(watches: int, events: int, repetitions: int) -> list[FanOut]:
    return [run_fanout(watches, events) for _ in range(repetitions)]
