"""Section 1: watch throughput on kubesim's in-process path, against a decode-only limit.

What one repetition measures, on a fresh server, with ``N`` pods prepared beforehand:

* **server writes**: ``N`` ``APIServer.create`` calls while exactly one watch is open (the
  watcher's ``offer`` runs inside every write).
* **path A, WatchStream chunks -> iter_resp_lines**: after the writes, drain the queued events
  with ``WatchStream.poll()`` (the server serializes each event line and joins up to 256 lines
  per chunk) and split them with the official client's ``iter_resp_lines`` into a dict store
  (``store[uid] = obj`` after ``orjson.loads``). The ``poll()`` calls are also timed on their
  own ("of which server").
* **path B, kubernetes client**: then, on the same server, a second watch from the same RV
  through ``CoreV1Api.list_pod_for_all_namespaces(watch=True, _preload_content=False)`` on
  ``kubesim.kubernetes_client`` (client request building, routes, the history replay into the
  new watcher, ``FakeHTTPResponse.stream``), then ``iter_resp_lines`` into a new store. Event
  lines are cached per event, so B does not pay their serialization again: the "of which
  server" row of A says how much that is. (A second write phase for B would double the run
  time and measure the same writes again.)
* **limit**: the lines path A received, already split, decoded into a fresh dict store with
  the same decoder. No server, no splitting: what any in-process delivery could approach.
* **splitter alone**: ``iter_resp_lines`` over path A's captured chunks from memory, and over
  the same lines cut into 16-line chunks, to show how much of the gap is the client's own line
  splitting, and how much of that is the size of kubesim's chunks.

"End-to-end" is ``N / (write seconds + path A read seconds)``.

Writes are compared with their own limit, encoding each pod once (``orjson.dumps``), the least
any write must do: a ratio of 0.20x there means a write costs five encodes. The "write path"
row repeats the writes on a second server the way a client's POST reaches it (the route answers
with the stored bytes), without the private copy ``APIServer.create`` returns to Python code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from bench.measure import Section, Stopwatch, tidy
from kubesim import APIServer
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.watch import WatchStream
from kubesim.workload.pods import make_pod

JSON = dict[str, Any]
NAMESPACE = "default"
# WatchStream hands out up to 256 lines per chunk; iter_resp_lines re-slices its buffer after
# every line, so its cost grows with chunk size. This size is the comparison.
SMALL_CHUNK = 16


def make_pods(count: int) -> list[JSON]:
    """``count`` distinct Deployment-style pods (``make_pod``), built once per run."""
    return [
        make_pod(
            f"web-{index:06d}",
            NAMESPACE,
            labels={"app": f"web-{index % 10}"},
            node=f"node-{index % 3}",
            pod_ip=f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}",
        )
        for index in range(count)
    ]


def new_server(events: int) -> APIServer:
    """A server that can hold ``events`` queued events for one reader and replay them.

    The default ``watch_buffer`` (10,000 lines) would close the watch as unresponsive, as the
    apiserver does, when more events queue before the first read; the default history window
    would expire a watch started from the RV before the writes.
    """
    return APIServer(seed=1, history_window=max(events + 64, 10_000), watch_buffer=None)


def write_all(
    server: APIServer, resource: ResourceType, pods: list[JSON], sw: Stopwatch
) -> Stopwatch:
    """Create every pod, timed by ``sw``."""
    create = server.create
    with sw:
        for pod in pods:
            create(resource, pod, namespace=NAMESPACE)
    return sw


def write_path(
    server: APIServer, resource: ResourceType, pods: list[JSON], sw: Stopwatch
) -> Stopwatch:
    """Create every pod as a client's POST does (the route calls ``registry.create`` and
    answers with the stored bytes): validation, stamping, encoding, storage, watchers; no
    Python copy."""
    create = server.registry.create
    with server.lock, sw:
        for pod in pods:
            create(resource, pod, NAMESPACE)
    return sw


def encode_all(pods: list[JSON], sw: Stopwatch) -> Stopwatch:
    """The writes' limit: encode every pod once, as a write must at least do."""
    dumps = orjson.dumps
    with sw:
        for pod in pods:
            dumps(pod)
    return sw


