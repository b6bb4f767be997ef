"""Shared plumbing: timing sections, per-repetition samples, medians, ratios, the table.

Every figure is a *rate* (events, writes or pods per second) computed from one timed section.
A row keeps one sample per repetition; the table shows the median and the spread
((max - min) / median, relative to the typical repetition). The "vs limit" column
is the median of per-repetition ratios, each taken against the limit measured in the *same*
repetition, so that slow phases of a noisy 2-core machine hit both sides of a ratio alike.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

LIMIT = "limit"

HEADERS = ("measurement", "median", "unit", "spread", "MB/s", "vs limit")
_WIDTHS = (62, 11, 9, 7, 7, 9)


def tidy(gc_enabled: bool) -> None:
    """Free the previous repetition's servers, untimed, when the collector is kept off.

    A server is cyclic garbage (its clock's timers refer back to it), so with the GC off it
    is only freed here. :func:`setup_gc` froze everything built before the repetitions, so
    this pass traverses only what the last repetition left behind.
    """
    if not gc_enabled:
        gc.collect()


def setup_gc(gc_enabled: bool) -> None:
    """The benchmark's GC policy: off (the default) or left on with ``--gc``.

    With the collector on, a loop that keeps thousands of pod dicts spends most of its time in
    full collections whose cost grows with everything alive in the process (4-12x in the
    reference), which drowns the per-event costs this benchmark is after. Off, the run
    collects only between repetitions (:func:`tidy`), after freezing what exists so far
    (imports, the prepared pods), as the reference suggests for property tests.
    """
    if gc_enabled:
        gc.enable()
        return
    gc.collect()
    gc.disable()
    gc.freeze()


class Stopwatch:
    """``with Stopwatch() as sw: ...``: one interval, as wall time and as process CPU time.

    ``sw.seconds`` is whichever :attr:`use_cpu` selects. CPU time suits single-threaded
    in-process sections on a shared machine: a busy neighbour on the same two cores delays the
    benchmark but does not add to its CPU time. It does not suit anything with a second thread
    or a socket (HTTP), where the wall clock is the throughput a client sees.
    """

    def __init__(self, *, use_cpu: bool = False) -> None:
        self.use_cpu = use_cpu
        self.wall = 0.0
        self.cpu = 0.0
        self._wall0 = 0.0
        self._cpu0 = 0.0

    @property
    def seconds(self) -> float:
        return self.cpu if self.use_cpu else self.wall

    def __enter__(self) -> Stopwatch:
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall0
        self.cpu = time.process_time() - self._cpu0


@dataclass
class Row:
    """One measurement: a rate per repetition, optionally MB/s and a ratio to a limit row."""

    key: str
    label: str
    unit: str
    samples: list[float] = field(default_factory=list)
    mb_samples: list[float] = field(default_factory=list)
    ratio_samples: list[float] = field(default_factory=list)
    limit_key: str | None = None
    is_limit: bool = False

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def spread(self) -> float | None:
        median = self.median
        if not median or len(self.samples) < 2:
            return None
        return (max(self.samples) - min(self.samples)) / median

    @property
    def mb_median(self) -> float | None:
        return statistics.median(self.mb_samples) if self.mb_samples else None

    @property
    def ratio_median(self) -> float | None:
        return statistics.median(self.ratio_samples) if self.ratio_samples else None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "unit": self.unit,
            "median": self.median,
            "spread": self.spread,
            "samples": self.samples,
            "mb_per_s_median": self.mb_median,
            "mb_per_s_samples": self.mb_samples,
            "is_limit": self.is_limit,
            "limit": self.limit_key,
            "ratio_to_limit_median": self.ratio_median,
            "ratio_to_limit_samples": self.ratio_samples,
        }


class Section:
    """The rows of one benchmark, filled one repetition at a time, in display order."""

    def __init__(self, key: str, title: str) -> None:
        self.key = key
        self.title = title
        self.rows: dict[str, Row] = {}
        self.notes: list[str] = []
        self.facts: dict[str, Any] = {}
        self.cpu_seconds = 0.0
        self.wall_seconds = 0.0

    def observe(self, sw: Stopwatch) -> Stopwatch:
        """Count a timed interval towards the section's CPU/wall ratio (a load diagnostic)."""
        self.cpu_seconds += sw.cpu
        self.wall_seconds += sw.wall
        return sw

    @property
    def cpu_over_wall(self) -> float | None:
        return self.cpu_seconds / self.wall_seconds if self.wall_seconds else None

    def row(
        self, key: str, label: str, unit: str, *, limit: str | None = None, is_limit: bool = False
    ) -> Row:
        """Declare a row (call in display order, before the repetitions)."""
        row = Row(key, label, unit, limit_key=limit, is_limit=is_limit)
        self.rows[key] = row
        return row

    def add(self, key: str, count: int, seconds: float, *, nbytes: int | None = None) -> float:
        """Record ``count`` items in ``seconds`` for row ``key``; returns the rate."""
        row = self.rows[key]
        rate = count / seconds
        row.samples.append(rate)
        if nbytes is not None:
            row.mb_samples.append(nbytes / seconds / 1e6)
        return rate

    def pair_ratios(self) -> None:
        """Ratio of every row to its limit, repetition by repetition (same index = same rep)."""
        for row in self.rows.values():
            if row.limit_key is None:
                continue
            limit = self.rows[row.limit_key]
            row.ratio_samples = [
                mine / theirs for mine, theirs in zip(row.samples, limit.samples, strict=False)
            ]

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "facts": self.facts,
            "cpu_over_wall": self.cpu_over_wall,
            "notes": self.notes,
            "rows": [row.as_json() for row in self.rows.values()],
        }


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def format_section(section: Section) -> str:
    """The section as a fixed-width text table (the headers are :data:`HEADERS`)."""
    lines = [section.title]
    lines.extend(f"  ({note})" for note in section.notes)
    if section.cpu_over_wall is not None:
        lines.append(
            f"  (process CPU / wall time over the timed parts: {section.cpu_over_wall:.2f}; "
            "well below 1 means the process waited for a core)"
        )
    header = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(HEADERS, _WIDTHS, strict=True))
    )
    lines.append("  " + header)
    lines.append("  " + "-" * len(header))
    for row in section.rows.values():
        if not row.samples:
            continue
        spread = row.spread
        if row.is_limit:
            ratio = LIMIT
        elif row.ratio_median is not None:
            ratio = f"{row.ratio_median:.2f}x"
        else:
            ratio = ""
        cells = (
            row.label,
            _number(row.median),
            row.unit,
            "-" if spread is None else f"{spread:.0%}",
            _number(row.mb_median) if row.mb_samples else "",
            ratio,
        )
        lines.append(
            "  "
            + "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, _WIDTHS, strict=True))
            )
        )
    return "\n".join(lines)
