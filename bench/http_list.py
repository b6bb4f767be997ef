"""Section 3: listing pods over loopback HTTP, whole and paginated, against in-memory decoding.

Setup (once): ``populate_pods`` creates ``M`` pods, then ``kubesim.HTTPTransport`` serves them on
127.0.0.1. An ``http.client`` connection (keep-alive, ``Content-Length`` bodies) reads the bytes.

* **cold single GET**: the first ``GET /api/v1/pods`` after the writes. kubesim caches each
  stored object's list-item bytes, so only this request pays their serialization (one sample).
* **single GET, fetch**: ``GET /api/v1/pods`` until the body is read; pods/s and MB/s.
* **single GET + decode**: the same plus ``orjson.loads`` of the body.
* **paginated**: ``limit=500`` and ``continue`` until the last page; decode each page (the token
  comes from the decoded page), fetch time and decode time summed over the pages.
* **limits**: ``orjson.loads`` of the very same bodies, from memory. Odd repetitions decode the
  previous repetition's (identical) bodies *before* fetching, so neither side always goes first.
"""

from __future__ import annotations

import http.client
import sys
from typing import Any

import orjson

from bench.measure import Section, Stopwatch, tidy
from kubesim import APIServer, HTTPTransport, SeededChoices
from kubesim.wire.routes import Request, handle
from kubesim.workload.pods import populate_pods

JSON = dict[str, Any]
PAGE = 500
LIST_PATH = "/api/v1/pods"
_HEADERS = {"Accept": "application/json", "User-Agent": "kubesim-bench"}


def _get(conn: http.client.HTTPConnection, target: str) -> bytes:
    conn.request("GET", target, headers=_HEADERS)
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise ConnectionError(f"GET {target} answered {response.status}: {body[:200]!r}")
    return body


def _single(conn: http.client.HTTPConnection) -> tuple[bytes, float, float, int]:
    """One whole list: (body, fetch seconds, decode seconds, items)."""
    with Stopwatch() as fetch:
        body = _get(conn, LIST_PATH)
    with Stopwatch() as decode:
        items = len(orjson.loads(body)["items"])
    return body, fetch.wall, decode.wall, items


def _paginated(conn: http.client.HTTPConnection) -> tuple[list[bytes], float, float, int]:
    """Every page of ``limit=500``: (bodies, fetch seconds, decode seconds, items)."""
    bodies: list[bytes] = []
    fetch_seconds = decode_seconds = 0.0
    items = 0
    token = ""
    while True:
        target = f"{LIST_PATH}?limit={PAGE}" + (f"&continue={token}" if token else "")
        with Stopwatch() as fetch:
            body = _get(conn, target)
        with Stopwatch() as decode:
            page = orjson.loads(body)
        fetch_seconds += fetch.wall
        decode_seconds += decode.wall
        bodies.append(body)
        items += len(page["items"])
        token = page["metadata"].get("continue") or ""
        del page
        if not token:
            return bodies, fetch_seconds, decode_seconds, items


def _serve_only(server: APIServer) -> tuple[float, float]:
    """Server side alone, no socket: ``routes.handle`` for one whole list and for every page."""
    with Stopwatch() as single:
        response = handle(server, Request.from_target("GET", LIST_PATH))
    if response.status != 200:
        raise AssertionError(f"handle() answered {response.status}")
    token = ""
    with Stopwatch() as pages:
        while True:
            target = f"{LIST_PATH}?limit={PAGE}" + (f"&continue={token}" if token else "")
            body = handle(server, Request.from_target("GET", target)).body
            assert isinstance(body, bytes)
            # Only the token is needed; finding it without a full decode keeps this row server-only.
            token = _continue_token(body)
            if not token:
                break
    return single.wall, pages.wall


def _continue_token(body: bytes) -> str:
    """``metadata.continue`` of a list body, read from its head (metadata precedes items)."""
    head = body[: body.find(b',"items":')]
    metadata: JSON = orjson.loads(head + b"}").get("metadata", {})
    return str(metadata.get("continue") or "")


