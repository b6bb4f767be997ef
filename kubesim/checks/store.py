"""Every store property, in one table, and :func:`judge`, which runs those a store's hooks allow.

Each oracle is a pure function of a :class:`~kubesim.checks.recording.Recording` that returns a
:class:`~kubesim.checks.violation.Violation` or None, and declares the store hooks it needs. An
oracle whose hooks are missing is *skipped visibly*: the verdict lists it with the hook it
wanted, so a green run never hides what was not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

from kubesim.checks import bounded, effects, progress, state
from kubesim.checks.recording import ReadScope, Recording
from kubesim.checks.violation import Violation


@dataclass(frozen=True)
class Oracle:
    """One property: its check, the hooks it needs, and what it takes to exercise it.

    ``exercised(recording)`` is None when the run gave the check something to judge, else why
    not (``no read() was made``): a check with nothing to judge did not pass, and a campaign
    whose every example left it so reports it as *not exercised*.
    """

    name: str
    check: Callable[[Recording], Violation | None]
    needs: tuple[str, ...]
    summary: str
    exercised: Callable[[Recording], str | None] = lambda recording: None


def breaks(failure: BaseException | None) -> str | None:
    """The store property a run's failure breaks, as its class declares it.

    The contract for the layers that raise them (the scheduler, the simulation, the scenario
    engine), which this layer may not import: a failure class carries ``breaks`` (``"crash"``,
    ``"deadlock"``, ``"progress"``, ...). Anything else a run ends with is a crash."""
    if failure is None:
        return None
    name = getattr(type(failure), "breaks", None)
    return name if isinstance(name, str) else None


def _failure(recording: Recording) -> Violation | None:
    failure = recording.failure
    if failure is None:
        return None
    cause = failure.__cause__
    if breaks(cause) == "progress":  # a hot request loop, raised into the store's thread
        return Violation("progress", str(cause))
    text = str(failure).rstrip()
    head, _, rest = text.partition("\n")
    kind = type(failure).__name__
    return Violation(breaks(failure) or "crash", f"{kind}: {head}", _shown_lines(rest))


# How many lines of a failure's text a violation keeps: a traceback's first and last (the
# store's frames come first, library runs are condensed; the exception comes last).
_SHOWN_LINES = 20


def _shown_lines(text: str) -> tuple[str, ...]:
    lines = [line for line in text.splitlines() if line.strip()]
    # The exception's own text comes again at the traceback's end: from the traceback on.
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if starts:
        lines = lines[starts[0] :]
    if len(lines) <= _SHOWN_LINES:
        return tuple(lines)
    half = _SHOWN_LINES // 2
    return (*lines[:half], f"[... {len(lines) - 2 * half} more lines ...]", *lines[-half:])


def _snapshot_reads(recording: Recording) -> Violation | None:
    # Imported when judged: the pytest plugin loads the oracle table, and races is heavy.
    from kubesim.checks.races import SnapshotRead, check_snapshot_reads

    if recording.versions is None or not recording.snapshot_reads:
        return None
    found = []
    read_scopes = recording.read_scopes or [ReadScope("pods")]
    subset = recording.partial_reads is not None
    for index, judged in enumerate(read_scopes):
        # A store of several resources (pods and their nodes; two informers) is consistent
        # per resource, each at its own resourceVersion: its reads are judged resource by
        # resource. An object the server never had goes with the first (it is flagged there).
        reads = recording.snapshot_reads
        if len(read_scopes) > 1:
            reads = [_part(recording, read, judged.resource, first=index == 0) for read in reads]
        if len(judged.scopes) < 2:
            found.extend(
                check_snapshot_reads(
                    reads,
                    recording.versions,
                    resource=judged.resource,
                    scope=judged.scope,
                    subset=subset,
                )
            )
            continue
        # One watch per scope (a reflector per namespace): each scope is consistent at its
        # own resourceVersion, and no multi-namespace cache promises more than that.
        for namespace, scope in judged.scopes:
            parts = [
                SnapshotRead(
                    read.reader,
                    [o for o in read.objects if scope(_stored(recording, o))],
                    read.step,
                    read.not_before,
                    read.not_after,
                    _listed(read, namespace),
                )
                for read in reads
            ]
            found.extend(
                check_snapshot_reads(
                    parts, recording.versions, resource=judged.resource, scope=scope, subset=subset
                )
            )
    if not found:
        return None
    partial = (
        f"; reads are judged as parts of a state ({recording.partial_reads})"
        if recording.partial_reads
        else ""
    )
    return Violation(
        "snapshot-reads",
        f"{len(found)} of {len(recording.snapshot_reads)} read(s) were not the server's state "
        f"at one resourceVersion (torn across a change or a relist){partial}",
        tuple(str(v) for v in found[:5]),
    )


def _part(recording: Recording, read: Any, resource: str, *, first: bool) -> Any:
    """The objects of ``resource`` in ``read`` (with those the server never had, if ``first``).
    An empty part is a cache of that resource not synced yet, as a store's informers sync one
    by one: not judged as torn (the view's convergence is ``converge``'s to judge)."""
    versions = recording.versions

    def belongs(identity: Any) -> bool:
        owner = versions.resource_of(identity["metadata"]["uid"])
        return owner == resource or (owner is None and first)

    objects = [o for o in read.objects if belongs(o)]
    return replace(
        read,
        objects=objects,
        listed=read.listed and bool(objects),
        listed_namespaces=read.listed_namespaces if objects else frozenset(),
    )


def _listed(read: Any, namespace: str | None) -> bool:
    """Whether the store had synced this scope's namespace when it read: shown objects of it
    since it started (an empty part of a read before then is a reflector not synced yet, not a
    torn read)."""
    listed = read.listed_namespaces
    if listed is None:
        return bool(read.listed)
    return None in listed or namespace in listed


class _Version:
    """A recorded version as a watch's ``matches`` takes it (``.obj``)."""

    def __init__(self, obj: object) -> None:
        self.obj = obj


