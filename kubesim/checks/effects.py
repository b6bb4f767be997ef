"""Oracle: side effects happen once (P-once).

A store's ``effects()`` hook returns the side effects it performed, in order, each as a
hashable key that names *which change* caused it: ``(uid, resourceVersion)`` for a handler that
must run once per change, ``(uid, generation)`` for a reconcile per spec change, a uid for a
once-per-object action (a welcome message, an external registration). The same key twice is a
duplicate side effect: what a store that treats every synthetic ADDED after a re-watch as new
does (kopf's resumes, flyte, dotnet-operator-sdk).
"""

from __future__ import annotations

from collections import Counter

from kubesim.checks.recording import Recording
from kubesim.checks.violation import Violation

NEEDS = ("effects",)


def check_effects_once(recording: Recording) -> Violation | None:
    try:
        counts = Counter(recording.effects)
    except TypeError as exc:
        return Violation(
            "effects-once",
            f"effects() must return hashable keys, e.g. (uid, resourceVersion): {exc}",
        )
    repeated = [(key, n) for key, n in counts.items() if n > 1]
    if not repeated:
        return None
    repeated.sort(key=lambda item: (-item[1], repr(item[0])))
    extra = sum(n - 1 for _, n in repeated)
    return Violation(
        "effects-once",
        f"{len(repeated)} side effect(s) performed more than once ({extra} extra, "
        f"{len(recording.effects)} in all)",
        tuple(f"{key!r} performed {n} times" for key, n in repeated[:5]),
    )