def _decode_all(bodies: list[bytes]) -> float:
    """The limit: ``orjson.loads`` of each body from memory; returns the seconds."""
    loads = orjson.loads
    with Stopwatch() as sw:
        for body in bodies:
            loads(body)
    return sw.wall


def run(*, pods: int, repetitions: int, gc_enabled: bool) -> Section:
    """Run section 3 and return its rows."""
    section = Section("http_list", f"3. HTTP list on 127.0.0.1: {pods:,} pods, http.client reader")
    add = section.row
    # One sample; its ratio is against a decode of its own body, taken right after it.
    add("cold", "single GET + orjson.loads, cold (first list encodes items)", "pods/s")
    add("limit_single", "limit: orjson.loads of the same body in memory", "pods/s", is_limit=True)
    add("single_fetch", "single GET: fetch bytes only", "pods/s", limit="limit_single")
    add("single", "single GET: fetch + orjson.loads", "pods/s", limit="limit_single")
    add(
        "limit_pages",
        f"limit: orjson.loads of the same {PAGE}-pod pages in memory",
        "pods/s",
        is_limit=True,
    )
    add("pages_fetch", f"limit={PAGE} + continue: fetch bytes only", "pods/s", limit="limit_pages")
    add("pages", f"limit={PAGE} + continue: fetch + orjson.loads", "pods/s", limit="limit_pages")
    add(
        "server_single",
        "server only, no socket: routes.handle, whole list",
        "pods/s",
        limit="limit_single",
    )
    add(
        "server_pages",
        f"server only, no socket: routes.handle, {PAGE}-pod pages",
        "pods/s",
        limit="limit_pages",
    )

    server = APIServer(seed=1)
    populate_pods(server, SeededChoices(1, name="bench-list"), pods=pods, namespaces=1)
    with HTTPTransport(server, host="127.0.0.1", port=0) as transport:
        conn = http.client.HTTPConnection("127.0.0.1", transport.port)
        body, fetch, decode, items = _single(conn)
        if items != pods:
            raise AssertionError(f"the list returned {items} pods, expected {pods}")
        limit = _decode_all([body])
        section.add("cold", pods, fetch + decode, nbytes=len(body))
        section.rows["cold"].ratio_samples.append(limit / (fetch + decode))
        section.facts["list_bytes"] = len(body)
        bodies = [body]
        pages, *_ = _paginated(conn)  # warm-up
        for rep in range(repetitions):
            print(f"  http list: repetition {rep + 1}/{repetitions}", file=sys.stderr, flush=True)
            limits_first = rep % 2 == 1
            if limits_first:  # the previous repetition's bodies: the same bytes
                limit = _decode_all(bodies)
                limit_pages = _decode_all(pages)
            body, fetch, decode, items = _single(conn)
            pages, pages_fetch, pages_decode, page_items = _paginated(conn)
            if items != pods or page_items != pods:
                raise AssertionError(f"lists returned {items} and {page_items} pods, not {pods}")
            bodies = [body]
            if not limits_first:
                limit = _decode_all(bodies)
                limit_pages = _decode_all(pages)
            nbytes = len(body)
            page_bytes = sum(len(p) for p in pages)
            section.add("limit_single", pods, limit, nbytes=nbytes)
            section.add("single_fetch", pods, fetch, nbytes=nbytes)
            section.add("single", pods, fetch + decode, nbytes=nbytes)
            section.add("limit_pages", pods, limit_pages, nbytes=page_bytes)
            section.add("pages_fetch", pods, pages_fetch, nbytes=page_bytes)
            section.add("pages", pods, pages_fetch + pages_decode, nbytes=page_bytes)
            server_single, server_pages = _serve_only(server)
            section.add("server_single", pods, server_single, nbytes=nbytes)
            section.add("server_pages", pods, server_pages, nbytes=page_bytes)
            section.facts["pages"] = len(pages)
            tidy(gc_enabled)
        conn.close()
    section.pair_ratios()
    section.facts.update({"pods": pods, "repetitions": repetitions, "clock": "wall"})
    section.notes.append(
        f"{section.facts['list_bytes'] / pods:,.0f} B per list item; {repetitions} repetitions; "
        f"wall time; {section.facts.get('pages', '?')} pages of {PAGE}"
    )
    return section
