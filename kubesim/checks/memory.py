"""Memory oracle: what the store under test retains, sampled at quiescent points.

A :class:`MemorySampler` uses ``tracemalloc`` (one frame per allocation, the cheapest setting)
and, at each sample, collects garbage and sums the traced blocks still alive, *excluding* those
allocated by kubesim itself (the server's objects, history and the run's trace). What is left is
what the store, and the client code it calls, keep alive.

:func:`check_memory_bounded` is a pure oracle over the samples: it fits the growth per round
(least squares, after the warm-up sample) and reports a :class:`MemoryViolation` with the
numbers when the store grows by more than the tolerance per round.

Caveat (tracemalloc attributes a block to where it was *allocated*): an object that kubesim
allocates and the store keeps is not counted. The in-process transports hand the store fresh
bytes that the client decodes itself, so decoded objects are attributed to client or store code.
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field

import kubesim

_KUBESIM_DIR = os.path.dirname(os.path.abspath(kubesim.__file__))
# tracemalloc's own bookkeeping, and module code imported lazily during a run: the
# interpreter's, not the store's.
_INTERPRETER_FILES = frozenset(
    {
        tracemalloc.__file__,
        "<unknown>",
        "<frozen importlib._bootstrap>",
        "<frozen importlib._bootstrap_external>",
    }
)


@dataclass(frozen=True)
class MemorySample:
    """Bytes and blocks retained at one quiescent point, labelled by round."""

    round: int
    retained_bytes: int
    retained_blocks: int
    top_sites: tuple[tuple[str, int], ...] = ()


@dataclass
class MemorySampler:
    """Takes :class:`MemorySample` s; use as a context manager around the whole run."""

    exclude: Sequence[str] = (_KUBESIM_DIR + os.sep,)  # path prefixes whose allocations are ours
    top: int = 5
    samples: list[MemorySample] = field(default_factory=list)
    _started_here: bool = False
    _previous: dict[str, int] | None = None

    def __enter__(self) -> MemorySampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(1)
            self._started_here = True

    def stop(self) -> None:
        self._previous = None
        if self._started_here:
            tracemalloc.stop()
            self._started_here = False

    def _excluded(self, filename: str) -> bool:
        # Prefix tests, not fnmatch: fnmatch's regex cache would allocate inside the measurement.
        return filename in _INTERPRETER_FILES or filename.startswith(tuple(self.exclude))

    def sample(self, round_: int) -> MemorySample:
        if not tracemalloc.is_tracing():
            raise RuntimeError(
                "MemorySampler.sample() needs tracing: call start() or use it as a context manager"
            )
        gc.collect()
        # Group by line once (one pass in tracemalloc), then filter the few thousand sites.
        # Snapshot.filter_traces would fnmatch every block against every pattern: 100x slower.
        stats = tracemalloc.take_snapshot().statistics("lineno")
        excluded: dict[str, bool] = {}
        sites: dict[str, int] = {}
        size = 0
        blocks = 0
        for stat in stats:
            filename = stat.traceback[0].filename
            skip = excluded.get(filename)
            if skip is None:
                skip = excluded[filename] = self._excluded(filename)
            if skip:
                continue
            size += stat.size
            blocks += stat.count
            sites[f"{_relative(filename)}:{stat.traceback[0].lineno}"] = stat.size
        growth: tuple[tuple[str, int], ...] = ()
        if self._previous is not None and self.top:
            previous = self._previous
            diffs = [(site, now - previous.get(site, 0)) for site, now in sites.items()]
            diffs = [d for d in diffs if d[1] > 0]
            diffs.sort(key=lambda d: (-d[1], d[0]))
            growth = tuple(diffs[: self.top])
        self._previous = sites
        taken = MemorySample(round_, size, blocks, growth)
        self.samples.append(taken)
        return taken


def _relative(path: str) -> str:
    cwd = os.getcwd()
    return os.path.relpath(path, cwd) if path.startswith(cwd) else path


@dataclass(frozen=True)
class MemoryViolation:
    """The store kept growing: the numbers, and what grew most."""

    growth_per_round: float
    tolerance_per_round: float
    first: MemorySample
    last: MemorySample
    top_sites: tuple[tuple[str, int], ...]

    def __str__(self) -> str:
        rounds = self.last.round - self.first.round
        lines = [
            f"memory grows by {self.growth_per_round:,.0f} bytes per round "
            f"(tolerance {self.tolerance_per_round:,.0f}): "
            f"{self.first.retained_bytes:,} bytes after round {self.first.round}, "
            f"{self.last.retained_bytes:,} after round {self.last.round} ({rounds} rounds)"
        ]
        for site, size in self.top_sites:
            lines.append(f"  +{size:,} bytes allocated at {site}")
        return "\n".join(lines)


def growth_per_round(samples: Sequence[MemorySample]) -> float:
    """Least-squares slope of retained bytes over rounds; 0.0 with fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    xs = [float(s.round) for s in samples]
    ys = [float(s.retained_bytes) for s in samples]
    mean_x = sum(xs) / len(xs)
    mean_y = sum(ys) / len(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=False)) / var


def check_memory_bounded(
    samples: Sequence[MemorySample],
    *,
    tolerance_per_round: float | None = None,
    warmup: int = 1,
) -> MemoryViolation | None:
    """None when the store stays bounded; a :class:`MemoryViolation` with numbers otherwise.

    The first ``warmup`` samples are left out: they hold one-time structures (caches, the
    first copy of every object). The default tolerance is 1% of the first measured sample per
    round, at least 1 KiB, so a store whose size only wobbles passes and a store that keeps a
    copy of anything per round fails.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got warmup={warmup}")
    measured = list(samples[warmup:])
    if len(measured) < 2:
        raise ValueError(
            f"check_memory_bounded needs at least 2 samples after the warm-up, got {len(measured)} "
            f"(samples={len(samples)}, warmup={warmup})"
        )
    if tolerance_per_round is None:
        tolerance_per_round = max(1024.0, 0.01 * measured[0].retained_bytes)
    slope = growth_per_round(measured)
    if slope <= tolerance_per_round:
        return None
    sites: dict[str, int] = {}
    for sample in measured:
        for site, size in sample.top_sites:
            sites[site] = sites.get(site, 0) + size
    top = tuple(sorted(sites.items(), key=lambda item: (-item[1], item[0]))[:5])
    return MemoryViolation(slope, tolerance_per_round, measured[0], measured[-1], top)
