"""docs/reference/faults-and-oracles.md lists what the code knows, so it cannot go stale.

Its tables are read back: one row per step kind with the step's class and fault ids as
``kubesim.scenario.steps.STEP_KINDS`` has them, one definition per fault id the table uses, and
one row per oracle of ``kubesim.checks.store.ORACLES`` with the hooks it needs.
"""

from __future__ import annotations

import re
from pathlib import Path

from kubesim.checks.store import ORACLES
from kubesim.scenario.steps import STEP_KINDS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "faults-and-oracles.md"


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(?P<body>.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {title}' in {PAGE.name}"
    return match["body"]


def _rows(title: str) -> list[list[str]]:
    """The table rows of a section (header and rule left out), cells stripped of backticks."""
    rows = []
    for line in _section(title).splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        rows.append(cells)
    return rows[1:]  # the header


def test_every_step_kind_is_listed_with_its_class_and_fault_ids() -> None:
    listed = {cells[0]: cells for cells in _rows("Faults")}
    assert list(listed) == [row.kind for row in STEP_KINDS], "one row per kind, in table order"
    for row in STEP_KINDS:
        _, cls, ids, wire = listed[row.kind]
        assert cls == row.step.__name__, row.kind
        assert ids.split() == (row.fault.split() or ["-"]), row.kind
        assert wire, row.kind


def test_every_fault_id_is_defined() -> None:
    defined = [cells[0] for cells in _rows("Fault ids")]
    used = {fault for row in STEP_KINDS for fault in row.fault.split()}
    assert set(defined) == used
    assert len(defined) == len(set(defined))


def test_every_oracle_is_listed_with_the_hooks_it_needs() -> None:
    listed = {cells[0]: cells for cells in _rows("Oracles")}
    assert list(listed) == [oracle.name for oracle in ORACLES], "one row per oracle, in order"
    for oracle in ORACLES:
        needs = listed[oracle.name][1]
        expected = [f"{hook}()" for hook in oracle.needs] or ["-"]
        assert [n.strip("`") for n in needs.split(", ")] == expected, oracle.name


def test_the_reader_sees_a_change_in_the_code() -> None:
    # The parser itself: a kind or an oracle the page lacks is noticed.
    kinds = {cells[0] for cells in _rows("Faults")}
    assert "delete-in-gap" in kinds
    assert len(_rows("Oracles")) == len(ORACLES) >= 9
