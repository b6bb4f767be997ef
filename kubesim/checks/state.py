"""Oracles over the store's view: convergence, and versions that only move forward.

- :func:`check_converged` (P-converge): after the run quiesced and the store re-synced (the
  runner ends every scenario with faults cleared and one forced relist), the view holds exactly
  the objects the server has, at their current versions: no phantom (an object the server no
  longer has: a missed delete), no missing object, no stale version. It holds there and at
  every tail round after it.
- :func:`check_monotone` (P-monotone): across quiescent points, the version the view holds for
  an object never goes back, and an object the view already let go of after the server deleted
  it never comes back (resurrection; what a relist served by a lagging cache causes).

Both need the ``view()`` hook.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesim.checks.recording import Observed, Recording
from kubesim.checks.violation import Violation

NEEDS = ("view",)


def _sample(keys: list[str], limit: int = 5) -> str:
    shown = ", ".join(sorted(keys)[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def compare(view: Mapping[str, Observed], server: Mapping[str, Observed]) -> list[str]:
    """How ``view`` differs from ``server``, one line per kind of difference."""
    phantoms = [k for k in view if k not in server]
    missing = [k for k in server if k not in view]
    stale = [
        k
        for k, seen in view.items()
        if k in server
        and seen.resource_version is not None
        and server[k].resource_version is not None
        and seen.resource_version != server[k].resource_version
    ]
    replaced = [
        k
        for k, seen in view.items()
        if k in server and seen.uid is not None and server[k].uid not in (None, seen.uid)
    ]
    lines = []
    if phantoms:
        lines.append(
            f"{len(phantoms)} phantom(s) the server no longer has (missed deletes): "
            f"{_sample(phantoms)}"
        )
    if missing:
        lines.append(f"{len(missing)} object(s) the view lacks: {_sample(missing)}")
    if replaced:
        lines.append(
            f"{len(replaced)} object(s) held with the uid of a deleted one: {_sample(replaced)}"
        )
    if stale:
        first = sorted(stale)[0]
        lines.append(
            f"{len(stale)} stale version(s), e.g. {first} at resourceVersion "
            f"{view[first].resource_version} while the server has {server[first].resource_version}"
        )
    return lines


def check_converged(recording: Recording) -> Violation | None:
    """Judge the quiesce round (faults cleared, one forced relist done) and every round after
    it, and the last round in any case: each is a quiescent point where a correct store holds
    what the server has. Judging only the end would miss a relist that loses objects the tail
    rounds then happen to rewrite (every tail round touches every live object).
    """
    if not recording.rounds:
        return None
    judged = [r for r in recording.rounds if r.phase in ("quiesce", "tail")]
    if recording.rounds[-1] not in judged:
        judged.append(recording.rounds[-1])
    for round_ in judged:
        if round_.view is None:
            continue
        differences = compare(round_.view, round_.server)
        if not differences:
            continue
        where = (
            () if round_ is recording.rounds[-1] else (f"at round {round_.index}: {round_.step}",)
        )
        return Violation(
            "converge",
            f"after quiescence and a relist the store's view differs from the server "
            f"({len(round_.view)} held, {len(round_.server)} on the server)",
            (*where, *differences),
        )
    return None


def _replica_cause(served: list[int], held: int) -> str:
    """``: a lagging replica answered ...`` when one answered the store at a resourceVersion
    older than what it held (its list or watch took the store back), else ""."""
    older = sorted({rv for rv in served if rv < held})
    if not older:
        return ""
    at = ", ".join(map(str, older))
    return (
        f": a lagging API server replica answered the store's list or watch at resourceVersion "
        f"{at} in between, behind the {held} it held (client-go's reflector relists with the "
        "resourceVersion it last saw, which no server answers with older state)"
    )


def check_monotone(recording: Recording) -> Violation | None:
    latest: dict[str, Observed] = {}
    # uid -> (key, round): objects the view let go of while the server no longer had them.
    dropped: dict[str, tuple[str, int]] = {}
    problems: list[str] = []
    # What a lagging replica answered at since the last judged round: the cause to name.
    replica: list[int] = []
    for round_ in recording.rounds:
        replica.extend(round_.replica_served)
        if round_.view is None or not round_.synced:
            # A store restarted since the last round that shows nothing yet is syncing: what it
            # shows next is judged against what the store showed before, not against nothing.
            continue
        for key, seen in round_.view.items():
            before = latest.get(key)
            if (
                before is not None
                and seen.uid is not None
                and seen.uid == before.uid
                and seen.resource_version is not None
                and before.resource_version is not None
                and seen.resource_version < before.resource_version
            ):
                problems.append(
                    f"{key} went back from resourceVersion {before.resource_version} to "
                    f"{seen.resource_version} at round {round_.index} ({round_.step})"
                    + _replica_cause(replica, before.resource_version)
                )
            if seen.uid is not None and seen.uid in dropped:
                _, gone_round = dropped.pop(seen.uid)
                problems.append(
                    f"{key} (uid {seen.uid}) came back at round {round_.index} ({round_.step}) "
                    f"after the server deleted it and the view dropped it at round {gone_round}"
                )
        server_uids = {o.uid for o in round_.server.values() if o.uid}
        view_uids = {o.uid for o in round_.view.values() if o.uid}
        for key, before in latest.items():
            if (
                key not in round_.view
                and before.uid is not None
                and before.uid not in server_uids
                and before.uid not in view_uids
            ):
                dropped[before.uid] = (key, round_.index)
        latest = dict(round_.view)
        replica.clear()
    if not problems:
        return None
    return Violation(
        "monotone",
        f"the view moved backwards {len(problems)} time(s)",
        tuple(problems[:10]),
    )
