"""Scheduling points from the interpreter (kubesim/sched/tracing.py) on every supported Python.

Opcode granularity must split a one-line read-modify-write (``self.count += 1``) on every
version: through ``sys.settrace`` before 3.12 and ``sys.monitoring`` since. The monitoring
backend must leave nothing behind in the interpreter after a run, failed or not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

from kubesim.sched import Preemptions, RandomWalk, Scheduler, ThreadCrashed, tracing
from kubesim.sched.explore import explore, run_schedule

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import one_line_race  # noqa: E402

TRACED = [one_line_race]
MONITORING = hasattr(sys, "monitoring")
needs_monitoring = pytest.mark.skipif(not MONITORING, reason="sys.monitoring is 3.12+")

SHAPES: dict[str, Callable[[], Callable[[], None]]] = {
    "attribute": lambda: one_line_race.attribute_scenario,
    "closure-and-lambda-made-in-the-run": lambda: one_line_race.closure_scenario,
    "generators-resumed-in-the-run": one_line_race.generator_scenario_factory,
}


def _failing_single_preemptions(make: Callable[[], Callable[[], None]], granularity: str) -> list:
    """Every one-preemption schedule of the scenario, run; the steps whose preemption fails."""
    steps = run_schedule(
        make(), seed=0, strategy=Preemptions([]), traced=TRACED, granularity=granularity
    ).steps
    failing = []
    for step in range(steps + 1):
        result = run_schedule(
            make(), seed=0, strategy=Preemptions([step]), traced=TRACED, granularity=granularity
        )
        if not result.ok:
            assert isinstance(result.failure, ThreadCrashed), result.failure
            assert "lost update" in str(result.failure)
            failing.append(step)
    return failing


@pytest.mark.parametrize("shape", SHAPES)
def test_a_race_inside_one_line_is_found_at_opcode_granularity_only(shape: str) -> None:
    # The whole budget: one preemption at every scheduling point of the run.
    assert _failing_single_preemptions(SHAPES[shape], "opcode"), (
        f"no single preemption splits the one-line increment on Python {sys.version.split()[0]}"
    )
    assert _failing_single_preemptions(SHAPES[shape], "line") == []


def test_explore_finds_the_one_line_race_at_opcode_granularity_and_not_at_lines() -> None:
    budget = 200
    by_opcode = explore(one_line_race.attribute_scenario, schedules=budget, seed=0, traced=TRACED)
    by_line = explore(
        one_line_race.attribute_scenario,
        schedules=budget,
        seed=0,
        traced=TRACED,
        granularity="line",
    )
    assert by_opcode.found is not None
    assert "lost update: count=1" in str(by_opcode.found)
    assert by_line.ok
    assert by_line.schedules == budget


def test_the_backend_is_monitoring_on_3_12_and_later_settrace_before() -> None:
    scheduler = Scheduler(strategy=RandomWalk(0.1), traced=TRACED)
    assert scheduler.points.name == ("monitoring" if MONITORING else "settrace")
    assert scheduler.opcodes


@needs_monitoring
def test_the_same_seed_gives_the_same_trace_hash_with_the_monitoring_backend() -> None:
    def once() -> tuple[str, int, str]:
        scheduler = Scheduler(strategy=RandomWalk(0.2), seed="same", traced=TRACED)
        assert scheduler.points.name == "monitoring"
        result = scheduler.run(one_line_race.closure_scenario)
        return result.trace_hash, result.steps, str(result.failure)

    assert once() == once()


def _codes() -> list[CodeType]:
    return [
        one_line_race.Counter.bump.__code__,
        one_line_race.attribute_scenario.__code__,
        one_line_race._both.__code__,
    ]


def _assert_monitoring_clean(held_before: dict[int, str | None]) -> None:
    mon: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    for tool in tracing.TOOL_IDS:
        assert mon.get_tool(tool) == held_before[tool]
        if held_before[tool] is None:
            assert mon.get_events(tool) == 0
            for code in _codes():
                assert mon.get_local_events(tool, code) == 0, code.co_name


def _held() -> dict[int, str | None]:
    mon: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    return {tool: mon.get_tool(tool) for tool in tracing.TOOL_IDS}


@needs_monitoring
def test_no_monitoring_events_stay_registered_after_a_run() -> None:
    held = _held()
    scheduler = Scheduler(strategy=Preemptions([]), traced=TRACED)
    result = scheduler.run(one_line_race.attribute_scenario)
    assert result.ok, result.failure
    # The run did use the monitoring backend on this code.
    assert one_line_race.Counter.bump.__code__ in scheduler.points.instrumented  # type: ignore[attr-defined]
    _assert_monitoring_clean(held)


@needs_monitoring
def test_a_run_whose_thread_raises_also_cleans_up() -> None:
    held = _held()
    failing = _failing_single_preemptions(SHAPES["attribute"], "opcode")
    result = run_schedule(
        one_line_race.attribute_scenario,
        seed=0,
        strategy=Preemptions(failing[:1]),
        traced=TRACED,
    )
    assert isinstance(result.failure, ThreadCrashed)
    _assert_monitoring_clean(held)
    # And the next run discovers the traced code again (its PY_START was re-armed).
    assert _failing_single_preemptions(SHAPES["attribute"], "opcode") == failing


@needs_monitoring
def test_a_busy_tool_id_is_a_clear_error_and_the_run_leaves_nothing_behind() -> None:
    mon: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    taken = [tool for tool in tracing.TOOL_IDS if mon.get_tool(tool) is None]
    for tool in taken:
        mon.use_tool_id(tool, "someone else")
    try:
        with pytest.raises(tracing.MonitoringToolBusy, match="someone else"):
            Scheduler(strategy=Preemptions([]), traced=TRACED).run(one_line_race.attribute_scenario)
    finally:
        for tool in taken:
            mon.free_tool_id(tool)
    assert run_schedule(
        one_line_race.attribute_scenario, seed=0, strategy=Preemptions([]), traced=TRACED
    ).ok


# -- the monitoring backend against a recorded sys.monitoring (runs on every Python) --------


class _FakeMonitoring:
    """The part of ``sys.monitoring`` the backend uses, recording what it was asked."""

    class events:
        PY_START = 1
        PY_RESUME = 2
        LINE = 32
        INSTRUCTION = 64

    DISABLE = object()

    def __init__(self) -> None:
        self.tools: dict[int, str] = {}
        self.global_events: dict[int, int] = {}
        self.local_events: dict[tuple[int, CodeType], int] = {}
        self.callbacks: dict[tuple[int, int], Callable[..., Any]] = {}
        self.restarts = 0

    def get_tool(self, tool: int) -> str | None:
        return self.tools.get(tool)

    def use_tool_id(self, tool: int, name: str) -> None:
        if tool in self.tools:
            raise ValueError(f"tool {tool} is already in use")
        self.tools[tool] = name

    def free_tool_id(self, tool: int) -> None:
        self.tools.pop(tool, None)

    def register_callback(self, tool: int, event: int, func: Callable[..., Any] | None) -> None:
        if func is None:
            self.callbacks.pop((tool, event), None)
        else:
            self.callbacks[(tool, event)] = func

    def set_events(self, tool: int, events: int) -> None:
        self.global_events[tool] = events

    def set_local_events(self, tool: int, code: CodeType, events: int) -> None:
        self.local_events[(tool, code)] = events

    def restart_events(self) -> None:
        self.restarts += 1

    def fire(self, event: int, code: CodeType) -> Any:
        """What the interpreter would call for ``event`` in ``code``, and its answer."""
        for tool in self.tools:
            enabled = self.global_events.get(tool, 0) | self.local_events.get((tool, code), 0)
            if enabled & event and (tool, event) in self.callbacks:
                return self.callbacks[(tool, event)](code, 0)
        return None


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> _FakeMonitoring:
    fake = _FakeMonitoring()
    monkeypatch.setattr(tracing, "_MONITORING", fake)
    return fake


def _backend(fake: _FakeMonitoring, *, opcodes: bool) -> tuple[tracing.MonitoringPoints, list]:
    points: list[int] = []
    backend = tracing.MonitoringPoints(
        (one_line_race.__file__,), opcodes=opcodes, point=lambda: points.append(1)
    )
    return backend, points


@pytest.mark.parametrize(("opcodes", "event"), [(True, "INSTRUCTION"), (False, "LINE")])
def test_the_monitoring_backend_asks_for_instruction_events_on_traced_code_only(
    fake: _FakeMonitoring, opcodes: bool, event: str
) -> None:
    want = getattr(fake.events, event)
    backend, points = _backend(fake, opcodes=opcodes)
    backend.start()
    (tool,) = fake.tools
    # Code starting or resuming anywhere is looked at once, then never again.
    assert fake.global_events[tool] == fake.events.PY_START | fake.events.PY_RESUME
    traced = one_line_race.Counter.bump.__code__
    generator = one_line_race.incrementer.__code__
    elsewhere = _backend.__code__
    assert fake.fire(fake.events.PY_START, traced) is fake.DISABLE
    assert fake.fire(fake.events.PY_RESUME, generator) is fake.DISABLE
    assert fake.fire(fake.events.PY_START, elsewhere) is fake.DISABLE
    assert fake.local_events == {(tool, traced): want, (tool, generator): want}
    fake.fire(want, traced)
    fake.fire(want, generator)
    assert len(points) == 2
    backend.stop()
    assert fake.tools == {}
    assert fake.callbacks == {}
    assert set(fake.global_events.values()) == {0}
    assert set(fake.local_events.values()) == {0}
    assert fake.restarts == 1


def test_the_monitoring_backend_takes_the_next_free_tool_id_or_says_who_holds_them(
    fake: _FakeMonitoring,
) -> None:
    fake.tools[tracing.TOOL_IDS[0]] = "a debugger"
    backend, _ = _backend(fake, opcodes=True)
    backend.start()
    assert fake.tools[tracing.TOOL_IDS[1]] == tracing.TOOL_NAME
    backend.stop()
    for tool in tracing.TOOL_IDS[1:]:
        fake.tools[tool] = "hypothesis"
    with pytest.raises(tracing.MonitoringToolBusy, match=r"a debugger.*hypothesis"):
        _backend(fake, opcodes=True)[0].start()
