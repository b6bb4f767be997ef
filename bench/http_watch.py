"""Section 2: watch throughput over loopback HTTP (kubesim.HTTPTransport), raw socket reader.

What one repetition measures (wall time; the server thread and the reader share the GIL of
this one process, as they do when a test runs kubesim and the store side by side):

* **pre-written, count**: ``N`` pods were created before the repetition (once per run, and an
  untimed warm-up read already serialized every event line). A raw socket sends
  ``GET /api/v1/pods?watch=1&resourceVersion=<RV before the writes>``; the server replays the
  history into the watcher and streams it as chunks; the reader parses the chunked framing and
  counts lines until it has ``N``. Events/s and body MB/s.
* **pre-written, decode**: the same, with every line through ``orjson.loads`` into a dict store.
* **limit**: the same parser over the bytes that repetition received, replayed from memory.
* **writes while reading**: a fresh server per repetition; the watch is open first, then a
  writer thread creates ``N/4`` pods while the reader counts lines (the writes bound the rate,
  so a quarter is enough). Includes the server's writes and the line serialization: compare
  it with section 1's end-to-end row.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from bench.inprocess import new_server, write_all
from bench.measure import Section, Stopwatch, tidy
from bench.rawhttp import WatchReader, replay
from kubesim import APIServer, HTTPTransport

JSON = dict[str, Any]


def _target(rv: int) -> str:
    return f"/api/v1/pods?watch=1&resourceVersion={rv}"


def _finish(server: APIServer, reader: WatchReader) -> None:
    """End the watch server-side and read the terminating chunk, so no handler lingers."""
    server.expire_watches()
    reader.read_to_end()
    reader.close()


def _read_prewritten(
    section: Section, server: APIServer, port: int, rv: int, events: int, *, decode: bool
) -> None:
    kind = "decode" if decode else "count"
    reader = WatchReader(port, _target(rv), decode=decode)
    with Stopwatch() as sw:
        reader.send_request()
        reader.read_headers()
        reader.read_lines(events)
    section.observe(sw)
    received = reader.parser.body_bytes
    section.facts["prewritten_chunks"] = reader.parser.chunks
    if reader.parser.lines < events or (decode and len(reader.parser.store) != events):
        raise AssertionError(f"HTTP watch delivered {reader.parser.lines} lines, expected {events}")
    _finish(server, reader)
    captured = reader.captured
    del reader
    with Stopwatch() as limit:
        parser = replay(captured, events, decode=decode)
    section.observe(limit)
    if parser.lines < events:
        raise AssertionError(f"replay parsed {parser.lines} lines, expected {events}")
    del parser
    section.add(f"limit_{kind}", events, limit.wall, nbytes=received)
    section.add(kind, events, sw.wall, nbytes=received)


def _read_concurrent(section: Section, pods: list[JSON], events: int) -> None:
    server = new_server(events)
    resource = server.resource("pods")
    with HTTPTransport(server, host="127.0.0.1", port=0) as transport:
        reader = WatchReader(transport.port, _target(server.resource_version))
        reader.send_request()
        reader.read_headers()  # the watch is registered before the first write
        writes = Stopwatch()
        writer = threading.Thread(
            target=write_all, args=(server, resource, pods, writes), name="bench-writer"
        )
        with Stopwatch() as sw:
            writer.start()
            reader.read_lines(events)
        writer.join()
        section.observe(sw)
        received = reader.parser.body_bytes
        chunks = reader.parser.chunks
        _finish(server, reader)
    with Stopwatch() as limit:
        parser = replay(reader.captured, events, decode=False)
    section.observe(limit)
    section.add("limit_concurrent", events, limit.wall, nbytes=received)
    section.add("concurrent", events, sw.wall, nbytes=received)
    section.add("concurrent_writes", events, writes.wall)
    section.facts.setdefault("concurrent_chunks", []).append(chunks)
    del parser


def run(*, pods: list[JSON], repetitions: int, gc_enabled: bool) -> Section:
    """Run section 2 and return its rows."""
    events = len(pods)
    section = Section(
        "http_watch", f"2. HTTP watch on 127.0.0.1: {events:,} pod events, raw socket reader"
    )
    add = section.row
    add(
        "limit_count",
        "limit: same parser over the received bytes, count lines",
        "events/s",
        is_limit=True,
    )
    add("count", "kubesim HTTP, pre-written events: count lines", "events/s", limit="limit_count")
    add(
        "limit_decode",
        "limit: same parser from memory + orjson.loads -> store",
        "events/s",
        is_limit=True,
    )
    add(
        "decode",
        "kubesim HTTP, pre-written events: + orjson.loads -> store",
        "events/s",
        limit="limit_decode",
    )
    concurrent = max(1, events // 4)  # bound by the writes (section 1); a quarter is enough
    add(
        "limit_concurrent",
        "limit: parser over the writes-while-reading bytes",
        "events/s",
        is_limit=True,
    )
    add(
        "concurrent",
        f"kubesim HTTP, {concurrent:,} writes while reading: count",
        "events/s",
        limit="limit_concurrent",
    )
    add("concurrent_writes", "  the writer thread's own rate (APIServer.create)", "writes/s")

    server = new_server(events)
    resource = server.resource("pods")
    rv = server.resource_version
    write_all(server, resource, pods, Stopwatch())
    with HTTPTransport(server, host="127.0.0.1", port=0) as transport:
        # Warm-up, untimed: serializes every event line once (section 1 measures that cost).
        reader = WatchReader(transport.port, _target(rv))
        reader.send_request()
        reader.read_headers()
        reader.read_lines(events)
        _finish(server, reader)
        for rep in range(repetitions):
            print(f"  http watch: repetition {rep + 1}/{repetitions}", file=sys.stderr, flush=True)
            _read_prewritten(section, server, transport.port, rv, events, decode=False)
            _read_prewritten(section, server, transport.port, rv, events, decode=True)
            tidy(gc_enabled)
    del server
    for rep in range(repetitions):
        print(
            f"  http watch, writes while reading: {rep + 1}/{repetitions}",
            file=sys.stderr,
            flush=True,
        )
        _read_concurrent(section, pods[:concurrent], concurrent)
        tidy(gc_enabled)
    section.pair_ratios()
    chunks = sorted(section.facts.get("concurrent_chunks", []))
    section.facts.update({"events": events, "repetitions": repetitions, "clock": "wall"})
    section.notes.append(
        f"{repetitions} repetitions; wall time; server thread and reader share one process; "
        "pre-written rows reuse serialized lines (an untimed warm-up read serialized them)"
    )
    if chunks:
        prewritten = section.facts.get("prewritten_chunks", 0)
        section.notes.append(
            f"events per HTTP chunk: {events / max(prewritten, 1):,.0f} pre-written, "
            f"{concurrent / chunks[len(chunks) // 2]:,.1f} while writing "
            "(each time the handler wakes it sends what is queued)"
        )
    return section
