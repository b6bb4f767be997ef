"""Oracle: the store's state depends only on the server's, not on how it got there (history).

At the end of every run, once the store has settled on the server's final state, kubesim starts
a *fresh* instance of the store from the same factory against the same server, lets it sync,
and compares the two (:meth:`kubesim.scenario.run.ScenarioRun.compare_with_fresh`): their
structures path by path (:mod:`kubesim.checks.structure`), what ``read()`` hands out, and
``sizes()``. A correct store that has seen the whole history holds what a store that has seen
only the end holds. Whatever the long-running store holds beyond that is state that depends on
history: a leak, a delete a derived table missed, an index entry for a value no object has, an
IP index answering with a pod that is gone. Acto's differential oracle (SOSP'23) judges operators
the same way; it needs no knowledge of what the structures mean. The same comparison is made
once more after the scenario's steps, before the forced relist that ends every run, when no
fault is on and the store's view holds what the server has: a store that rebuilds its derived
state at every relist but lets it pile up between relists (which on a cluster can be days) is
caught there, and reported ``before the final relist:``.

Not every difference is a defect: counters, timestamps and resourceVersion strings differ by
nature, so numbers are never compared. An entry counts only when the server's history explains
it (:mod:`kubesim.checks.provenance`):

- the long-running store holds an entry that refers to the past (a deleted pod, a podIP or a
  label value no live object carries, an older version of a live object);
- a list or set holds an entry more often than the fresh store's (a duplicate: what KubeArmor's
  endpoints did on every re-sent ADDED);
- the long-running store lacks an entry the fresh one holds for a live object (a missed add in
  derived state);
- and, as context for those, the ``sizes()`` entries that differ.

An entry keyed by a live object that only the long-running store holds is *not* reported: a
cache filled on demand by earlier reads holds what a fresh store has not been asked for yet.

A store whose structures legitimately hold history (a ring of recent events, a tombstone cache
with a time-to-live) declares them with the ``history_dependent()`` hook; a ``deque`` with a
``maxlen`` is bounded by construction and never compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim._core.words import counted
from kubesim.checks.provenance import Provenance
from kubesim.checks.recording import Recording
from kubesim.checks.structure import Difference, Snapshot, diff_snapshots
from kubesim.checks.violation import Violation

NEEDS: tuple[str, ...] = ()
MAX_LINES = 8


@dataclass
class FreshComparison:
    """What the run captured to compare the long-running store with a fresh one."""

    old: Snapshot
    fresh: Snapshot
    provenance: Provenance
    old_sizes: Mapping[str, int] = field(default_factory=dict)
    fresh_sizes: Mapping[str, int] = field(default_factory=dict)
    round: int = 0  # the round after which the fresh store was started
    note: str = ""  # why the comparison was limited, if it was
    # The store's queues with items not yet handled then (kubesim.checks.backlog): a worker
    # behind, whose backlog explains entries that trail the fresh store's.
    backlog: tuple[tuple[str, int], ...] = ()


def differences(comparison: FreshComparison) -> list[str]:
    """The differences that matter (see the module docstring), one line each."""
    return [line for _, line in _differences(comparison)]


def _differences(comparison: FreshComparison) -> list[tuple[str, str]]:
    """(structure, line) per difference: the path of the structure it is in, and the line."""
    provenance = comparison.provenance
    found = diff_snapshots(comparison.old, comparison.fresh)
    lines: list[tuple[str, str]] = []

    def add(line: str | None, path: str) -> None:
        if line is not None and (path, line) not in lines:
            lines.append((path, line))

    # In a collection, a stale entry shows as one the long-running store has and one it lacks,
    # both about the same object: report them as one line.
    lacking = [f for f in found if f.missing]
    paired: set[int] = set()
    for item in found:
        if item.missing:
            continue
        twin = None
        if not item.text.startswith("["):
            objects = _objects(item, provenance)
            twin = next(
                (
                    m
                    for m in lacking
                    if id(m) not in paired
                    and m.path == item.path
                    and objects & _objects(m, provenance)
                ),
                None,
            )
        if twin is not None:
            paired.add(id(twin))
            past = provenance.explain(item.old)
            key = sorted(_objects(item, provenance) & _objects(twin, provenance))[0]
            add(
                f"{item.path}: the entry for {key} has {_tokens(item.old - twin.old)} where a "
                f"fresh store's has {_tokens(twin.old - item.old)}"
                + (f" (it refers to {past})" if past else ""),
                item.path,
            )
            continue
        add(_judge(item, provenance), item.path)
    for item in lacking:
        if id(item) not in paired:
            add(_judge(item, provenance), item.path)
    if lines:
        # Context for what was found: sizes() alone is numbers, with no provenance to judge.
        for name in sorted(set(comparison.old_sizes) | set(comparison.fresh_sizes)):
            old = comparison.old_sizes.get(name)
            fresh = comparison.fresh_sizes.get(name)
            if old != fresh:
                lines.append(
                    (
                        "sizes()",
                        f"sizes()[{name!r}] is {_count(old)} while a fresh store's is "
                        f"{_count(fresh)}",
                    )
                )
    return lines


def _tokens(tokens: frozenset[Any]) -> str:
    shown = sorted(f"rv {t[1]}" if isinstance(t, tuple) else repr(t) for t in tokens)
    if not shown:
        return "nothing more"
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def _objects(found: Difference, provenance: Provenance) -> set[str]:
    """The objects an entry is about (not the ones whose label value it happens to share)."""
    return {
        origin.key
        for _, origin in (*provenance.live_of(found.old), *provenance.past_of(found.old))
        if not origin.what.startswith(("label", "annotation"))
    }


def _judge(found: Difference, provenance: Provenance) -> str | None:
    keyed = found.text.startswith("[")
    # store.by_ip['10.1.0.7'] = (...) for a mapping entry; store.handled holds ... otherwise.
    if found.missing:
        live = provenance.live_of(found.old)
        if not live:
            return None
        entry = f"{found.path}{found.text}" if keyed else f"{found.path}: {found.text}"
        return f"{entry} is missing; a fresh store has it (for {live[0][1].key}, live)"
    where = f"{found.path}{found.text}" if keyed else f"{found.path} holds {found.text}"
    past = provenance.explain(found.old)
    if past:
        return f"{where}: refers to {past}; a fresh store: {found.fresh}"
    if found.have and provenance.live_of(found.old):
        return (
            f"{where} {found.have + found.extra} times; a fresh store {found.have} time(s) "
            "(a duplicate)"
        )
    return None


def _count(value: int | None) -> str:
    return "absent" if value is None else f"{value:,}"


def check_history(recording: Recording) -> Violation | None:
    found: list[tuple[str, str]] = []
    for comparison, when in (
        (recording.fresh_before, "before the final relist: "),
        (recording.fresh, ""),
    ):
        if comparison is None or comparison.note:
            continue  # nothing to compare with (a fresh store that never synced is no baseline)
        for path, line in _differences(comparison):
            if (path, when + line) not in found:
                found.append((path, when + line))
    if not found:
        return None
    details = _shown(found)
    for comparison in (recording.fresh_before, recording.fresh):
        if comparison is not None and comparison.backlog:
            waiting = "; ".join(
                f"{path} holds {counted(n, 'item')} not yet handled"
                for path, n in comparison.backlog
            )
            details.insert(
                0,
                f"a backlog when the fresh store was compared: {waiting} (a worker behind its "
                "queue: entries that trail a fresh store's may be waiting there, not lost)",
            )
            break
    return Violation(
        "history",
        f"the store holds {len(found)} thing(s) that a fresh store started on the same server "
        "does not: state that depends on history (a leak, a missed delete in derived state, a "
        "stale entry)",
        tuple(details),
    )


def _shown(found: list[tuple[str, str]]) -> list[str]:
    """About :data:`MAX_LINES` lines, shared out among the structures (at least one each),
    each share followed by how many more that structure holds: one table that kept many
    entries must not hide a second structure's different kind of difference."""
    per_path: dict[str, list[str]] = {}
    for path, line in found:
        per_path.setdefault(path, []).append(line)
    quota = max(1, MAX_LINES // len(per_path))
    shown: list[str] = []
    for path, lines in per_path.items():
        shown.extend(lines[:quota])
        if len(lines) > quota:
            shown.append(f"... and {len(lines) - quota} more in {path}")
    return shown