def decode_lines(lines: list[bytes]) -> dict[str, JSON]:
    """The limit: pre-split watch lines into a dict store keyed by uid."""
    loads = orjson.loads
    store: dict[str, JSON] = {}
    for line in lines:
        obj = loads(line)["object"]
        store[obj["metadata"]["uid"]] = obj
    return store


class _Chunks:
    """Duck-types the ``stream()`` of a urllib3 response over a list of byte chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        return iter(self.chunks)


class _PollingChunks:
    """``stream()`` over ``WatchStream.poll()``; keeps the chunks and the time spent polling."""

    def __init__(self, stream: WatchStream, stopwatch: Callable[[], Stopwatch]) -> None:
        self._stream = stream
        self._stopwatch = stopwatch
        self.chunks: list[bytes] = []
        self.poll_seconds = 0.0

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        poll = self._stream.poll
        while True:
            with self._stopwatch() as sw:
                chunk = poll()
            self.poll_seconds += sw.seconds
            if not chunk:  # None (nothing ready) cannot happen before the reader stops
                raise RuntimeError(f"watch stream ran dry: poll() returned {chunk!r}")
            self.chunks.append(chunk)
            yield chunk


def consume(source: Any, events: int, iter_resp_lines: Any) -> dict[str, JSON]:
    """``iter_resp_lines(source)`` into a dict store until ``events`` lines have arrived."""
    loads = orjson.loads
    store: dict[str, JSON] = {}
    count = 0
    lines = iter_resp_lines(source)
    try:
        for line in lines:
            obj = loads(line)["object"]
            store[obj["metadata"]["uid"]] = obj
            count += 1
            if count == events:
                break
    finally:
        lines.close()
    return store


def _import_client() -> tuple[Any, Any]:
    """(``iter_resp_lines``, ``CoreV1Api``) from the official client, or (None, None)."""
    try:
        from kubernetes.client import CoreV1Api
        from kubernetes.watch.watch import iter_resp_lines
    except ImportError:
        return None, None
    return iter_resp_lines, CoreV1Api


def _fallback_iter_resp_lines(resp: Any) -> Iterator[str]:
    """The client's splitter, for a machine without ``kubernetes`` (same algorithm, kept short)."""
    buffer = bytearray()
    for segment in resp.stream(amt=None, decode_content=False):
        buffer.extend(segment)
        newline = buffer.find(b"\n")
        while newline != -1:
            line = buffer[:newline].decode("utf-8", errors="replace")
            buffer = buffer[newline + 1 :]
            yield line
            newline = buffer.find(b"\n")


