"""Hypothesis strategies that draw scenarios: the steps, with swarm testing over step kinds.

Swarm testing (Groce et al., ISSTA 2012; Hypothesis' own stateful tests do the same): each
example first draws *which* step kinds are enabled, then draws steps only from those. So every
fault is absent from some examples and dense in others, which finds bugs that need one fault
many times (a leak per restart) as well as bugs that another fault would mask.

Every strategy shrinks towards the simplest case: fewer kinds, fewer steps, smaller counts,
position 0, no error variant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hypothesis import strategies as st

from kubesim.scenario.steps import (
    KINDS,
    STEP_KINDS,
    AdvanceTime,
    ChurnPods,
    CompactHistory,
    CrashAndRestart,
    CreatePods,
    DeletePods,
    DeleteWhileDisconnected,
    DropWatches,
    ExpireWatches,
    FailRequests,
    PatchLabels,
    ReadConcurrently,
    ResumeWatchCache,
    ReusePodIP,
    SendBookmarks,
    SlowConsumerBurst,
    StallWatchCache,
    Step,
    UpdatePodStatus,
)

_COUNTS = st.integers(1, 8)
_INDEXES = st.integers(0, 63)

# One strategy per step kind; the first value of each argument is its simplest.
STEP_STRATEGIES: dict[str, st.SearchStrategy[Step]] = {
    "create": st.builds(CreatePods, count=_COUNTS),
    "delete": st.builds(DeletePods, count=_COUNTS, index=_INDEXES),
    "churn": st.builds(ChurnPods, count=_COUNTS),
    "labels": st.builds(
        PatchLabels,
        count=st.integers(1, 40),
        value=st.sampled_from(["v2", "v3"]),
        unique=st.booleans(),
    ),
    "status": st.builds(
        UpdatePodStatus, index=_INDEXES, phase=st.sampled_from(["Failed", "Succeeded"])
    ),
    "ip-reuse": st.builds(ReusePodIP, index=_INDEXES),
    "expire": st.builds(ExpireWatches, with_error=st.booleans()),
    "drop": st.just(DropWatches()),
    "delete-in-gap": st.builds(
        DeleteWhileDisconnected, count=_COUNTS, index=_INDEXES, compacted=st.booleans()
    ),
    "compact": st.just(CompactHistory()),
    "stall": st.just(StallWatchCache()),
    "resume": st.just(ResumeWatchCache()),
    "http-error": st.builds(
        FailRequests, count=st.integers(1, 3), code=st.sampled_from([500, 429, 403, 503, 504])
    ),
    "bookmark": st.just(SendBookmarks()),
    "slow-consumer": st.builds(
        SlowConsumerBurst, events=st.integers(2, 40), buffer=st.integers(1, 10)
    ),
    "advance": st.builds(AdvanceTime, seconds=st.sampled_from([1, 60, 300, 1900, 3600])),
    "read": st.just(ReadConcurrently()),
    "crash": st.just(CrashAndRestart()),
}
assert set(STEP_STRATEGIES) == set(KINDS), "every step kind needs a strategy"

ALL_KINDS: tuple[str, ...] = tuple(row.kind for row in STEP_KINDS)
"""Every step kind, workload and faults, in table order (``kubesim check --list-kinds``)."""
FAULT_KINDS: tuple[str, ...] = tuple(row.kind for row in STEP_KINDS if row.fault)
"""The step kinds that are faults (those ``kubesim check --faults`` accepts)."""


def _checked_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    if isinstance(kinds, str):
        raise TypeError(f"kinds must be a collection of step kinds, got kinds={kinds!r}")
    chosen = tuple(kinds)
    unknown = [k for k in chosen if k not in KINDS]
    if unknown or not chosen:
        raise ValueError(
            f"kinds must be a non-empty collection of {list(ALL_KINDS)}, got kinds={list(chosen)!r}"
        )
    # Table order, whatever the caller's order: the draw must not depend on it.
    return tuple(k for k in ALL_KINDS if k in chosen)


def steps(kind: str) -> st.SearchStrategy[Step]:
    """Steps of one kind (``"expire"``, ``"labels"``, ... see :data:`ALL_KINDS`)."""
    if kind not in STEP_STRATEGIES:
        raise ValueError(f"kind must be one of {list(ALL_KINDS)}, got kind={kind!r}")
    return STEP_STRATEGIES[kind]


def scenarios(
    *,
    kinds: Sequence[str] = ALL_KINDS,
    min_steps: int = 0,
    max_steps: int = 12,
    swarm: bool = True,
) -> st.SearchStrategy[list[Step]]:
    """Lists of steps. With ``swarm``, each example enables its own subset of ``kinds``.

    Arguments are checked here, when the strategy is built, not when it is first drawn from.
    """
    chosen = _checked_kinds(kinds)
    if not 0 <= min_steps <= max_steps:
        raise ValueError(
            f"need 0 <= min_steps <= max_steps, got min_steps={min_steps}, max_steps={max_steps}"
        )

    @st.composite
    def draw_scenario(draw: st.DrawFn) -> list[Step]:
        enabled = [k for k in chosen if draw(st.booleans())] if swarm else list(chosen)
        if not enabled and min_steps:
            enabled = [chosen[0]]
        if not enabled:
            return []
        return draw(
            st.lists(
                st.one_of([STEP_STRATEGIES[k] for k in enabled]),
                min_size=min_steps,
                max_size=max_steps,
            )
        )

    return draw_scenario()