def _stored(recording: Recording, identity: Any) -> _Version:
    meta = identity["metadata"]
    return _Version(recording.versions.content(meta["uid"], meta["resourceVersion"]) or identity)


def _isolation(recording: Recording) -> Violation | None:
    found = recording.race_violations
    if not found:
        return None
    kinds = sorted({v.kind for v in found})
    return Violation(
        "isolation",
        f"{len(found)} object(s) handed out by read() changed while shared, or did not match "
        f"what the server emitted ({', '.join(kinds)})",
        tuple(str(v) for v in found[:5]),
    )


def _history(recording: Recording) -> Violation | None:
    # Imported when judged: the pytest plugin reads this table without the walk's machinery.
    from kubesim.checks.history import check_history

    return check_history(recording)


def _clean_stop(recording: Recording) -> Violation | None:
    if not recording.stopped or not recording.still_running:
        return None
    threads = [line for line in recording.still_running if not line.startswith("stop() itself")]
    hung = len(threads) < len(recording.still_running)
    after = "while its stop() never returns" if hung else "after its stop() returned"
    return Violation(
        "clean-stop",
        f"{len(threads)} of the store's thread(s) still run {after}: a stop "
        "must end every thread the store started",
        tuple(recording.still_running[:10]),
    )


def _tail_reached(recording: Recording) -> str | None:
    return None if len(bounded.tail(recording)) >= 3 else "the run ended before its tail rounds"


def _viewed(recording: Recording) -> str | None:
    judged = [r for r in recording.rounds if r.phase in ("quiesce", "tail") and r.view is not None]
    return None if judged else "the run ended before the store re-synced"


def _read(recording: Recording) -> str | None:
    return None if recording.reads else NO_READ


def _snapshots(recording: Recording) -> str | None:
    if not recording.reads:
        return NO_READ
    if not recording.snapshot_reads:
        return "no read() handed out objects with a uid and resourceVersion to judge"
    return None


def _performed(recording: Recording) -> str | None:
    return None if recording.effects else "no effect was performed"


def _expected(recording: Recording) -> str | None:
    return None if recording.expected else "expects() declared no effect for the run's changes"


def _stopped(recording: Recording) -> str | None:
    return None if recording.stopped else "stop() was not called (the run ended early)"


def _compared(recording: Recording) -> str | None:
    if recording.fresh_before is not None and not recording.fresh_before.note:
        return None
    fresh = recording.fresh
    if fresh is None:
        return "no fresh store was compared (the run ended early)"
    return fresh.note or None


