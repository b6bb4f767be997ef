"""Sizes oracle: what the store says about its own structures, against the live set.

A store may report ``sizes()``: the number of entries in each structure it keeps (``pods``,
``endpoints``, an index). On a server whose live set (the number of objects it holds) does not
grow, no such structure may grow either, however few bytes it costs: an index that gains 50
entries per watch restart is a leak even when each entry is small enough to hide under the byte
tolerance.

:func:`check_sizes_bounded` is a pure oracle over per-round observations.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SizesRound:
    """One quiescent point: the store's ``sizes()`` and the live set on the server."""

    round: int
    sizes: Mapping[str, int]
    live: int


@dataclass(frozen=True)
class SizesViolation:
    """A structure of the store grew while the live set did not (per live object)."""

    entry: str
    first: SizesRound
    last: SizesRound

    def __str__(self) -> str:
        before, after = self.first.sizes[self.entry], self.last.sizes[self.entry]
        return (
            f"sizes()[{self.entry!r}] grows from {before:,} to {after:,} entries between round "
            f"{self.first.round} and round {self.last.round} ({after - before:+,}), while the "
            f"live set goes from {self.first.live:,} to {self.last.live:,} objects"
        )


def _grows(values: Sequence[int]) -> bool:
    """Never shrinks and ends higher: a queue that fills and drains is not a leak."""
    return values[-1] > values[0] and all(b >= a for a, b in itertools.pairwise(values))


def check_sizes_bounded(rounds: Sequence[SizesRound], *, warmup: int = 1) -> list[SizesViolation]:
    """Every ``sizes()`` entry that grows faster than the live set; empty when none does.

    An entry *grows* when, over the rounds after ``warmup``, it never shrinks and ends higher
    than it started; it is a violation unless the live set grew at least as much in proportion
    (``last/first`` entries per live object does not rise). Entries missing from a round are
    left out of the comparison.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got warmup={warmup}")
    measured = list(rounds[warmup:])
    if len(measured) < 2:
        return []
    first, last = measured[0], measured[-1]
    violations: list[SizesViolation] = []
    for entry in sorted(first.sizes):
        if not all(entry in r.sizes for r in measured):
            continue
        values = [int(r.sizes[entry]) for r in measured]
        if not _grows(values):
            continue
        # More entries per live object than at the start (cross-multiplied: live may be 0).
        if values[-1] * first.live > values[0] * last.live or last.live <= first.live:
            violations.append(SizesViolation(entry, first, last))
    return violations
