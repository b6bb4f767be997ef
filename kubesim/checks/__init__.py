"""Oracles: pure checks over what a run recorded. They never drive the run."""

from __future__ import annotations

import typing as _typing

from kubesim._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from kubesim.checks.memory import (
        MemorySample,
        MemorySampler,
        MemoryViolation,
        check_memory_bounded,
        growth_per_round,
    )
    from kubesim.checks.races import (
        IsolationMonitor,
        RaceViolation,
        ServerVersions,
        SnapshotRead,
        check_reads_match_server,
        check_snapshot_consistency,
        check_snapshot_reads,
    )

# Imported on first use (kubesim._lazy): the pytest plugin reads the oracle table in
# kubesim.checks.store without paying for the memory and race machinery.
_EXPORTS = {
    "IsolationMonitor": "kubesim.checks.races",
    "MemorySample": "kubesim.checks.memory",
    "MemorySampler": "kubesim.checks.memory",
    "MemoryViolation": "kubesim.checks.memory",
    "RaceViolation": "kubesim.checks.races",
    "ServerVersions": "kubesim.checks.races",
    "SnapshotRead": "kubesim.checks.races",
    "check_memory_bounded": "kubesim.checks.memory",
    "check_reads_match_server": "kubesim.checks.races",
    "check_snapshot_consistency": "kubesim.checks.races",
    "check_snapshot_reads": "kubesim.checks.races",
    "growth_per_round": "kubesim.checks.memory",
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "IsolationMonitor",
    "MemorySample",
    "MemorySampler",
    "MemoryViolation",
    "RaceViolation",
    "ServerVersions",
    "SnapshotRead",
    "check_memory_bounded",
    "check_reads_match_server",
    "check_snapshot_consistency",
    "check_snapshot_reads",
    "growth_per_round",
]
