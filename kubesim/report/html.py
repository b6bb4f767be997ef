"""The campaign report as one self-contained HTML page: no script, style or font from outside.

:func:`render` takes the dict of :func:`kubesim.report.data.campaign_data` and returns the page:
the verdict per oracle; for a failure, what broke (with its numbers), the shrunk scenario, the
replay command, memory over the run's rounds against the objects alive on the server, and the
thread timeline of the failing schedule (which thread ran when, where each one stopped, where
it was preempted); for a pass, what the campaign covered. Charts are inline SVG drawn here, so
the page opens anywhere, offline, and can be attached to an issue as it is.
"""

from __future__ import annotations

from html import escape
from typing import Any

from kubesim import __version__
from kubesim._core.words import counted

# One color per thread lane, in order of first appearance (then reused).
LANE_COLORS = ("#3b82f6", "#f59e0b", "#10b981", "#8b5cf6", "#ef4444", "#14b8a6", "#ec4899")
STATUS_MARK = {
    "failed": "✗ failed",
    "passed": "✓ passed",
    "not exercised": "○ not exercised",
    "skipped": "– skipped",
}

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;
color:#1f2937}
h1{font-size:1.45rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid #e5e7eb;padding-bottom:.2rem}
.verdict{display:inline-block;padding:.15rem .6rem;border-radius:.3rem;font-weight:600;
color:#fff}.ok{background:#059669}.failed{background:#dc2626}
.meta{color:#6b7280}table{border-collapse:collapse;width:100%;margin:.5rem 0}
td,th{border-bottom:1px solid #e5e7eb;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f9fafb}tr.status-failed td{background:#fef2f2}
tr.status-skipped td{color:#6b7280}tr.status-not-exercised td{background:#fffbeb}
code,pre{font:13px ui-monospace,monospace}
pre{background:#f3f4f6;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
.replay{display:flex;gap:.5rem;align-items:flex-start}.replay pre{flex:1;margin:0}
button{font:inherit;padding:.3rem .7rem;cursor:pointer}
ol.scenario li{font-family:ui-monospace,monospace;font-size:13px}
svg text{font:11px system-ui,sans-serif;fill:#374151}.legend span{margin-right:1rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
"""

# Copies the replay command; marks the page as rendered (the browser test reads the mark).
SCRIPT = """
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  button.addEventListener("click", function () {
    var text = document.getElementById(button.dataset.copy).textContent;
    if (navigator.clipboard) { navigator.clipboard.writeText(text); }
    button.textContent = "copied";
  });
});
document.body.dataset.rendered = "yes";
"""


def render(data: dict[str, Any]) -> str:
    """The page for ``data`` (see :mod:`kubesim.report.data` for its contract)."""
    failure = data.get("failure")
    verdict = (
        '<span class="verdict ok">passed</span>'
        if data["ok"]
        else '<span class="verdict failed">property broken</span>'
    )
    found = (
        f", found at example {data['found_at']}, shrunk in the rest" if data.get("found_at") else ""
    )
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>kubesim check {escape(data['factory'])}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>kubesim check <code>{escape(data['factory'])}</code> {verdict}</h1>",
        f'<p class="meta">{counted(data["examples"], "example")}{found}; seed {data["seed"]}; '
        f"{data['seconds']:.1f} s; kubesim {escape(__version__)}</p>",
    ]
    if failure is not None:
        parts += _failure(failure)
    parts += _oracles(data["oracles"])
    parts += _coverage(data)
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


def _oracles(oracles: list[dict[str, Any]]) -> list[str]:
    rows = [
        f'<tr class="status-{o["status"].replace(" ", "-")}">'
        f"<td><code>{escape(o['name'])}</code></td>"
        f"<td>{STATUS_MARK[o['status']]}</td><td>{escape(o['summary'])}</td>"
        f"<td>{escape(o['why'])}</td></tr>"
        for o in oracles
    ]
    return [
        "<h2>Oracles</h2>",
        "<table><tr><th>oracle</th><th>verdict</th><th>checks that</th><th>note</th></tr>",
        *rows,
        "</table>",
    ]


def _failure(failure: dict[str, Any]) -> list[str]:
    parts = ["<h2>What broke</h2>"]
    for violation in failure["violations"]:
        details = "\n".join(violation["details"])
        parts.append(
            f"<p><strong><code>{escape(violation['property'])}</code></strong>: "
            f"{escape(violation['summary'])}</p>"
        )
        if details:
            parts.append(f"<pre>{escape(details)}</pre>")
    lines = failure["scenario"]
    parts.append(f"<h2>The scenario, shrunk ({counted(len(lines), 'step')})</h2>")
    if lines:
        parts.append('<ol class="scenario">')
        parts += [f"<li>{escape(line)}</li>" for line in lines]
        parts.append("</ol>")
    else:
        parts.append("<p>No steps: the setup, the quiescence and the tail rounds alone.</p>")
    if failure["schedule"]:
        parts.append(
            "<p>Thread schedule: preemptions at scheduling points "
            f"{escape(str(failure['schedule']))} of each step.</p>"
        )
    parts += [
        "<h2>Replay</h2>",
        '<div class="replay">',
        f'<pre id="replay">{escape(failure["replay"])}</pre>',
        '<button type="button" data-copy="replay">copy</button></div>',
        f'<p class="meta">It runs the same scenario and schedule again (trace '
        f"<code>{escape(failure['trace'][:16])}</code>) and exits 1 while the bug is there.</p>",
    ]
    if failure.get("log"):
        kept, total = failure["log"], failure["log_lines"]
        said = f"{total:,} lines" + (f", the last {len(kept)}" if len(kept) < total else "")
        parts += [
            f"<h2>What the store printed and logged ({said})</h2>",
            f'<pre class="log">{escape(chr(10).join(kept))}</pre>',
        ]
    parts += _memory(failure["rounds"])
    if failure.get("timeline"):
        parts += _timeline(failure["timeline"])
    return parts


def _memory(rounds: list[dict[str, Any]]) -> list[str]:
    measured = [r for r in rounds if r["retained_bytes"] is not None]
    parts = ["<h2>Memory over the run</h2>"]
    if len(measured) < 2:
        return [*parts, "<p>Not measured in this run.</p>"]
    width, height, left, right, top, bottom = 900, 260, 70, 70, 20, 60
    xs = _scale([r["index"] for r in measured], left, width - right)
    retained = [r["retained_bytes"] / 1024 for r in measured]
    live = [r["server_objects"] for r in measured]
    y_retained = _scale(retained, height - bottom, top, floor=0.0)
    y_live = _scale(live, height - bottom, top, floor=0.0)
    svg = [
        f'<svg role="img" aria-label="memory over rounds" viewBox="0 0 {width} {height}" '
        f'width="100%">',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
        'stroke="#9ca3af"/>',
        _polyline(xs, y_retained, "#dc2626"),
        _polyline(xs, y_live, "#2563eb", dashed=True),
        f'<text x="{left - 8}" y="{top + 4}" text-anchor="end">{max(retained):.0f} KiB</text>',
        f'<text x="{left - 8}" y="{height - bottom}" text-anchor="end">'
        f"{min(0.0, min(retained)):.0f}</text>",
        f'<text x="{width - right + 8}" y="{top + 4}">{max(live)} objects</text>',
    ]
    for x, r, y1, y2, kib in zip(xs, measured, y_retained, y_live, retained, strict=True):
        label = "setup" if r["phase"] == "setup" else f"{r['phase']} {r['index']}"
        svg.append(
            f'<circle cx="{x:.1f}" cy="{y1:.1f}" r="3" fill="#dc2626"><title>'
            f"{escape(label)}: {kib:.1f} KiB retained; {escape(r['step'])}</title></circle>"
        )
        svg.append(f'<circle cx="{x:.1f}" cy="{y2:.1f}" r="3" fill="#2563eb"/>')
        svg.append(
            f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle" '
            f'transform="rotate(30 {x:.1f} {height - bottom + 16})">{escape(label)}</text>'
        )
    svg.append("</svg>")
    growth = retained[-1] - retained[0]
    return [
        *parts,
        '<p class="legend"><span><span class="swatch" style="background:#dc2626"></span>'
        'bytes the store retains (KiB, left)</span><span><span class="swatch" '
        'style="background:#2563eb"></span>objects alive on the server (right)</span></p>',
        *svg,
        f'<p class="meta">From the first measured round to the last: {growth:+.1f} KiB retained, '
        f"{live[-1] - live[0]:+d} objects alive. A bounded store follows the blue line; a store "
        "whose red line climbs while the blue one stays flat keeps what it should let go.</p>",
    ]


def _timeline(timeline: dict[str, Any]) -> list[str]:
    stops, threads = timeline["stops"], timeline["threads"]
    parts = ["<h2>Thread timeline of the failing schedule</h2>"]
    if not stops:
        return [*parts, "<p>No thread switched: the store ran alone.</p>"]
    lane, top, left, width = 28, 30, 110, 900
    total = max(max(s["steps"] for s in stops), 1)
    height = top + lane * len(threads) + 30
    x = _scale([0, total], left, width - 10)

    def at(steps: int) -> float:
        return float(x[0] + (x[1] - x[0]) * steps / total)

    color = {name: LANE_COLORS[i % len(LANE_COLORS)] for i, name in enumerate(threads)}
    row = {name: top + i * lane for i, name in enumerate(threads)}
    svg = [
        f'<svg role="img" aria-label="thread timeline" viewBox="0 0 {width} {height}" '
        'width="100%">',
    ]
    for name in threads:
        svg.append(
            f'<text x="{left - 8}" y="{row[name] + lane / 2 + 4}" text-anchor="end">'
            f"{escape(name)}</text>"
        )
    for step in timeline["steps"]:
        sx = at(step["steps"])
        svg.append(
            f'<line x1="{sx:.1f}" y1="{top - 18}" x2="{sx:.1f}" y2="{height - 24}" '
            'stroke="#9ca3af" stroke-dasharray="4 3"/>'
        )
        svg.append(
            f'<text x="{sx + 3:.1f}" y="{top - 8}">step {step["round"]}<title>'
            f"{escape(step['line'])}</title></text>"
        )
    previous = 0
    for stop in stops:
        x0, x1 = at(previous), at(stop["steps"])
        y = row[stop["thread"]]
        tip = escape(
            f"{stop['thread']} ran scheduling points {previous}..{stop['steps']}, then "
            f"{stop['why']}" + (f" at {stop['location']}" if stop["location"] else "")
        )
        svg.append(
            f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(x1 - x0, 2):.1f}" height="{lane - 8}" '
            f'fill="{color[stop["thread"]]}" opacity="0.85"><title>{tip}</title></rect>'
        )
        if stop["why"].startswith("preempted"):
            svg.append(
                f'<path d="M{x1:.1f},{y + 2} l-5,-8 h10 z" fill="#dc2626"><title>{tip}'
                "</title></path>"
            )
        previous = stop["steps"]
    svg.append(
        f'<text x="{left}" y="{height - 6}">scheduling points → (a red mark: a preemption '
        "the schedule chose)</text></svg>"
    )
    rows = [
        f"<tr><td>{s['steps']}</td><td>{s['time']:g}</td><td>{escape(s['thread'])}</td>"
        f"<td>{escape(s['why'])}</td><td><code>{escape(s['location'])}</code></td></tr>"
        for s in stops[:_MAX_STOP_ROWS]
    ]
    more = len(stops) - _MAX_STOP_ROWS
    return [
        *parts,
        *svg,
        "<details open><summary>Where each thread stopped</summary>",
        "<table><tr><th>point</th><th>virtual s</th><th>thread</th><th>then</th>"
        "<th>at (the store's code)</th></tr>",
        *rows,
        "</table>" + (f"<p>... and {more} more.</p>" if more > 0 else "") + "</details>",
    ]


_MAX_STOP_ROWS = 300


def _coverage(data: dict[str, Any]) -> list[str]:
    drawn = data["coverage"]["steps_drawn"]
    total = sum(drawn.values()) or 1
    rows = []
    for kind in data["coverage"]["kinds"]:
        count = drawn.get(kind, 0)
        bar = 200 * count / total
        rows.append(
            f"<tr><td><code>{escape(kind)}</code></td><td>{count}</td><td>"
            f'<svg width="210" height="12" aria-hidden="true"><rect width="{bar:.1f}" '
            'height="12" fill="#6366f1"/></svg></td></tr>'
        )
    never = [k for k in data["coverage"]["kinds"] if not drawn.get(k)]
    if not data["coverage"]["kinds"]:
        note = "<p>No steps: the setup, the quiesce and the tail rounds only.</p>"
    elif never:
        note = f"<p>Never drawn: {escape(', '.join(never))}.</p>"
    else:
        note = "<p>Every step kind was drawn at least once.</p>"
    searched = counted(data.get("found_at") or data["examples"], "example")
    steps = counted(sum(drawn.values()), "step")
    return [
        "<h2>What the campaign covered</h2>",
        f"<p>{searched}, {steps} drawn in all (each "
        "example draws a subset of step kinds: some faults absent, some dense"
        f"{'; the shrinking after the failure is not counted' if data.get('found_at') else ''}"
        ").</p>",
        "<table><tr><th>step kind</th><th>steps drawn</th><th></th></tr>",
        *rows,
        "</table>",
        note,
    ]


def _scale(
    values: list[float], low: float, high: float, *, floor: float | None = None
) -> list[float]:
    """Map ``values`` linearly onto [low, high] (pixels); a flat series sits mid-way."""
    lo = min(values) if floor is None else min(floor, min(values))
    hi = max(values)
    if hi == lo:
        return [(low + high) / 2 for _ in values]
    return [low + (high - low) * (v - lo) / (hi - lo) for v in values]


def _polyline(xs: list[float], ys: list[float], color: str, *, dashed: bool = False) -> str:
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    return f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'
