"""Oracles over the store's side effects: each happens once (P-once), and none is missed.

A store's ``effects()`` hook returns the side effects it performed, in order, each as a
hashable key that names *which change* caused it: ``(uid, resourceVersion)`` for a handler that
must run once per change, ``(uid, generation)`` for a reconcile per spec change, a uid for a
once-per-object action (a welcome message, an external registration).

- :func:`check_effects_once`: the same key twice is a duplicate side effect: what a store that
  treats every synthetic ADDED after a re-watch as new does (kopf's resumes, flyte,
  dotnet-operator-sdk). When the repeat came with a relist, the report says so: client-go
  delivers every object again on a relist (and on a resync), so a handler keyed per change
  must skip what it has already handled.
- :func:`check_effects_expected`: with an ``expects(event)`` hook, the store declares which
  changes it must react to; every key it expects must be among its effects at least once (a
  Job deleted while the watch was down that the store never cleans up after, a completion
  never reported). The runner asks ``expects`` about the changes no correct store can miss
  (:meth:`kubesim.scenario.run.ScenarioRun.collect_expectations`).

One declaration gives both directions: ``expects`` says what must happen, ``effects-once``
that it happens no more than once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from kubesim.checks.recording import Recording
from kubesim.checks.violation import Violation

NEEDS = ("effects",)
EXPECTS_NEEDS = ("effects", "expects")


@dataclass(frozen=True)
class Expected:
    """An effect key the store had to perform, and the change that called for it."""

    key: Any
    why: str  # "deletion of team-0/web-003 (rv 41)"


def check_effects_once(recording: Recording) -> Violation | None:
    """Each key once per store instance: a store started again after a crash or a stop is a
    new process, whose in-memory record of what it did is gone (kopf runs resume handlers
    again in a new process by design); once per process is what a store can promise. A
    repeat after a refused write is not counted (:func:`_after_a_refused_write`)."""
    instances = recording.effect_instances
    if len(instances) != len(recording.effects):
        instances = [0] * len(recording.effects)
    try:
        counts = Counter(zip(instances, recording.effects, strict=True))
    except TypeError as exc:
        return Violation(
            "effects-once",
            f"effects() must return hashable keys, e.g. (uid, resourceVersion): {exc}",
        )
    repeated = [
        (key, n)
        for (instance, key), n in counts.items()
        if n > 1 and not _after_a_refused_write(recording, instance, key)
    ]
    if not repeated:
        return None
    repeated.sort(key=lambda item: (-item[1], repr(item[0])))
    extra = sum(n - 1 for _, n in repeated)
    return Violation(
        "effects-once",
        f"{len(repeated)} side effect(s) performed more than once ({extra} extra, "
        f"{len(recording.effects)} in all)",
        tuple(f"{key!r} performed {n} times{_cause(recording, key)}" for key, n in repeated[:5]),
    )


def _after_a_refused_write(recording: Recording, instance: int, key: Any) -> bool:
    """Whether a write was refused (an injected error) between the first time this instance
    performed ``key`` and its repeat. A store records what it did on the object itself (kopf's
    progress annotations, a status condition): when that write fails, the next delivery finds
    no record and does the work again. No store can do an outside effect and record it
    atomically; at least once, when a write fails, is what a correct one does."""
    rounds = recording.effect_rounds
    if len(rounds) != len(recording.effects):
        return False
    instances = recording.effect_instances or [0] * len(rounds)
    at = [
        rounds[i]
        for i, performed in enumerate(recording.effects)
        if performed == key and instances[i] == instance
    ]
    if len(at) < 2:
        return False
    first, again = at[0], at[1]
    by_index = {r.index: r for r in recording.rounds}
    before, now = by_index.get(first - 1), by_index.get(again)
    if before is None or now is None:
        return False
    return now.refused_writes > before.refused_writes


def _cause(recording: Recording, key: Any) -> str:
    """Where the first repeat of ``key`` came from: a relist, a re-watch or resync, a restart."""
    rounds = recording.effect_rounds
    if len(rounds) != len(recording.effects):
        return ""
    instances = recording.effect_instances or [0] * len(rounds)
    at: dict[int, list[int]] = {}
    for i, performed in enumerate(recording.effects):
        if performed == key:
            at.setdefault(instances[i], []).append(rounds[i])
    first, again = next(runs for runs in at.values() if len(runs) > 1)[:2]
    by_index = {r.index: r for r in recording.rounds}
    now, before = by_index.get(again), by_index.get(again - 1)
    if now is None or before is None:
        return ""
    step = f"round {again}: {now.step}"
    if first == again:
        return f" (twice in one round, {step})"
    if now.lists > before.lists:
        return (
            f" (again with a relist, {step}: a relist delivers every object again, as "
            "client-go's Replace does; a handler keyed per change must skip what it handled)"
        )
    return (
        f" (again with no new version, {step}: delivered again by a watch that resumed from "
        "an older resourceVersion than the last one handled, by a re-watch's synthetic ADDED, "
        "or by a resync)"
    )


def check_effects_expected(recording: Recording) -> Violation | None:
    expected = recording.expected
    if not expected:
        return None
    try:
        performed = set(recording.effects)
    except TypeError as exc:
        return Violation(
            "effects-expected",
            f"effects() must return hashable keys, e.g. (uid, resourceVersion): {exc}",
        )
    missed = [e for e in expected if e.key not in performed]
    if not missed:
        return None
    return Violation(
        "effects-expected",
        f"{len(missed)} of the {len(expected)} effect(s) the store's expects() declared were "
        "never performed",
        tuple(f"{e.key!r}: for the {e.why}" for e in missed[:8]),
    )
