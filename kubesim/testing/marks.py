"""The ``kubesim_<oracle>`` markers: one per row of the oracle table, each a pure check.

On a store test (:func:`kubesim.testing.store_test`), ``@pytest.mark.kubesim_converge`` says
two things: the examples are judged by the marked oracles only (plus ``failure``: a run that
crashed or hung cannot be judged on anything else), and each marked oracle *must* run. An oracle
that the store's hooks do not allow (``converge`` without ``view()``) is otherwise skipped
visibly; under its marker the test fails, naming the missing hook. The check is a pure
function of the campaign's report, as pytest-memray's ``limit_memory`` is of its allocations.

This module imports only the oracle table (a few small modules), so pytest can register the
markers in every run without importing the simulation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubesim.checks.store import ORACLES, Oracle

PREFIX = "kubesim_"
# Set on every store test function; the plugin tells store tests from other tests by it.
STORE_TEST_ATTRIBUTE = "_kubesim_store_test"
# Set on the inner test of every fuzz_test; the plugin keys its examples as HypoFuzz does.
FLEET_TEST_ATTRIBUTE = "_kubesim_fleet_test"


def marker_name(oracle: str) -> str:
    """``effects-once`` -> ``kubesim_effects_once``."""
    return PREFIX + oracle.replace("-", "_")


MARKERS: Mapping[str, Oracle] = {marker_name(oracle.name): oracle for oracle in ORACLES}


def marker_help(oracle: Oracle) -> str:
    """The ``pytest --markers`` line for one oracle, from its row of the table."""
    needs = (
        f"; needs the store's {', '.join(h + '()' for h in oracle.needs)}" if oracle.needs else ""
    )
    return (
        f"{marker_name(oracle.name)}: on a kubesim store test, require the {oracle.name} oracle "
        f"({oracle.summary}{needs}) and judge by the marked oracles only."
    )


def required_oracles(marker_names: Iterable[str]) -> tuple[str, ...]:
    """The oracles that markers (by name, any order, repeats allowed) require, in table order."""
    wanted = {MARKERS[name].name for name in marker_names if name in MARKERS}
    return tuple(oracle.name for oracle in ORACLES if oracle.name in wanted)


def missing_oracles(
    required: Iterable[str], *, ran: Iterable[str], skipped: Mapping[str, str]
) -> list[str]:
    """One line per required oracle that did not run, saying why (the hook it wanted).

    ``ran`` and ``skipped`` are what a campaign reports (:class:`~kubesim.testing.CheckReport`).
    """
    done = set(ran)
    lines = []
    for name in required:
        if name in done:
            continue
        why = skipped.get(name, "every run ended early, before it could judge")
        lines.append(
            f"required oracle {name} (@pytest.mark.{marker_name(name)}) did not run: {why}"
        )
    return lines
