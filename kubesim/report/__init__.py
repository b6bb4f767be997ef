"""Campaign reports: a check's verdict, its failure and what it covered, for people to look at.

:func:`~kubesim.report.data.campaign_data` gathers the data (also what ``kubesim check --json``
prints); :func:`~kubesim.report.html.render` turns it into one self-contained HTML page;
:func:`write_report` does both (``kubesim check --report report.html``,
``pytest --kubesim-report DIR``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_report(
    path: str | Path,
    report: Any,
    *,
    seconds: float,
    seed: int | str,
    factory: Any = None,
    failure: dict[str, Any] | None = None,
) -> Path:
    """Write the HTML page of ``report`` (a :class:`~kubesim.testing.check.CheckReport`) to
    ``path`` and return it. A failure's timeline comes from running its shrunk example once
    more with ``factory``, unless ``failure`` (from :func:`~kubesim.report.data.failure_data`)
    is given already."""
    from kubesim.report.data import campaign_data
    from kubesim.report.html import render

    data = campaign_data(
        report, seconds=seconds, seed=seed, factory=None if failure is not None else factory
    )
    if failure is not None:
        data["failure"] = failure
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(data), encoding="utf-8")
    return target
