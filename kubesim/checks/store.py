"""Every store property, in one table, and :func:`judge`, which runs those a store's hooks allow.

Each oracle is a pure function of a :class:`~kubesim.checks.recording.Recording` that returns a
:class:`~kubesim.checks.violation.Violation` or None, and declares the store hooks it needs. An
oracle whose hooks are missing is *skipped visibly*: the verdict lists it with the hook it
wanted, so a green run never hides what was not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from kubesim.checks import bounded, effects, progress, state
from kubesim.checks.recording import Recording
from kubesim.checks.violation import Violation


@dataclass(frozen=True)
class Oracle:
    name: str
    check: Callable[[Recording], Violation | None]
    needs: tuple[str, ...]
    summary: str


def _failure(recording: Recording) -> Violation | None:
    failure = recording.failure
    if failure is None:
        return None
    cause = failure.__cause__
    if cause is not None and type(cause).__name__ == "HotRequestLoop":
        return Violation("progress", str(cause))
    text = str(failure).rstrip()
    head, _, rest = text.partition("\n")
    kind = type(failure).__name__
    name = {
        "StoreCrashed": "crash",
        "Deadlock": "deadlock",
        "Livelock": "livelock",
        "StoreBlockedOutsideSimulation": "blocked",
        "StoreStoppedWatching": "stopped-watching",
    }.get(kind, "crash")
    details = tuple(line for line in rest.splitlines() if line.strip())[-12:]
    return Violation(name, f"{kind}: {head}", details)


def _snapshot_reads(recording: Recording) -> Violation | None:
    from kubesim.checks.races import check_snapshot_reads

    if recording.versions is None or not recording.snapshot_reads:
        return None
    found = check_snapshot_reads(
        recording.snapshot_reads, recording.versions, scope=recording.scope
    )
    if not found:
        return None
    return Violation(
        "snapshot-reads",
        f"{len(found)} of {len(recording.snapshot_reads)} read(s) were not the server's state "
        "at one resourceVersion (torn across a change or a relist)",
        tuple(str(v) for v in found[:5]),
    )


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


def _clean_stop(recording: Recording) -> Violation | None:
    if not recording.stopped or not recording.still_running:
        return None
    return Violation(
        "clean-stop",
        f"{len(recording.still_running)} of the store's thread(s) still run after its stop() "
        "returned: a stop must end every thread the store started",
        tuple(recording.still_running[:10]),
    )


ORACLES: tuple[Oracle, ...] = (
    Oracle("failure", _failure, (), "no thread raised, deadlocked, spun or blocked outside"),
    Oracle("bounded", bounded.check_bounded, (), "structures and retained bytes stay flat"),
    Oracle("converge", state.check_converged, state.NEEDS, "the view ends equal to the server"),
    Oracle("monotone", state.check_monotone, state.NEEDS, "no version goes back, no resurrection"),
    Oracle("effects-once", effects.check_effects_once, effects.NEEDS, "no duplicate side effect"),
    Oracle("progress", progress.check_progress, progress.NEEDS, "no hot request loop"),
    Oracle("snapshot-reads", _snapshot_reads, ("read",), "each read is one server state"),
    Oracle("isolation", _isolation, ("read",), "handed-out objects never change while shared"),
    Oracle("clean-stop", _clean_stop, ("stop",), "stop() leaves no store thread running"),
)
"""Every oracle, in the order :func:`judge` runs them: its name, check, needed hooks, summary."""


@dataclass(frozen=True)
class Verdict:
    """What :func:`judge` found: the violations, and which oracles ran or were skipped (why)."""

    violations: tuple[Violation, ...]
    ran: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (oracle, why)

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
    return Verdict(tuple(violations), tuple(ran), tuple(skipped))


def checked_oracles(names: Collection[str]) -> tuple[str, ...]:
    """``names`` in table order; a ValueError names any that is not an oracle."""
    if isinstance(names, str):
        raise TypeError(f"oracles must be a collection of oracle names, got oracles={names!r}")
    known = [oracle.name for oracle in ORACLES]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"oracles must be names from {known}, got unknown {unknown!r}")
    return tuple(name for name in known if name in names)
