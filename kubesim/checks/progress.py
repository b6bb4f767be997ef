"""Oracle: the store makes progress without hammering the server (P-progress).

A store that reconnects in a tight loop (no backoff after an error, a watch that it reopens
without a resourceVersion as fast as the server ends it) costs the real API server dearly and
is one bad day away from an outage. Between two quiescent points a store may make a burst of
requests to recover from a fault (:data:`BURST`), and then, while an error persists, retry at
up to about once a second, a list and a watch each time (:data:`PER_MINUTE`): client-go's
reflector backs off from 0.8 s, doubling to 30 s, well inside that. More is a hot loop. A loop
that never waits at all is stopped by the runner's hot-loop guard; hangs and livelocks are
reported by the scheduler itself.
"""

from __future__ import annotations

from kubesim.checks.recording import Recording
from kubesim.checks.violation import Violation

NEEDS: tuple[str, ...] = ()
BURST = 30
PER_MINUTE = 120.0


def allowed_requests(virtual_seconds: float) -> float:
    return BURST + PER_MINUTE * virtual_seconds / 60.0


def check_progress(recording: Recording) -> Violation | None:
    worst: tuple[float, str] | None = None
    for before, after in zip(recording.rounds, recording.rounds[1:], strict=False):
        made = after.requests - before.requests
        elapsed = after.time - before.time
        limit = allowed_requests(elapsed)
        if made > limit and (worst is None or made / limit > worst[0]):
            worst = (
                made / limit,
                f"{made} requests in {elapsed:g} virtual seconds at round {after.index} "
                f"({after.step}); at most {limit:.0f} expected",
            )
    if worst is None:
        return None
    return Violation("progress", f"a hot request loop: {worst[1]}")
