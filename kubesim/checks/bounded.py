"""Oracle: the store stays bounded while the live set does (P-bound), over a scenario's tail.

Every scenario ends with *tail rounds* (:mod:`kubesim.scenario.run`): the live set stays the
same while history grows (each object rewritten, every watch ended and re-opened). A bounded
store ends each tail round holding what it held after the previous one. Two measures, both
exact, both required to stay flat:

- what the store says about itself (``sizes()``): any structure whose length changes across
  the tail rounds while the server's live set does not is a violation, whatever its bytes: a
  list of endpoints that gains two entries per pod per restart is a leak at any scale;
- retained bytes (what is reachable from the store and nowhere else): growth per round beyond
  ``tolerance`` bytes is a violation, with the numbers.
"""

from __future__ import annotations

from kubesim.checks.recording import Recording, Round
from kubesim.checks.violation import Violation

NEEDS: tuple[str, ...] = ()  # sizes() sharpens it; retained bytes need no hook
DEFAULT_TOLERANCE_BYTES = 512


def tail(recording: Recording) -> list[Round]:
    """The quiesce round (the baseline) and the tail rounds after it."""
    return [r for r in recording.rounds if r.phase in ("quiesce", "tail")]


def check_bounded(
    recording: Recording, *, tolerance_bytes: float = DEFAULT_TOLERANCE_BYTES
) -> Violation | None:
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
        growth = (measured[-1] - measured[1]) / max(1, len(measured) - 2)
        if growth > tolerance_bytes:
            shown = " -> ".join(f"{b:,}" for b in measured)
            details.append(
                f"retained bytes grew {growth:,.0f} per round (tolerance {tolerance_bytes:,.0f}) "
                f"with {live} live objects: {shown}"
            )
    if not details:
        return None
    return Violation(
        "bounded",
        f"the store grows while the live set stays at {live} objects",
        tuple(details),
    )
