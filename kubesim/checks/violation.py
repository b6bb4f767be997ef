"""The one shape every store property failure takes: which property, and the numbers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """A broken property. ``summary`` is one line with the numbers; ``details`` back it up.

    Messages never carry ``id()`` values or wall-clock times: a violation is part of what a
    run records, and the same run must record the same text.
    """

    property: str
    summary: str
    details: tuple[str, ...] = ()

    def __str__(self) -> str:
        lines = [f"{self.property}: {self.summary}"]
        lines.extend(f"  {line}" for line in self.details)
        return "\n".join(lines)