def run(*, pods: list[JSON], repetitions: int, gc_enabled: bool, cpu_clock: bool) -> Section:
    """Run section 1 over ``pods`` and return its rows (rates per repetition, ratios)."""
    events = len(pods)
    iter_resp_lines, core_v1_api = _import_client()
    have_client = iter_resp_lines is not None
    if iter_resp_lines is None:
        iter_resp_lines = _fallback_iter_resp_lines
    section = Section(
        "inprocess",
        f"1. In-process watch: {events:,} pod events -> orjson.loads -> store[uid] = obj",
    )
    add = section.row
    add("limit", "limit: pre-split lines -> orjson.loads -> store", "events/s", is_limit=True)
    add("splitter", "  iter_resp_lines, captured chunks, no server", "events/s", limit="limit")
    add(
        "splitter_small",
        f"  iter_resp_lines, same lines in {SMALL_CHUNK}-line chunks, no server",
        "events/s",
        limit="limit",
    )
    add("read_a", "kubesim A: WatchStream -> iter_resp_lines -> store", "events/s", limit="limit")
    add(
        "poll_a", "  of which server: queue -> chunks (WatchStream.poll)", "events/s", limit="limit"
    )
    if have_client:
        add(
            "read_b",
            "kubesim B: kubernetes client (_preload_content=False)",
            "events/s",
            limit="limit",
        )
    else:
        section.notes.append("kubernetes is not installed: path B skipped; splitter is a copy")
    add("encode", "limit for writes: orjson.dumps of each pod once", "objects/s", is_limit=True)
    add("writes", "server: APIServer.create with one watch open", "writes/s", limit="encode")
    add(
        "write_path",
        "  of which server write path (no copy returned to Python)",
        "writes/s",
        limit="encode",
    )
    add("e2e", "end-to-end: writes + path A read", "events/s", limit="limit")

    def stopwatch() -> Stopwatch:
        return Stopwatch(use_cpu=cpu_clock)

    nbytes = 0
    for rep in range(repetitions):
        print(f"  in-process: repetition {rep + 1}/{repetitions}", file=sys.stderr, flush=True)
        server = new_server(events)
        resource = server.resource("pods")
        start_rv = str(server.resource_version)
        stream = server.watch(resource, resource_version=start_rv)
        source = _PollingChunks(stream, stopwatch)
        writes = section.observe(write_all(server, resource, pods, stopwatch())).seconds
        # Path A: WatchStream chunks straight into the client's splitter.
        with stopwatch() as read_a:
            store = consume(source, events, iter_resp_lines)
        section.observe(read_a)
        stream.close()
        if len(store) != events:
            raise AssertionError(f"path A stored {len(store)} objects, expected {events}")
        uids = set(store)
        del store
        chunks = source.chunks
        wire = b"".join(chunks)
        nbytes = len(wire)
        lines = wire.split(b"\n")[:-1]
        del wire
        section.add("read_a", events, read_a.seconds, nbytes=nbytes)
        section.add("poll_a", events, source.poll_seconds, nbytes=nbytes)
        section.add("writes", events, writes)
        section.add("e2e", events, writes + read_a.seconds)
        # The same writes on a second server with one watch open, without the copy create()
        # returns; then the encode-once limit over the same pods.
        other = new_server(events)
        other_pods = other.resource("pods")
        other_watch = other.watch(other_pods, resource_version=str(other.resource_version))
        path = section.observe(write_path(other, other_pods, pods, stopwatch()))
        section.add("write_path", events, path.seconds)
        other_watch.close()
        del other, other_watch
        section.add("encode", events, section.observe(encode_all(pods, stopwatch())).seconds)
        # Path B: the official client on kubesim's in-process transport, same server.
        if have_client:
            from kubesim import kubernetes_client

            api = core_v1_api(kubernetes_client(server))
            with stopwatch() as read_b:
                resp = api.list_pod_for_all_namespaces(
                    watch=True, resource_version=start_rv, _preload_content=False
                )
                store = consume(resp, events, iter_resp_lines)
            section.observe(read_b)
            resp.close()
            if set(store) != uids:
                raise AssertionError("path B stored other objects than path A")
            del store, api, resp
            section.add("read_b", events, read_b.seconds, nbytes=nbytes)
        del server, stream, source
        tidy(gc_enabled)
        # The limit and the splitter alone, over this repetition's bytes.
        with stopwatch() as limit:
            store = decode_lines(lines)
        del store
        with stopwatch() as split:
            store = consume(_Chunks(chunks), events, iter_resp_lines)
        del store
        small = [
            b"\n".join(lines[i : i + SMALL_CHUNK]) + b"\n" for i in range(0, events, SMALL_CHUNK)
        ]
        with stopwatch() as split_small:
            store = consume(_Chunks(small), events, iter_resp_lines)
        del store, small, chunks, lines
        section.add("limit", events, section.observe(limit).seconds, nbytes=nbytes)
        section.add("splitter", events, section.observe(split).seconds, nbytes=nbytes)
        section.add("splitter_small", events, section.observe(split_small).seconds, nbytes=nbytes)
    section.pair_ratios()
    section.facts.update(
        {
            "events": events,
            "repetitions": repetitions,
            "line_bytes": nbytes / events,
            "clock": "cpu" if cpu_clock else "wall",
            "gc": gc_enabled,
        }
    )
    section.notes.append(
        f"{nbytes / events:,.0f} B per event line; {repetitions} repetitions; "
        f"{'process CPU time' if cpu_clock else 'wall time'}; "
        f"gc {'on' if gc_enabled else 'off'} while timing"
    )
    return section