# Why isolation and snapshot-reads judged nothing: a campaign names the step it did not draw.
NO_READ = "no read() was made"

ORACLES: tuple[Oracle, ...] = (
    Oracle("failure", _failure, (), "no thread raised, deadlocked, spun or blocked outside"),
    Oracle(
        "bounded",
        bounded.check_bounded,
        (),
        "structures and retained bytes stay flat",
        _tail_reached,
    ),
    Oracle(
        "converge",
        state.check_converged,
        state.NEEDS,
        "the view ends equal to the server",
        _viewed,
    ),
    Oracle(
        "monotone",
        state.check_monotone,
        state.NEEDS,
        "no version goes back, no resurrection",
        _viewed,
    ),
    Oracle(
        "effects-once",
        effects.check_effects_once,
        effects.NEEDS,
        "no duplicate side effect",
        _performed,
    ),
    Oracle(
        "effects-expected",
        effects.check_effects_expected,
        effects.EXPECTS_NEEDS,
        "every effect expects() declares is performed",
        _expected,
    ),
    Oracle("progress", progress.check_progress, progress.NEEDS, "no hot request loop"),
    Oracle(
        "snapshot-reads",
        _snapshot_reads,
        ("read",),
        "each read is one server state",
        _snapshots,
    ),
    Oracle(
        "isolation",
        _isolation,
        ("read",),
        "handed-out objects never change while shared",
        _read,
    ),
    Oracle(
        "clean-stop",
        _clean_stop,
        ("stop",),
        "stop() leaves no store thread running",
        _stopped,
    ),
    Oracle(
        "history",
        _history,
        (),
        "a long-running store holds what a fresh one holds",
        _compared,
    ),
)
"""Every oracle, in the order :func:`judge` runs them: its name, check, needed hooks, summary."""


@dataclass(frozen=True)
class Verdict:
    """What :func:`judge` found: the violations, and which oracles ran or were skipped (why)."""

    violations: tuple[Violation, ...]
    ran: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (oracle, why)
    # Oracles that ran and found nothing to judge in this run (oracle, why): not a pass.
    unexercised: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations


# The oracle that always runs: a run that crashed, hung or spun cannot be judged on anything else.
ALWAYS = "failure"
NOT_SELECTED = "not selected"


def judge(recording: Recording, *, only: Collection[str] | None = None) -> Verdict:
    """Run every oracle the store's hooks allow; ``only`` narrows them to those named (plus
    ``failure``, which always runs); the others are skipped as "not selected"."""
    violations: list[Violation] = []
    ran: list[str] = []
    skipped: list[tuple[str, str]] = []
    unexercised: list[tuple[str, str]] = []
    for oracle in ORACLES:
        if only is not None and oracle.name not in only and oracle.name != ALWAYS:
            skipped.append((oracle.name, NOT_SELECTED))
            continue
        missing = [hook for hook in oracle.needs if hook not in recording.hooks]
        if missing:
            skipped.append((oracle.name, f"needs the store's {', '.join(missing)}() hook"))
            continue
        if recording.failure is not None and oracle.name != ALWAYS:
            skipped.append((oracle.name, "the run ended early"))
            continue
        ran.append(oracle.name)
        found = oracle.check(recording)
        if found is not None:
            violations.append(found)
            continue
        why = oracle.exercised(recording)
        if why is not None:
            unexercised.append((oracle.name, why))
    # A run that ended early is judged by ``failure`` alone, but what ended it may be another
    # oracle's finding (a hot request loop is progress'): that oracle is the one that fired.
    fired = {v.property for v in violations} - set(ran)
    if fired:
        ran = [o.name for o in ORACLES if o.name in ran or o.name in fired]
        skipped = [(name, why) for name, why in skipped if name not in fired]
    return Verdict(tuple(violations), tuple(ran), tuple(skipped), tuple(unexercised))


def checked_oracles(names: Collection[str]) -> tuple[str, ...]:
    """``names`` in table order; a ValueError names any that is not an oracle."""
    if isinstance(names, str):
        raise TypeError(f"oracles must be a collection of oracle names, got oracles={names!r}")
    known = [oracle.name for oracle in ORACLES]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"oracles must be names from {known}, got unknown {unknown!r}")
    return tuple(name for name in known if name in names)
