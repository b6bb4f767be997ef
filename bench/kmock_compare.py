"""kubesim vs kmock over loopback HTTP: ``python bench/kmock_compare.py [--quick]``.

kmock (PyPI ``kmock``, by nolar; recommended in kopf's testing docs) is the nearest Python peer:
an aiohttp Kubernetes mock server whose ``KubernetesEmulator`` keeps objects in memory and
serves list, watch, get, create, patch and delete. This script runs both servers side by side
in one run, each **in its own child process** (``--serve kubesim|kmock``; kmock is asyncio, so
neither server shares a GIL with the reader or with the other), bound to 127.0.0.1 only.

Both children hold the very same pods: ``bench.inprocess.make_pods`` created in a kubesim
``APIServer`` (so each has a uid, a resourceVersion and a creationTimestamp), then, in the kmock
child, copied into ``kmock.objects`` with their ``kind``/``apiVersion``. Namespace ``w`` holds
the ``--events`` watch pods, namespace ``l`` the ``--pods`` list pods.

Measured in the parent, per repetition, alternating which server goes first:

1. **watch**: ``GET /api/v1/namespaces/w/pods?watch=true`` (RV unset: every existing object as
   an ``ADDED`` event, which is the only watch kmock has) read by ``bench/rawhttp.py``'s raw
   socket reader until it has ``N`` lines, counting lines, and again decoding each with
   ``orjson.loads`` into a store. kubesim also gets the replay from the RV before the writes
   (``resourceVersion=<rv0>``), which kmock cannot do (it ignores ``resourceVersion``).
2. **list**: ``GET /api/v1/namespaces/l/pods`` of ``--pods`` pods over ``http.client``
   (keep-alive), fetch and fetch + ``orjson.loads``.

Each row is the median over repetitions; ``kubesim/kmock`` is the median of per-repetition
ratios of rates. One untimed warm-up read per server comes first (kubesim caches serialized
lines; kmock re-serializes on every request, which is part of what it costs).

Then (unless ``--no-probes``) it runs small raw-HTTP checks of kmock's wire behaviours against
a fresh kmock child, the same checks against a fresh kubesim child, and records what each
answered. ``docs/reference/kmock-comparison.md`` is written from such a run.

Writes ``bench/results/kmock.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from bench.measure import setup_gc, tidy  # noqa: E402
from bench.rawhttp import WatchReader  # noqa: E402

DEFAULT_OUTPUT = ROOT / "bench" / "results" / "kmock.json"
WATCH_NS = "w"
LIST_NS = "l"
JSON = dict[str, Any]


# --------------------------------------------------------------------------------------------
# Child processes: one server each, controlled over stdin/stdout.
# --------------------------------------------------------------------------------------------


def _kubesim_server(events: int, pods: int) -> tuple[Any, int, list[JSON], list[JSON]]:
    """A kubesim APIServer with ``events`` pods in ``w`` and ``pods`` pods in ``l``."""
    from bench.inprocess import make_pods
    from kubesim import APIServer

    server = APIServer(seed=1, history_window=max(events + pods + 64, 10_000), watch_buffer=None)
    resource = server.resource("pods")
    rv0 = server.resource_version + 1  # after the first namespace: the pods' writes follow
    for ns, count in ((WATCH_NS, events), (LIST_NS, pods)):
        server.create("namespaces", {"metadata": {"name": ns}})
        for pod in make_pods(count):
            pod["metadata"]["namespace"] = ns
            server.create(resource, pod, namespace=ns)
    return (
        server,
        rv0,
        server.list("pods", namespace=WATCH_NS),
        server.list("pods", namespace=LIST_NS),
    )


def _child_gc() -> None:
    """The same GC policy as the parent (bench/measure.py): off unless KUBESIM_BENCH_GC=1.

    Everything built so far (the pods, the server) is frozen out of later collections.
    """
    if os.environ.get("KUBESIM_BENCH_GC") == "1":
        return
    setup_gc(False)


def _serve_kubesim(events: int, pods: int) -> None:
    from kubesim import HTTPTransport

    server, rv0, _, _ = _kubesim_server(events, pods)
    _child_gc()
    with HTTPTransport(server, host="127.0.0.1", port=0) as transport:
        print(json.dumps({"port": transport.port, "rv0": rv0, "pid": os.getpid()}), flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "expire":
                server.expire_watches()
            print(json.dumps({"ok": command}), flush=True)


def _serve_kmock(events: int, pods: int, *, declare: bool = False) -> None:
    import asyncio

    import kmock

    _, rv0, watch_pods, list_pods = _kubesim_server(events, pods)

    async def main() -> None:
        async with kmock.KubernetesEmulator() as emulator:
            if declare:  # what a kmock user writes to make discovery complete enough for kubectl
                emulator.resources["v1/pods"] = kmock.ResourceInfo(
                    namespaced=True,
                    kind="Pod",
                    singular="pod",
                    shortnames={"po"},
                    categories={"all"},
                    verbs={"create", "delete", "get", "list", "patch", "update", "watch"},
                )
            for ns, items in ((WATCH_NS, watch_pods), (LIST_NS, list_pods)):
                for obj in items:
                    obj = {"apiVersion": "v1", "kind": "Pod", **obj}
                    emulator.objects["v1/pods", ns, obj["metadata"]["name"]] = obj
            async with kmock.Server(emulator, host="127.0.0.1") as srv:
                _child_gc()
                print(json.dumps({"port": srv.port, "rv0": rv0, "pid": os.getpid()}), flush=True)
                loop = asyncio.get_running_loop()
                while True:
                    line = await loop.run_in_executor(None, sys.stdin.readline)
                    if not line:
                        break
                    print(json.dumps({"ok": line.strip()}), flush=True)

    asyncio.run(main())


class Child:
    """``python bench/kmock_compare.py --serve NAME``; ``port`` once it is listening."""

    def __init__(
        self, name: str, events: int, pods: int, *, gc_enabled: bool = False, declare: bool = False
    ) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                name,
                "--events",
                str(events),
                "--pods",
                str(pods),
            ]
            + (["--gc"] if gc_enabled else [])
            + (["--declare"] if declare else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        hello = self.proc.stdout.readline()
        if not hello:
            raise RuntimeError(f"{name} child exited before listening (rc {self.proc.wait()})")
        info = json.loads(hello)
        self.port: int = info["port"]
        self.rv0: int = info["rv0"]

    def command(self, text: str) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Measurements (parent).
# --------------------------------------------------------------------------------------------


def _watch_once(child: Child, target: str, events: int, *, decode: bool) -> tuple[float, int]:
    """Seconds from the request to the ``events``-th line; body bytes received."""
    reader = WatchReader(child.port, target, decode=decode)
    t0 = time.perf_counter()
    reader.send_request()
    reader.read_headers()
    reader.read_lines(events)
    seconds = time.perf_counter() - t0
    parser = reader.parser
    if parser.lines < events or (decode and len(parser.store) != events):
        raise AssertionError(f"{child.name} watch gave {parser.lines} lines, expected {events}")
    nbytes = parser.body_bytes
    if child.name == "kubesim":
        child.command("expire")  # end the watch server-side, as bench/http_watch.py does
        reader.read_to_end()
    reader.close()  # kmock: the watch handler stays parked on its bus (no timeoutSeconds)
    return seconds, nbytes


def _list_once(
    child: Child, conn: http.client.HTTPConnection, pods: int
) -> tuple[float, float, int]:
    """(fetch seconds, fetch + decode seconds, body bytes) for one whole list."""
    t0 = time.perf_counter()
    conn.request(
        "GET", f"/api/v1/namespaces/{LIST_NS}/pods", headers={"Accept": "application/json"}
    )
    response = conn.getresponse()
    body = response.read()
    t1 = time.perf_counter()
    items = orjson.loads(body)["items"]
    t2 = time.perf_counter()
    if response.status != 200 or len(items) != pods:
        raise AssertionError(f"{child.name} list: HTTP {response.status}, {len(items)} items")
    return t1 - t0, t2 - t0, len(body)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure(args: argparse.Namespace) -> JSON:
    events, pods, reps = args.events, args.pods, args.repetitions
    samples: dict[str, list[float]] = {}
    nbytes: dict[str, int] = {}

    def add(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    print(f"starting children: {events:,} watch pods + {pods:,} list pods each", flush=True)
    t0 = time.perf_counter()
    gc_on = args.gc
    with (
        Child("kubesim", events, pods, gc_enabled=gc_on) as kubesim,
        Child("kmock", events, pods, gc_enabled=gc_on) as kmock_child,
    ):
        print(f"  children up in {time.perf_counter() - t0:.1f} s", flush=True)
        children = {"kubesim": kubesim, "kmock": kmock_child}
        unset = f"/api/v1/namespaces/{WATCH_NS}/pods?watch=true"
        replay = f"{unset}&resourceVersion={kubesim.rv0}"
        conns = {n: http.client.HTTPConnection("127.0.0.1", c.port) for n, c in children.items()}
        for name, child in children.items():  # untimed warm-up
            _watch_once(child, unset, events, decode=False)
            _list_once(child, conns[name], pods)
        _watch_once(kubesim, replay, events, decode=False)
        setup_gc(gc_on)
        for rep in range(reps):
            tidy(gc_on)
            print(f"  repetition {rep + 1}/{reps}", file=sys.stderr, flush=True)
            order = ["kubesim", "kmock"] if rep % 2 == 0 else ["kmock", "kubesim"]
            for name in order:
                child = children[name]
                for decode in (False, True):
                    kind = "decode" if decode else "count"
                    seconds, size = _watch_once(child, unset, events, decode=decode)
                    add(f"watch_{kind}_{name}", events / seconds)
                    nbytes[f"watch_{name}"] = size
                    if name == "kubesim":
                        seconds, size = _watch_once(child, replay, events, decode=decode)
                        add(f"watch_replay_{kind}_kubesim", events / seconds)
                fetch, total, size = _list_once(child, conns[name], pods)
                add(f"list_fetch_{name}", pods / fetch)
                add(f"list_decode_{name}", pods / total)
                add(f"list_seconds_{name}", total)
                nbytes[f"list_{name}"] = size
        for conn in conns.values():
            conn.close()

    def ratio(a: str, b: str) -> float:
        return _median([x / y for x, y in zip(samples[a], samples[b], strict=True)])

    rows = []
    for label, key, unit in (
        ("watch, RV unset (N ADDED), count lines", "watch_count", "events/s"),
        ("watch, RV unset (N ADDED), + orjson -> store", "watch_decode", "events/s"),
        ("list, fetch bytes", "list_fetch", "pods/s"),
        ("list, fetch + orjson.loads", "list_decode", "pods/s"),
    ):
        rows.append(
            {
                "measurement": label,
                "unit": unit,
                "kubesim": _median(samples[f"{key}_kubesim"]),
                "kmock": _median(samples[f"{key}_kmock"]),
                "kubesim_over_kmock": ratio(f"{key}_kubesim", f"{key}_kmock"),
            }
        )
    for kind in ("count", "decode"):
        rows.append(
            {
                "measurement": f"watch from RV before the writes (replay), {kind}; kmock: cannot",
                "unit": "events/s",
                "kubesim": _median(samples[f"watch_replay_{kind}_kubesim"]),
                "kmock": None,
                "kubesim_over_kmock": ratio(f"watch_replay_{kind}_kubesim", f"watch_{kind}_kmock"),
            }
        )
    list_seconds = {name: _median(samples[f"list_seconds_{name}"]) for name in ("kubesim", "kmock")}
    return {
        "rows": rows,
        "list_seconds_median": list_seconds,
        "bytes": nbytes,
        "samples": samples,
    }


def format_rows(result: JSON, events: int, pods: int) -> str:
    lines = [
        f"{'measurement':<62} {'kubesim':>12} {'kmock':>12} {'kubesim/kmock':>14}",
        "-" * 103,
    ]
    for row in result["rows"]:
        kmock_cell = f"{row['kmock']:>12,.0f}" if row["kmock"] is not None else f"{'-':>12}"
        lines.append(
            f"{row['measurement']:<62} {row['kubesim']:>12,.0f} {kmock_cell} "
            f"{row['kubesim_over_kmock']:>13.2f}x"
        )
    b = result["bytes"]
    s = result["list_seconds_median"]
    lines.append(
        f"({events:,} watch events: {b['watch_kubesim'] / events:,.0f} B/event kubesim, "
        f"{b['watch_kmock'] / events:,.0f} B/event kmock; list of {pods:,} pods: "
        f"{s['kubesim'] * 1000:,.0f} ms kubesim, {s['kmock'] * 1000:,.0f} ms kmock, bodies "
        f"{b['list_kubesim'] / 1e6:.1f} MB / {b['list_kmock'] / 1e6:.1f} MB)"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Wire-behaviour probes: small raw-HTTP checks against a fresh child of each server.
# --------------------------------------------------------------------------------------------


def _request(
    port: int, method: str, target: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, JSON | str, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = content_type
    conn.request(method, target, body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    try:
        parsed: JSON | str = json.loads(raw)
    except ValueError:
        parsed = raw[:300].decode("utf-8", "replace")
    return response.status, parsed, {k.lower(): v for k, v in response.getheaders()}


def _stream(port: int, target: str, seconds: float, action: Any = None) -> JSON:
    """Open a watch on a raw socket, read for ``seconds`` (running ``action`` after 0.3 s).

    Returns the status line, headers, the framing seen, every parsed line and whether the
    server ended the body (terminating chunk or close) within the time.
    """
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n".encode()
    )
    sock.settimeout(0.1)
    data = b""
    deadline = time.monotonic() + seconds
    acted = action is None
    closed = False
    start = time.monotonic()
    while time.monotonic() < deadline:
        if not acted and time.monotonic() - start > 0.3:
            action()
            acted = True
        try:
            got = sock.recv(1 << 16)
        except TimeoutError:
            continue
        if not got:
            closed = True
            break
        data += got
        if data.endswith(b"\r\n0\r\n\r\n"):
            closed = True
            break
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    payload = b""
    chunks = 0
    if headers.get("transfer-encoding", "").lower() == "chunked":
        rest = body
        while rest:
            size_line, sep, rest = rest.partition(b"\r\n")
            if not sep:
                break
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            payload += rest[:size]
            rest = rest[size + 2 :]
            chunks += 1
    else:
        payload = body
    lines = [line for line in payload.split(b"\n") if line.strip()]
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"unparsed": line[:200].decode("utf-8", "replace")})
    return {
        "status": status_line,
        "headers": headers,
        "chunks": chunks,
        "compact": all(b", " not in line[:40] and b": " not in line[:40] for line in lines),
        "events": events,
        "ended": closed,
        "elapsed": round(time.monotonic() - start, 2),
    }


def _summ(events: list[JSON]) -> list[str]:
    out = []
    for ev in events:
        obj = ev.get("object", {})
        meta = obj.get("metadata", {})
        tag = meta.get("name") or (meta.get("annotations") or {}).get("k8s.io/initial-events-end")
        out.append(f"{ev.get('type')}:{tag}:rv={meta.get('resourceVersion')}")
        if ev.get("type") == "ERROR":
            out[-1] += f":{obj.get('code')}:{obj.get('reason')}"
    return out


def _pod(name: str, labels: dict[str, str] | None = None) -> JSON:
    from kubesim.workload import make_pod

    pod = make_pod(name, "p", labels=labels or {"app": "a"})
    return {"apiVersion": "v1", "kind": "Pod", **pod}


def run_probes(name: str) -> JSON:
    """Every probe against a fresh ``name`` child serving an empty store."""
    out: JSON = {}
    with Child(name, 0, 0) as child:
        port = child.port
        base = "/api/v1/namespaces/p/pods"

        def create(pod: JSON) -> tuple[int, Any, dict[str, str]]:
            return _request(port, "POST", base, pod)

        def patch(pod_name: str, body: Any, ctype: str) -> tuple[int, Any, dict[str, str]]:
            return _request(port, "PATCH", f"{base}/{pod_name}", body, ctype)

        # kubesim refuses objects in a namespace that does not exist; kmock stores it as any object.
        status, body, _ = _request(
            port,
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "p"}},
        )
        out["create_namespace"] = (status, body.get("message") if isinstance(body, dict) else body)
        # Creation order c, a, b: key order is a, b, c.
        created = {}
        for pod_name, app in (("c", "a"), ("a", "a"), ("b", "other")):
            status, obj, _ = create(_pod(pod_name, {"app": app}))
            created[pod_name] = obj
            out.setdefault("create_status", []).append(status)
        meta_c = created["c"].get("metadata", {}) if isinstance(created["c"], dict) else {}
        out["create_stamps"] = {
            k: meta_c.get(k) for k in ("uid", "resourceVersion", "creationTimestamp")
        }
        status, listed, _ = _request(port, "GET", base)
        out["list_rv"] = (
            listed.get("metadata", {}).get("resourceVersion")
            if isinstance(listed, dict)
            else listed
        )
        out["list_item_rvs"] = (
            [i["metadata"].get("resourceVersion") for i in listed.get("items", [])]
            if isinstance(listed, dict)
            else None
        )
        list_rv = out["list_rv"]

        # Watch framing and synthetic ADDED with RV unset (2 s: also shows no clean end).
        w = _stream(port, f"{base}?watch=true", 1.5)
        out["watch_unset"] = {
            "status": w["status"],
            "content_type": w["headers"].get("content-type"),
            "transfer_encoding": w["headers"].get("transfer-encoding"),
            "chunks": w["chunks"],
            "compact_json": w["compact"],
            "events": _summ(w["events"]),
            "ended": w["ended"],
        }
        out["watch_rv0"] = _summ(
            _stream(port, f"{base}?watch=true&resourceVersion=0", 1.0)["events"]
        )
        # Watch from the list RV: only later events (one MODIFIED made after 0.3 s).
        w = _stream(
            port,
            f"{base}?watch=true&resourceVersion={list_rv}",
            1.5,
            lambda: patch(
                "a", {"metadata": {"annotations": {"x": "1"}}}, "application/merge-patch+json"
            ),
        )
        out["watch_from_list_rv"] = _summ(w["events"])
        # Too-old RV.
        if name == "kubesim":  # forget the history, so RV 1 is too old
            _request(port, "POST", "/kubesim/compact")
        w = _stream(port, f"{base}?watch=true&resourceVersion=1", 1.0)
        out["watch_rv_1"] = {
            "status": w["status"],
            "events": _summ(w["events"]),
            "ended": w["ended"],
        }
        # timeoutSeconds=1.
        # kubesim runs on virtual time: its probes advance the clock through the admin API.
        advance = (
            (lambda secs: lambda: _request(port, "POST", f"/kubesim/advance?seconds={secs}"))
            if name == "kubesim"
            else (lambda secs: None)
        )
        w = _stream(port, f"{base}?watch=true&timeoutSeconds=1", 3.0, advance(2))
        out["timeout_seconds_1"] = {"ended": w["ended"], "elapsed": w["elapsed"]}
        # Bookmarks and watch-list.
        w = _stream(
            port, f"{base}?watch=true&allowWatchBookmarks=true&timeoutSeconds=90", 4.0, advance(61)
        )
        out["bookmarks_3s"] = _summ(w["events"])
        w = _stream(
            port,
            f"{base}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=NotOlderThan",
            1.0,
        )
        out["watch_list"] = {"status": w["status"], "events": _summ(w["events"])}
        # The query spellings real clients send.
        for spelling in ("True", "1"):
            w = _stream(port, f"{base}?watch={spelling}", 0.8)
            out[f"watch={spelling}"] = {
                "status": w["status"],
                "transfer_encoding": w["headers"].get("transfer-encoding"),
                "first": _summ(w["events"][:3])
                if all("type" in e for e in w["events"])
                else [str(e)[:80] for e in w["events"][:1]],
            }
        # Selectors on list and watch.
        for q in (
            "labelSelector=app%3Da",
            "labelSelector=app+in+(other)",
            "fieldSelector=metadata.name%3Da",
        ):
            status, listed, _ = _request(port, "GET", f"{base}?{q}")
            out[f"list?{q}"] = (
                status,
                [i["metadata"]["name"] for i in listed.get("items", [])]
                if isinstance(listed, dict)
                else listed,
            )
            out[f"watch?{q}"] = _summ(_stream(port, f"{base}?watch=true&{q}", 0.8)["events"])
        # Selector transition: pod a flips app=a -> app=z under a labelSelector=app=a watch.
        w = _stream(
            port,
            f"{base}?watch=true&labelSelector=app%3Da",
            1.5,
            lambda: patch(
                "a", {"metadata": {"labels": {"app": "z"}}}, "application/merge-patch+json"
            ),
        )
        out["selector_transition"] = _summ(w["events"])
        # Pagination.
        status, page, _ = _request(port, "GET", f"{base}?limit=1")
        meta = page.get("metadata", {}) if isinstance(page, dict) else {}
        out["limit_1"] = {
            "status": status,
            "items": len(page.get("items", [])) if isinstance(page, dict) else None,
            "continue": bool(meta.get("continue")),
            "remainingItemCount": meta.get("remainingItemCount"),
        }
        # Status errors.
        status, body, _ = _request(port, "GET", f"{base}/missing")
        out["get_missing"] = (
            (status, body.get("kind"), body.get("reason"))
            if isinstance(body, dict)
            else (status, body)
        )
        status, body, _ = create(_pod("b"))
        out["create_duplicate"] = (
            (status, body.get("kind"), body.get("reason"))
            if isinstance(body, dict)
            else (status, body)
        )
        bad = _pod("Bad_Name!")
        status, body, _ = create(bad)
        out["create_invalid_name"] = (
            status,
            body.get("kind") if isinstance(body, dict) else None,
            body.get("reason") if isinstance(body, dict) else body,
        )
        status, body, _ = create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nocontainers"}, "spec": {}}
        )
        out["create_no_containers"] = (
            status,
            body.get("reason") if isinstance(body, dict) else body,
        )
        # Optimistic concurrency: PUT and PATCH with a stale resourceVersion.
        status, current, _ = _request(port, "GET", f"{base}/c")
        stale = json.loads(json.dumps(current)) if isinstance(current, dict) else {}
        stale.setdefault("metadata", {})["resourceVersion"] = "1"
        status, body, _ = _request(port, "PUT", f"{base}/c", stale)
        out["put_stale_rv"] = (status, body.get("reason") if isinstance(body, dict) else body)
        status, body, _ = patch(
            "c",
            {"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}},
            "application/merge-patch+json",
        )
        out["patch_stale_rv"] = (status, body.get("reason") if isinstance(body, dict) else body)
        # Patches: merge (null deletes a key), strategic (containers merged by name), JSON patch.
        patch(
            "c", {"metadata": {"labels": {"k1": "v1", "k2": "v2"}}}, "application/merge-patch+json"
        )
        status, body, _ = patch(
            "c", {"metadata": {"labels": {"k1": None}}}, "application/merge-patch+json"
        )
        labels = body.get("metadata", {}).get("labels", {}) if isinstance(body, dict) else {}
        out["merge_patch_null"] = (status, labels)
        status, body, _ = patch(
            "c",
            {"spec": {"containers": [{"name": "app", "image": "new:2"}]}},
            "application/strategic-merge-patch+json",
        )
        containers = body.get("spec", {}).get("containers", []) if isinstance(body, dict) else []
        out["strategic_patch"] = (
            status,
            [c.get("image") for c in containers],
            "ports kept" if containers and "ports" in containers[0] else "ports lost",
        )
        status, body, _ = patch(
            "c",
            [{"op": "add", "path": "/metadata/labels/jp", "value": "1"}],
            "application/json-patch+json",
        )
        labels = (
            body.get("metadata", {}).get("labels", {})
            if isinstance(body, dict) and "metadata" in body
            else None
        )
        out["json_patch"] = (
            status,
            labels.get("jp") if labels else (body if isinstance(body, str) else body.get("reason")),
        )
        # Discovery.
        for path in ("/api", "/api/v1", "/apis", "/version"):
            status, body, _ = _request(port, "GET", path)
            if path == "/api/v1" and isinstance(body, dict):
                pods_entry = [r for r in body.get("resources", []) if r.get("name") == "pods"]
                out[path] = (
                    status,
                    [r.get("name") for r in body.get("resources", [])][:6],
                    {k: pods_entry[0].get(k) for k in ("namespaced", "verbs", "kind")}
                    if pods_entry
                    else None,
                    body.get("groupVersion"),
                )
            else:
                out[path] = (status, body.get("kind") if isinstance(body, dict) else body)
        out["kubectl_get_pods"] = _kubectl(port)
        # A watch that matches nothing: are the headers sent before the first event?
        target = (
            f"{base}?watch=true&labelSelector=app%3Dnothing"
            if name == "kubesim"
            else (
                "/api/v1/namespaces/empty/pods?watch=true"  # kmock ignores selectors
            )
        )
        w = _stream(port, target, 1.0)
        out["watch_empty_headers"] = (
            w["status"],
            w["headers"].get("transfer-encoding"),
            len(w["events"]),
        )
    if name == "kmock":
        # The same with ``kmock.resources['v1/pods']`` declared (verbs, namespaced, kind), on a
        # store holding one pod in ``w``.
        with Child(name, 1, 0, declare=True) as child:
            out["kubectl_get_pods_declared"] = _kubectl(child.port, "w")
    else:
        out["kubectl_get_pods_declared"] = out["kubectl_get_pods"]
    return out


def _kubectl(port: int, namespace: str = "p") -> tuple[int | None, str]:
    """``kubectl get pods`` against the server, if kubectl is installed."""
    try:
        done = subprocess.run(
            [
                "kubectl",
                f"--server=http://127.0.0.1:{port}",
                "get",
                "pods",
                "-n",
                namespace,
                "--request-timeout=10s",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return done.returncode, (done.stdout + done.stderr).strip()[:400]
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, repr(exc)


# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python bench/kmock_compare.py",
        description="kubesim vs kmock over loopback HTTP: watch events/s, list time, wire probes.",
    )
    parser.add_argument("--quick", action="store_true", help="2,000 events, 1,000 pods, 2 reps")
    parser.add_argument("--events", type=int, help="watch events (default 20,000)")
    parser.add_argument("--pods", type=int, help="pods in the listed collection (default 10,000)")
    parser.add_argument("--repetitions", type=int, help="repetitions (default 5)")
    parser.add_argument(
        "--gc",
        action="store_true",
        help="leave the cyclic GC on while timing, in the reader and both servers (default: off)",
    )
    parser.add_argument("--no-probes", action="store_true", help="skip the wire-behaviour probes")
    parser.add_argument("--probes-only", action="store_true", help="only the wire-behaviour probes")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--serve", choices=("kubesim", "kmock"), help=argparse.SUPPRESS)
    parser.add_argument("--declare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        if args.gc:
            os.environ["KUBESIM_BENCH_GC"] = "1"
        args.events = args.events or 0
        args.pods = args.pods or 0
        return args
    args.events = args.events or (2_000 if args.quick else 20_000)
    args.pods = args.pods or (1_000 if args.quick else 10_000)
    args.repetitions = args.repetitions or (2 if args.quick else 5)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve == "kubesim":
        _serve_kubesim(args.events, args.pods)
        return 0
    if args.serve == "kmock":
        _serve_kmock(args.events, args.pods, declare=args.declare)
        return 0
    import importlib.util

    if importlib.util.find_spec("kmock") is None:
        print("kmock is not installed: pip install kmock", file=sys.stderr)
        return 2
    from importlib.metadata import version

    import aiohttp

    import kubesim

    kmock_version = version("kmock")

    started = time.perf_counter()
    meta: JSON = {
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(
            ["python bench/kmock_compare.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()),
        },
        "versions": {
            "python": platform.python_version(),
            "kubesim": kubesim.__version__,
            "kmock": kmock_version,
            "aiohttp": aiohttp.__version__,
            "orjson": orjson.__version__,
        },
        "args": {
            "events": args.events,
            "pods": args.pods,
            "repetitions": args.repetitions,
            "gc": args.gc,
        },
    }
    print(
        f"kubesim {kubesim.__version__} vs kmock {kmock_version} "
        f"(aiohttp {aiohttp.__version__}): "
        f"{args.events:,} events, {args.pods:,} pods, {args.repetitions} repetitions, "
        f"{os.cpu_count()} cpus, gc {'on' if args.gc else 'off'}, each server in its own process "
        "on 127.0.0.1",
        flush=True,
    )
    result: JSON = {"meta": meta}
    if not args.probes_only:
        bench = measure(args)
        result["bench"] = bench
        print(format_rows(bench, args.events, args.pods), flush=True)
    if not args.no_probes:
        print("\nwire probes (see docs/reference/kmock-comparison.md):", flush=True)
        result["probes"] = {}
        for name in ("kmock", "kubesim"):
            result["probes"][name] = run_probes(name)
        for key in result["probes"]["kmock"]:
            print(f"  {key}")
            for name in ("kubesim", "kmock"):
                value = result["probes"][name].get(key)
                print(f"    {name:<8} {json.dumps(value, default=str)[:300]}")
    meta["load_average_end"] = list(os.getloadavg())
    meta["duration_seconds"] = round(time.perf_counter() - started, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"{meta['duration_seconds']:.1f} s in all; results in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
