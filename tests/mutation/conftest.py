"""The mutation check's session fixture (its score is printed by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .runner import MutationCheck, default_jobs, default_timeout


@pytest.fixture(scope="session")
def mutation_check(request: pytest.FixtureRequest) -> Iterator[MutationCheck]:
    """Starts the runs of every *selected* mutant at once; each test then waits for its own.

    Under pytest-xdist the README's ``--dist loadfile`` gives all of test_mutants.py to one
    worker, so this runs once; with ``--dist load`` every worker would start every run."""
    selected = [
        item.callspec.params["mutant"]
        for item in request.session.items
        if item.get_closest_marker("mutation") is not None
        and "mutant" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    check = MutationCheck(selected, jobs=default_jobs(), timeout=default_timeout())
    yield check
    check.close()
