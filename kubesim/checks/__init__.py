"""Oracles: pure checks over what a run recorded. They never drive the run."""

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
