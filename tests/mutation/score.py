"""The verdicts of a pytest run, recorded for the score in its terminal summary.

Each verdict goes into its test's report (``user_properties``, as ``kubesim_mutation_verdict``):
the hook that prints ``kubesim mutation score: K/N named mutants killed`` (tests/conftest.py)
reads it from there, so the score is printed under pytest-xdist too, where the tests run in
worker processes and the summary is written by the controller.
"""

from __future__ import annotations

import pytest

from .loader import Mutant
from .runner import Verdict

MUTATION_VERDICT = "kubesim_mutation_verdict"  # the name tests/conftest.py reads


def record(item: pytest.Item, mutant: Mutant, verdict: Verdict) -> None:
    item.user_properties.append(
        (
            MUTATION_VERDICT,
            {
                "name": mutant.name,
                "status": verdict.status,
                "detail": verdict.detail,
                "why": mutant.why or mutant.source,
            },
        )
    )
