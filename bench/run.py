"""kubesim throughput benchmark: ``python bench/run.py [--quick]``.

Measures, side by side in one run, how fast kubesim delivers watch events and lists, and
how that compares with the *limit* for the same bytes: decoding (or parsing) them from memory,
with no server. Prints one table per section and writes ``bench/results/latest.json``.

1. In-process watch: server writes -> watcher queue -> WatchStream chunks -> the official
   client's ``iter_resp_lines`` -> ``orjson.loads`` -> dict store; plus the server-side costs
   alone (writes/s with one watch open, queue -> chunks).
2. HTTP watch on loopback: a raw socket reader parsing chunked framing, events pre-written or
   written while it reads.
3. HTTP list of ``--pods`` pods: one unpaginated GET and ``limit=500`` + ``continue``.

The machine is assumed noisy (2 shared cores): every row is the median of several
repetitions, and ratios are taken per repetition against a limit measured in the same
repetition. No timing is asserted anywhere; see bench/README.md for how to read the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout: import kubesim and bench
    sys.path.insert(0, str(ROOT))

from bench import fanout, http_list, http_watch, inprocess  # noqa: E402
from bench.measure import HEADERS, Section, format_section, setup_gc  # noqa: E402

DEFAULT_OUTPUT = ROOT / "bench" / "results" / "latest.json"
SECTIONS = ("inprocess", "http-watch", "http-list", "fanout")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python bench/run.py",
        description="Measure kubesim's watch and list throughput against decode-only limits.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 2,000 events, 1,000 pods, 2 repetitions (a few seconds)",
    )
    parser.add_argument("--events", type=int, help="watch events per measurement (default 20,000)")
    parser.add_argument("--pods", type=int, help="pods in the listed collection (default 10,000)")
    parser.add_argument("--repetitions", type=int, help="repetitions per measurement (default 5)")
    parser.add_argument(
        "--only", choices=SECTIONS, action="append", help="run only this section (repeatable)"
    )
    parser.add_argument(
        "--gc",
        action="store_true",
        help="leave the cyclic GC on while timing (default: off, see README)",
    )
    parser.add_argument(
        "--wall-clock",
        action="store_true",
        help="time the in-process section by wall clock instead of CPU time",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"where to write the JSON results (default {DEFAULT_OUTPUT})",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.events = args.events or (2_000 if quick else 20_000)
    args.pods = args.pods or (1_000 if quick else 10_000)
    args.repetitions = args.repetitions or (2 if quick else 5)
    for name in ("events", "pods", "repetitions"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


def _fanout(*, watches: int, repetitions: int) -> dict[str, Any]:
    """Section 4 (bench/fanout.py): many watches on one server, every event to every one."""
    events = 100
    runs = fanout.run(watches, events, repetitions)
    rates = sorted(r.delivered_per_second for r in runs)
    figures = {
        "watches": watches,
        "events": events,
        "delivered_per_second": round(rates[len(rates) // 2]),
        "latency_p50_ms": round(1000 * sorted(r.percentile(0.5) for r in runs)[len(runs) // 2], 1),
        "latency_p99_ms": round(1000 * sorted(r.percentile(0.99) for r in runs)[len(runs) // 2], 1),
        "rss_per_watch_kib": round(sorted(r.rss_per_watch for r in runs)[len(runs) // 2] / 1024, 1),
    }
    print("== 4. Many watches over HTTP (median of repetitions)")
    print(f"  watches held                      {figures['watches']:>10,}")
    print(f"  events written                    {figures['events']:>10,}")
    print(f"  events delivered/s to all         {figures['delivered_per_second']:>10,}")
    p50, p99 = figures["latency_p50_ms"], figures["latency_p99_ms"]
    print(f"  delivery latency p50 / p99 (ms)   {p50:>5} / {p99}")
    print(f"  process RSS per watch (KiB)       {figures['rss_per_watch_kib']:>10}\n", flush=True)
    return figures


def _versions() -> dict[str, str | None]:
    import orjson

    import kubesim

    try:
        import kubernetes

        client: str | None = kubernetes.__version__
    except ImportError:
        client = None
    return {
        "python": platform.python_version(),
        "kubesim": kubesim.__version__,
        "orjson": orjson.__version__,
        "kubernetes": client,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = set(args.only or SECTIONS)
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
        "versions": _versions(),
        "args": {
            "events": args.events,
            "pods": args.pods,
            "repetitions": args.repetitions,
            "gc": args.gc,
            "wall_clock": args.wall_clock,
            "quick": args.quick,
            "sections": sorted(wanted),
        },
    }
    print(
        f"kubesim bench: {args.events:,} events, {args.pods:,} pods, {args.repetitions} "
        f"repetitions, gc {'on' if args.gc else 'off'}; python {meta['versions']['python']}, "
        f"{os.cpu_count()} cpus",
        flush=True,
    )
    sections: list[Section] = []
    pods = inprocess.make_pods(args.events) if wanted & {"inprocess", "http-watch"} else []
    setup_gc(args.gc)
    if "inprocess" in wanted:
        sections.append(
            inprocess.run(
                pods=pods,
                repetitions=args.repetitions,
                gc_enabled=args.gc,
                cpu_clock=not args.wall_clock,
            )
        )
        print(format_section(sections[-1]) + "\n", flush=True)
    if "http-watch" in wanted:
        sections.append(http_watch.run(pods=pods, repetitions=args.repetitions, gc_enabled=args.gc))
        print(format_section(sections[-1]) + "\n", flush=True)
    if "http-list" in wanted:
        sections.append(
            http_list.run(pods=args.pods, repetitions=args.repetitions, gc_enabled=args.gc)
        )
        print(format_section(sections[-1]) + "\n", flush=True)
    if "fanout" in wanted:
        meta["fanout"] = _fanout(watches=200 if args.quick else 1000, repetitions=args.repetitions)
    meta["duration_seconds"] = round(time.perf_counter() - started, 2)
    result = {"meta": meta, "headers": list(HEADERS), "sections": [s.as_json() for s in sections]}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{meta['duration_seconds']:.1f} s in all; results in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
