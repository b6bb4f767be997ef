"""Oracles: pure checks over what a run recorded. They never drive the run."""

from kubesim.checks.memory import (
    MemorySample,
    MemorySampler,
    MemoryViolation,
    check_memory_bounded,
    growth_per_round,
)

__all__ = [
    "MemorySample",
    "MemorySampler",
    "MemoryViolation",
    "check_memory_bounded",
    "growth_per_round",
]
