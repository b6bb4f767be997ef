"""Every named mutant of kubesim's detectors is killed by the tests listed for it.

One test per mutant (README.md in this folder): the listed tests must pass on an unmutated copy
of ``kubesim/`` and fail on a copy with the mutant applied. The score is printed at the end of
the pytest run ("kubesim mutation score: K/N named mutants killed").
"""

from __future__ import annotations

import pytest

from .loader import Mutant, load_mutants
from .runner import BROKEN, KILLED, MutationCheck, Verdict
from .score import record

MUTANTS = load_mutants()


@pytest.mark.mutation
@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_named_mutant_is_killed(
    mutant: Mutant, mutation_check: MutationCheck, request: pytest.FixtureRequest
) -> None:
    if not mutant.valid:
        detail = "; ".join(mutant.problems)
        record(request.node, mutant, Verdict(BROKEN, f"invalid entry: {detail}", ""))
        pytest.fail(f"BROKEN ENTRY in {mutant.source}: {detail}", pytrace=False)
    verdict = mutation_check.verdict(mutant)
    record(request.node, mutant, verdict)
    if verdict.status != KILLED:
        pytest.fail(verdict.message, pytrace=False)
