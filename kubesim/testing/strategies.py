"""Hypothesis strategies that draw scenarios: the steps, with swarm testing over step kinds.

Swarm testing (Groce et al., ISSTA 2012; Hypothesis' own stateful tests do the same): each
example first draws *which* step kinds are enabled, then draws steps only from those. So every
fault is absent from some examples and dense in others, which finds bugs that need one fault
many times (a leak per restart) as well as bugs that another fault would mask.

An enabled kind is always exercised: the scenario holds at least one step of every kind the
swarm enabled (at a drawn position), among steps drawn from the enabled kinds. The swarm's
choice is the last thing an example draws (see ``draw_scenario``), so that it varies from one
example to the next: within the first tens of examples of any campaign, whatever its seed,
every kind has been drawn (readers, crash and restart, each fault), which
``tests/unit/test_scenario.py`` checks over many seeds. Kinds drawn only inside lists of steps,
under a swarm drawn first, left the last kinds of the table undrawn for 100 examples.

Every strategy shrinks towards the simplest case: fewer kinds, fewer steps, smaller counts,
position 0, no error variant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hypothesis import strategies as st

from kubesim.apiserver.versions import NEWEST, SERVER_VERSIONS
from kubesim.scenario.steps import (
    KINDS,
    LABEL_KEYS,
    STATUS_CHANGES,
    STEP_KINDS,
    AdvanceTime,
    ChangeServerVersion,
    ChurnPods,
    CompactHistory,
    CrashAndRestart,
    CreatePods,
    DeletePods,
    DeleteWhileDisconnected,
    DropWatches,
    ExpireWatches,
    FailRequests,
    LagReplica,
    LastingErrors,
    PatchLabels,
    PatchMetadata,
    ReadConcurrently,
    RefuseConnections,
    ResetConnections,
    ResumeWatchCache,
    ReusePodIP,
    SendBookmarks,
    SilenceWatches,
    SlowConsumerBurst,
    StallWatchCache,
    Step,
    StopStore,
    UpdatePodStatus,
)

# Versions a scenario may switch the server to: every profile but the newest (the default).
OLDER_VERSIONS = [name for name in SERVER_VERSIONS if name != NEWEST]

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
        key=st.sampled_from(LABEL_KEYS),
        remove=st.booleans(),
    ),
    "annotate": st.builds(
        PatchMetadata,
        count=st.integers(1, 40),
        key=st.sampled_from(["example.com/revision", "example.com/owner-team"]),
        remove=st.booleans(),
        owner=st.booleans(),
    ),
    "status": st.builds(
        UpdatePodStatus,
        index=_INDEXES,
        phase=st.sampled_from(["Failed", "Succeeded"]),
        change=st.sampled_from(STATUS_CHANGES),
    ),
    "ip-reuse": st.builds(
        ReusePodIP, index=_INDEXES, delete_old=st.booleans(), racing=st.booleans()
    ),
    "expire": st.builds(ExpireWatches, with_error=st.booleans()),
    "drop": st.just(DropWatches()),
    "delete-in-gap": st.builds(
        DeleteWhileDisconnected,
        count=_COUNTS,
        index=_INDEXES,
        compacted=st.booleans(),
        changed=st.integers(0, 4),
        replaced=st.booleans(),
    ),
    "compact": st.just(CompactHistory()),
    "stall": st.just(StallWatchCache()),
    "resume": st.just(ResumeWatchCache()),
    "lagging-replica": st.builds(
        LagReplica, events=st.sampled_from([5, 1, 20]), spread=st.booleans()
    ),
    "http-error": st.builds(
        FailRequests,
        count=st.integers(1, 3),
        code=st.sampled_from([500, 429, 403, 503, 504]),
        # Lists and watches first (what shrinking tends to), else one of the verbs the store
        # has sent by then (FailRequests.verbs).
        verb=st.sampled_from([-1, 0, 1, 2, 3]),
    ),
    "bookmark": st.just(SendBookmarks()),
    "slow-consumer": st.builds(
        SlowConsumerBurst, events=st.integers(2, 40), buffer=st.integers(1, 10)
    ),
    "advance": st.builds(AdvanceTime, seconds=st.sampled_from([1, 60, 300, 1900, 3600])),
    "outage": st.builds(
        LastingErrors,
        seconds=st.sampled_from([30, 120, 600]),
        code=st.sampled_from([429, 503, 500]),
    ),
    "silence": st.builds(SilenceWatches, seconds=st.sampled_from([120, 30, 900])),
    "server-version": st.builds(ChangeServerVersion, version=st.sampled_from(OLDER_VERSIONS)),
    "read": st.just(ReadConcurrently()),
    "crash": st.just(CrashAndRestart()),
    "stop": st.sampled_from(
        [StopStore(), StopStore(during_list=True), StopStore(during_event=True)]
    ),
    "reset": st.builds(
        ResetConnections, count=st.integers(1, 4), verb=st.sampled_from([-1, 0, 1, 2, 3])
    ),
    "refused": st.builds(RefuseConnections, seconds=st.sampled_from([10, 60, 2])),
}
assert set(STEP_STRATEGIES) == set(KINDS), "every step kind needs a strategy"

ALL_KINDS: tuple[str, ...] = tuple(row.kind for row in STEP_KINDS)
"""Every step kind, workload and faults, in table order (``kubesim check --list-kinds``)."""
FAULT_KINDS: tuple[str, ...] = tuple(row.kind for row in STEP_KINDS if row.fault)
"""The step kinds that are faults (those ``kubesim check --faults`` accepts)."""
DEFAULT_KINDS: tuple[str, ...] = tuple(row.kind for row in STEP_KINDS if row.default)
"""The step kinds drawn when none are named: all but the newest fault kinds, which are drawn
only when asked for (``reset``, ``refused``: see :class:`kubesim.scenario.steps.StepKind`)."""


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
    kinds: Sequence[str] = DEFAULT_KINDS,
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

    # Built once: a strategy looked up per draw was a tenth of drawing a scenario.
    a_place, a_coin = st.integers(0, max_steps), st.booleans()

    @st.composite
    def draw_scenario(draw: st.DrawFn) -> list[Step]:
        # The candidate steps and where each kind's first step goes come first, the swarm's
        # choice of kinds last: Hypothesis varies the end of an example's choices far more than
        # its start (it keeps a prefix and tries new suffixes), and a swarm drawn first stayed
        # the same for runs of ten examples, so a kind could go undrawn for fifty.
        candidates = draw(st.lists(st.sampled_from(chosen).flatmap(steps), max_size=max_steps))
        places = [draw(a_place) for _ in chosen]
        enabled = [k for k in chosen if draw(a_coin)] if swarm else list(chosen)
        if not enabled and min_steps:
            enabled = [chosen[0]]
        while len(enabled) > max_steps:  # more kinds than steps allowed: drop drawn ones
            enabled.pop(draw(st.integers(0, len(enabled) - 1)))
        kept = [step for step in candidates if step.kind in enabled]
        # Every enabled kind at least once, within max_steps in all.
        missing = [k for k in enabled if all(step.kind != k for step in kept)]
        del kept[max(0, max_steps - len(missing)) :]
        for kind in missing:
            place = places[chosen.index(kind)] % (len(kept) + 1)
            kept.insert(place, draw(STEP_STRATEGIES[kind]))
        while len(kept) < min_steps:
            kept.append(draw(st.sampled_from(enabled).flatmap(steps)))
        return kept

    return draw_scenario()
