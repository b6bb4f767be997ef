"""What a campaign report shows, as plain data: the same dict feeds the HTML page and ``--json``.

:func:`campaign_data` takes a :class:`~kubesim.testing.check.CheckReport`. For a failure it runs
the shrunk example once more with ``timeline=True`` (the run is a function of its replay token,
so this is the same run) to learn who ran when and at which line each thread stopped; the
memory over rounds comes from the same run's recording.

Contract of the dict (every value JSON-serialisable):

- ``factory``, ``ok``, ``examples``, ``found_at``, ``seconds``, ``seed``;
- ``oracles``: one entry per oracle, in kubesim's order: ``name``, ``summary`` (what it checks),
  ``status`` (``"failed"``, ``"passed"``, ``"not exercised"`` or ``"skipped"``) and ``why``
  (why it was not exercised or skipped, or the violation's summary);
- ``coverage``: ``steps_drawn`` (kind -> count) and ``kinds`` (every kind the campaign could
  draw, drawn or not: its enabled kinds, in table order; a replay's are its example's);
- ``failure`` (only when a property broke): ``violations`` (property, summary, details),
  ``scenario`` (the steps' lines), ``schedule``, ``trace``, ``replay`` (the command),
  ``rounds`` (per quiescent point: index, phase, step, virtual time, retained bytes, objects on
  the server, entries in the view, the store's sizes) and ``timeline`` (``threads`` in order of
  first appearance, ``stops``: steps, time, thread, why, location; ``steps``: round, line,
  scheduling points so far, time, for each step of the scenario).
"""

from __future__ import annotations

from typing import Any

from kubesim.checks.store import ORACLES
from kubesim.scenario.steps import STEP_KINDS


def campaign_data(
    report: Any, *, seconds: float, seed: int | str, factory: Any = None
) -> dict[str, Any]:
    """The report of a ``check_store`` campaign as data (see the module's contract).

    ``factory``: the store factory the campaign ran, to run a failure once more for its
    timeline; without it the failure has no timeline.
    """
    failed = set(report.found.properties) if report.found is not None else set()
    summaries = (
        {v.property: v.summary for v in report.found.verdict.violations} if report.found else {}
    )
    oracles = []
    for oracle in ORACLES:
        if oracle.name in failed:
            status, why = "failed", summaries[oracle.name]
        elif oracle.name in report.ran:
            status, why = "passed", ""
        elif oracle.name in report.not_exercised:
            status, why = "not exercised", report.not_exercised[oracle.name]
        else:
            status, why = "skipped", report.skipped.get(oracle.name, "not run")
        oracles.append(
            {"name": oracle.name, "summary": oracle.summary, "status": status, "why": why}
        )
    data: dict[str, Any] = {
        "factory": report.factory,
        "ok": report.ok,
        "examples": report.examples,
        "found_at": report.found_at,
        "seconds": round(seconds, 3),
        "seed": seed,
        "oracles": oracles,
        "coverage": {
            "steps_drawn": dict(sorted(report.kinds.items())),
            "kinds": [
                row.kind
                for row in STEP_KINDS
                if report.enabled is None or row.kind in report.enabled
            ],
        },
    }
    if report.found is not None:
        data["failure"] = failure_data(report.found, factory=factory)
    return data


def failure_data(found: Any, *, factory: Any = None) -> dict[str, Any]:
    """A shrunk failure: what broke, the scenario, the replay, memory and the timeline."""
    result = found.result
    if factory is not None:
        result = _rerun_with_timeline(found, factory)
    recording = result.recording
    return {
        "violations": [
            {"property": v.property, "summary": v.summary, "details": list(v.details)}
            for v in found.verdict.violations
        ],
        "scenario": list(found.result.lines),
        "steps": [step.to_json() for step in found.result.steps],
        "schedule": list(found.result.schedule),
        "trace": found.result.trace_hash,
        "replay": found.replay.command(),
        # What the store printed and logged in the failing run: its last lines, and how many.
        "log": list(found.log.lines),
        "log_lines": found.log.total,
        "rounds": [
            {
                "index": r.index,
                "phase": r.phase,
                "step": r.step,
                "time": r.time,
                "retained_bytes": r.retained_bytes,
                "server_objects": len(r.server),
                "view_entries": None if r.view is None else len(r.view),
                "sizes": dict(r.sizes),
            }
            for r in recording.rounds
        ],
        "timeline": _timeline(recording),
    }


def _rerun_with_timeline(found: Any, factory: Any) -> Any:
    """The failure once more, with its timeline: the same factory object, and the modules the
    campaign traced (the store's own among them), so the same scheduling points."""
    import sys

    from kubesim.scenario.run import run_scenario
    from kubesim.scenario.store_log import captured

    replay = found.replay
    traced = [sys.modules[name] for name in replay.traced if name in sys.modules]
    with captured():  # the store's output is the failing run's, found.log, said once
        return run_scenario(
            factory,
            replay.steps,
            seed=replay.seed,
            setup=replay.setup,
            schedule=replay.schedule,
            traced=traced,
            spec=replay.factory,
            timeline=True,
        )


def _timeline(recording: Any) -> dict[str, Any] | None:
    if recording.stops is None:
        return None
    threads: list[str] = []
    for stop in recording.stops:
        if stop.thread not in threads:
            threads.append(stop.thread)
    return {
        "threads": threads,
        "stops": [
            {
                "steps": s.steps,
                "time": s.time,
                "thread": s.thread,
                "why": s.why,
                "location": s.location,
            }
            for s in recording.stops
        ],
        "steps": [
            {"round": r, "line": line, "steps": steps, "time": time}
            for r, line, steps, time in recording.step_starts
        ],
    }
