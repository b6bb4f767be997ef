"""The verdicts of a pytest run, and the score printed in its terminal summary."""

from __future__ import annotations

import pytest

from .loader import Mutant
from .runner import KILLED, Verdict

# name -> (mutant, verdict), in the order the tests ran.
VERDICTS = pytest.StashKey[dict[str, tuple[Mutant, Verdict]]]()


def record(config: pytest.Config, mutant: Mutant, verdict: Verdict) -> None:
    config.stash.setdefault(VERDICTS, {})[mutant.name] = (mutant, verdict)


def write_score(terminalreporter: pytest.TerminalReporter) -> None:
    """``kubesim mutation score: K/N named mutants killed``, then one line per mutant."""
    verdicts = terminalreporter.config.stash.get(VERDICTS, {})
    if not verdicts:
        return
    killed = sum(verdict.status == KILLED for _, verdict in verdicts.values())
    terminalreporter.section("kubesim mutation check")
    terminalreporter.write_line(
        f"kubesim mutation score: {killed}/{len(verdicts)} named mutants killed"
    )
    width = max(len(name) for name in verdicts)
    for name, (mutant, verdict) in verdicts.items():
        if verdict.status == KILLED:
            terminalreporter.write_line(f"  killed   {name:<{width}}  {verdict.detail}")
        else:
            terminalreporter.write_line(
                f"  {verdict.status.upper():<8} {name:<{width}}  {verdict.detail}"
                f"  [{mutant.why or mutant.source}]",
                red=True,
            )
