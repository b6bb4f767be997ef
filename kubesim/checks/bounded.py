"""Oracle: the store stays bounded while the live set does (P-bound), over a scenario's tail.

Every scenario ends with *tail rounds* (:mod:`kubesim.scenario.run`): the live set stays the
same while history grows (each object rewritten, every watch ended and re-opened). A bounded
store ends each tail round holding what it held after the previous one. Two measures, both
exact, both required to stay flat:

- what the store says about itself (``sizes()``): any structure whose length changes across
  the tail rounds while the server's live set does not is a violation, whatever its bytes: a
  list of endpoints that gains two entries per pod per restart is a leak at any scale;
- retained bytes (what is reachable from the store, wherever it was allocated): growth per
  round beyond the tolerance is a violation, with the numbers and the containers that grew.

And at the end of the run, every ``sizes()`` entry must still be proportional to the live set
(P-bound: ``size <= c x live + k``), with ``c`` the entry's entries per live object after
setup (at least 1) and ``k`` = :data:`SLACK`: a dedup set that never forgets deleted objects,
or an index that keeps the keys of pods long gone, fails this after churn even when the tail is
flat.
"""

from __future__ import annotations

from kubesim.checks.recording import Recording, Round
from kubesim.checks.violation import Violation

NEEDS: tuple[str, ...] = ()  # sizes() sharpens it; retained bytes need no hook
SLACK = 2


def tail(recording: Recording) -> list[Round]:
    """The quiesce round (the baseline) and the tail rounds after it."""
    return [r for r in recording.rounds if r.phase in ("quiesce", "tail")]


def check_bounded(
    recording: Recording, *, tolerance_bytes: float | None = None
) -> Violation | None:
    """``tolerance_bytes`` per tail round; by default the memory oracle's (256 B or 0.05% of
    what the store retains, measured on correct stores: docs/explanation/memory-oracle.md)."""
    rounds = tail(recording)
    if len(rounds) < 3:
        return None
    lives = {len(r.server) for r in rounds}
    live = len(rounds[-1].server)
    details: list[str] = []
    if len(lives) == 1:
        tails = rounds[1:]  # the quiesce round re-synced the store: the baseline is after it
        for name in sorted(set().union(*(r.sizes for r in tails))):
            values = [r.sizes.get(name) for r in tails]
            if len(set(values)) > 1:
                shown = " -> ".join("-" if v is None else f"{v:,}" for v in values)
                details.append(
                    f"sizes()[{name!r}] changed over the tail rounds while the live set stayed "
                    f"at {live} objects: {shown}"
                )
    measured = [r.retained_bytes for r in rounds if r.retained_bytes is not None]
    growth = 0.0
    if len(measured) == len(rounds):
        if tolerance_bytes is None:
            from kubesim.checks.memory import default_tolerance

            tolerance_bytes = default_tolerance(measured[1])
        growth = (measured[-1] - measured[1]) / max(1, len(measured) - 2)
        if growth > tolerance_bytes:
            shown = " -> ".join(f"{b:,}" for b in measured)
            details.append(
                f"retained bytes grew {growth:,.0f} per round (tolerance {tolerance_bytes:,.0f}) "
                f"with {live} live objects: {shown}"
            )
            details.extend(_what_grows(rounds[1], rounds[-1]))
    details.extend(_out_of_proportion(recording))
    if not details:
        return None
    return Violation(
        "bounded",
        f"the store grows while the live set stays at {live} objects",
        tuple(details),
    )


def _out_of_proportion(recording: Recording) -> list[str]:
    setup = next((r for r in recording.rounds if r.phase == "setup"), None)
    final = recording.rounds[-1] if recording.rounds else None
    if setup is None or final is None or final is setup:
        return []
    live_then, live_now = len(setup.server), len(final.server)
    out = []
    for name, value in sorted(final.sizes.items()):
        start = setup.sizes.get(name)
        if start is None or live_then == 0:
            continue
        per_object = max(1.0, start / live_then)
        limit = per_object * live_now + SLACK
        if value > limit:
            out.append(
                f"sizes()[{name!r}] is {value:,} with {live_now} live objects at the end; it had "
                f"{start:,} for {live_then} after setup, so at most {limit:,.0f} was expected"
            )
    return out


def _what_grows(first: Round, last: Round) -> list[str]:
    """The containers that grew over the tail, by path from the store (deepest first)."""
    from kubesim.checks.retained import growing_containers

    if first.containers is None or last.containers is None:
        return []
    return [f"grows: {g}" for g in growing_containers(first.containers, last.containers)]
