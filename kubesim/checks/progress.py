"""Oracle: the store makes progress without hammering the server (P-progress).

A store that reconnects in a tight loop (no backoff after an error, a watch that it reopens
without a resourceVersion as fast as the server ends it) costs the real API server dearly and
is one bad day away from an outage. Between two quiescent points a store may make a burst of
requests to recover from a fault (:data:`BURST`), and then, while an error persists, retry at
up to about once a second, a list and a watch each time (:data:`PER_MINUTE`): client-go's
reflector backs off from 0.8 s, doubling to 30 s, well inside that. More is a hot loop. While an
outage lasts (the ``outage`` step), the store must back off: at most :data:`OUTAGE_BURST`
requests and one a second on average (:data:`OUTAGE_PER_SECOND`); a retry every tenth of a
second, or one that ignores Retry-After for a shorter sleep, is not backing off. Each budget is
per list-and-watch loop: a store with an informer per resource, or a reflector per namespace,
gets one per scope it watched. A loop that
never waits at all is stopped by the runner's hot-loop guard; hangs and livelocks are reported
by the scheduler itself.
"""

from __future__ import annotations

from kubesim.checks.recording import Recording
from kubesim.checks.violation import Violation

NEEDS: tuple[str, ...] = ()
BURST = 30
PER_MINUTE = 120.0
# During a lasting outage (the ``outage`` step: a 429 storm, a 5xx outage), a store must back
# off: client-go's reflector waits 0.8 s, then twice as long each time up to 30 s, about 7
# tries in the first minute. A store may retry at most once a second on average, after a
# burst: a fixed one-second retry passes, a retry every tenth of a second (or one that
# ignores Retry-After for a shorter sleep) does not.
OUTAGE_BURST = 10
OUTAGE_PER_SECOND = 1.0


def allowed_requests(virtual_seconds: float, loops: int = 1) -> float:
    return loops * (BURST + PER_MINUTE * virtual_seconds / 60.0)


def watch_loops(recording: Recording) -> int:
    """How many list-and-watch loops the store runs: one per scope it watched (a reflector per
    namespace, an informer per resource), each allowed its own retries."""
    return sum(len(judged.scopes) or 1 for judged in recording.read_scopes) or 1


def check_progress(recording: Recording) -> Violation | None:
    worst: tuple[float, str] | None = None
    loops = watch_loops(recording)
    per = f" for {loops} watch loops" if loops > 1 else ""
    for before, after in zip(recording.rounds, recording.rounds[1:], strict=False):
        made = after.requests - before.requests
        elapsed = after.time - before.time
        if after.index in recording.outage_rounds:
            # What the store retried into the outage: the requests it refused (the writes a
            # store makes once it is over, its handlers' patches, are not retries).
            retried = after.refused - before.refused
            limit = loops * (OUTAGE_BURST + OUTAGE_PER_SECOND * elapsed)
            if retried > limit and (worst is None or retried / limit > worst[0]):
                worst = (
                    retried / limit,
                    f"{retried} requests refused in a {elapsed:g} s outage at round {after.index} "
                    f"({after.step}); with backoff at most {limit:.0f}{per} (a retry a second on "
                    "average per loop; client-go backs off from 0.8 s, doubling to 30 s)",
                )
            continue
        limit = allowed_requests(elapsed, loops)
        if made > limit and (worst is None or made / limit > worst[0]):
            worst = (
                made / limit,
                f"{made} requests in {elapsed:g} virtual seconds at round {after.index} "
                f"({after.step}); at most {limit:.0f} expected{per}",
            )
    if worst is None:
        return None
    return Violation("progress", f"a hot request loop: {worst[1]}")
