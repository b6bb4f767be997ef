"""Oracle: the store stays bounded while the live set does (P-bound), over a scenario's tail.

Every scenario ends with *tail rounds* (:mod:`kubesim.scenario.run`): the live set stays the
same while history grows (each object rewritten, every watch ended and re-opened). A bounded
store ends each tail round holding what it held after the previous one. Two measures, both
exact, both required to stay flat:

- what the store says about itself (``sizes()``): any structure whose length changes across
  the tail rounds while the server's live set does not is a violation, whatever its bytes: a
  list of endpoints that gains two entries per pod per restart is a leak at any scale;
- retained bytes (what is reachable from the store, wherever it was allocated): growth per
  round (the median round's, so one table resize is not a trend) beyond the tolerance is a
  violation, with the numbers and the containers that grew.

A structure that keeps the keys of objects long gone (a dedup set that never forgets deleted
objects, an index with entries for values no object has) but does not grow during the tail is
the history oracle's to find (:mod:`kubesim.checks.history`): it knows which entries refer to
the past. A ratio of entries to live objects cannot tell those from a structure of distinct
label values after a storm of unique ones, which is why this oracle no longer judges one.
"""

from __future__ import annotations

import itertools

from kubesim.checks.recording import Recording, Round
from kubesim.checks.violation import Violation

NEEDS: tuple[str, ...] = ()  # sizes() sharpens it; retained bytes need no hook


def tail(recording: Recording) -> list[Round]:
    """The quiesce round (the baseline) and the tail rounds after it."""
    return [r for r in recording.rounds if r.phase in ("quiesce", "tail")]


def window(recording: Recording) -> list[Round]:
    """The tail rounds growth is judged over.

    Growth must be sustained: a leak grows with every round of history, a store that settles
    (a pool that opens one more connection after the first relist, a dict that resizes once)
    steps up once and stays. When the first tail rounds show growth, the runner plays as many
    again (:meth:`kubesim.scenario.run.ScenarioRun.quiesce`), and only those, from the last
    round of the first tail on, are judged: growth that stopped is not a leak.
    """
    tails = tail(recording)[1:]  # the quiesce round re-synced the store: the baseline is after
    first = recording.tail_rounds or len(tails)
    return tails[first - 1 :] if len(tails) > first else tails


def check_bounded(
    recording: Recording, *, tolerance_bytes: float | None = None
) -> Violation | None:
    """``tolerance_bytes`` per tail round; by default the memory oracle's (256 B or 0.05% of
    what the store retains, measured on correct stores: docs/explanation/memory-oracle.md)."""
    rounds = tail(recording)
    judged = window(recording)
    if len(rounds) < 3 or len(judged) < 2:
        return None
    lives = {len(r.server) for r in rounds}
    live = len(rounds[-1].server)
    extended = len(judged) < len(rounds) - 1
    over = f"the last {len(judged) - 1} tail rounds" if extended else "the tail rounds"
    details: list[str] = []
    if len(lives) == 1:
        for name in sorted(set().union(*(r.sizes for r in judged))):
            values = [r.sizes.get(name) for r in judged]
            if len(set(values)) > 1:
                shown = " -> ".join("-" if v is None else f"{v:,}" for v in values)
                details.append(
                    f"sizes()[{name!r}] changed over {over} while the live set stayed "
                    f"at {live} objects: {shown}"
                )
    growths = per_round_growth(judged)
    if growths:
        if tolerance_bytes is None:
            from kubesim.checks.memory import default_tolerance

            tolerance_bytes = default_tolerance(
                next(b for r in judged if (b := r.retained_bytes) is not None)
            )
        # The median round's growth: a leak grows in every round, while a set or dict that
        # resizes its table once (churn leaves it more slots, not more items) grows in one.
        growth = _median(growths)
        if growth > tolerance_bytes:
            # From the quiesce round if it was walked (a report's chart walks every round); a
            # tail round whose walk was not needed (ScenarioRun._walked) shows as "-".
            shown = " -> ".join(
                "-" if (b := r.retained_bytes) is None else f"{b:,}"
                for r in (rounds if rounds[0].retained_bytes is not None else rounds[1:])
            )
            if "-" in shown.split(" -> "):
                shown += " (-: not measured; the median does not need it)"
            details.append(
                f"retained bytes grew {growth:,.0f} per round over {over} (tolerance "
                f"{tolerance_bytes:,.0f}) with {live} live objects: {shown}"
            )
            details.extend(_what_grows(judged[0], judged[-1]))
    if not details:
        return None
    return Violation(
        "bounded",
        f"the store grows while the live set stays at {live} objects",
        tuple(details),
    )


def per_round_growth(judged: list[Round]) -> list[float]:
    """Growth of the retained bytes per round over ``judged``, one figure a round.

    A round whose walk was left out (its figure not needed for the median) shares the growth
    between the measured rounds around it evenly: measured 100 and 300 with one round between
    give 100 and 100. Empty when fewer than two rounds, or not the first and last, were
    measured (the memory walk was off)."""
    measured = [(index, b) for index, r in enumerate(judged) if (b := r.retained_bytes) is not None]
    if len(measured) < 2 or measured[0][0] != 0 or measured[-1][0] != len(judged) - 1:
        return []
    growths: list[float] = []
    for (i, a), (j, b) in itertools.pairwise(measured):
        growths.extend([(b - a) / (j - i)] * (j - i))
    return growths


def _median(values: list[float]) -> float:
    # By hand: the statistics module would weigh on every pytest run the plugin loads into.
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2


def _what_grows(first: Round, last: Round) -> list[str]:
    """The containers that grew over the tail, by path from the store (deepest first)."""
    from kubesim.checks.retained import growing_containers

    if first.containers is None or last.containers is None:
        return []
    return [f"grows: {g}" for g in growing_containers(first.containers, last.containers)]
