"""Scheduling points from the interpreter: where a controlled thread can be preempted.

The scheduler gives a point at every opcode (or line) executed in a *traced* file, the store
under test, and none elsewhere. A *points backend* turns the interpreter's events into calls
of ``point()``. The contract every backend keeps:

- ``start()`` runs in the controller before any controlled thread runs, ``stop()`` after the
  last one is parked or finished, on every path (a failure too); ``enter_thread()`` and
  ``exit_thread()`` run in each controlled thread around its target.
- ``point()`` is called in whatever thread executes traced code; it ignores threads that are
  not the current controlled one, so the backend need not filter threads.
- Same code, same choices => the same sequence of points (the determinism contract).
- After ``stop()`` nothing of the backend is left in the interpreter.

Two backends:

- :class:`SettracePoints` (Python 3.10 and 3.11): ``sys.settrace`` in each controlled thread,
  ``f_trace_opcodes`` set from the call event. Since 3.12 settrace runs on top of
  ``sys.monitoring`` and ignores ``f_trace_opcodes`` set from the call event; on 3.12.1 it is
  ignored from a line event too and long runs crashed in that path, so this backend gives only
  line points there.
- :class:`MonitoringPoints` (3.12 and later): ``sys.monitoring`` (PEP 669). ``PY_START`` and
  ``PY_RESUME`` are on for every code object, to discover the ones in traced files (code
  created during the run, nested functions, lambdas, generators resumed in traced code
  included); those get ``INSTRUCTION`` (or ``LINE``) events of their own, the others are
  disabled after their first event. Events fire in every thread, so the callbacks stay cheap.

:func:`points_for` picks the backend for the running Python.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from kubesim._core.untraced import points_trace

# sys.monitoring (3.12+), typed Any: mypy checks against 3.10, which has no such module.
_MONITORING: Any = getattr(sys, "monitoring", None)


class MonitoringToolBusy(RuntimeError):
    """Every ``sys.monitoring`` tool id kubesim can use is held by another tool."""


# sys.monitoring tool ids kubesim may take, in order. 0-2 and 5 are reserved for debuggers,
# coverage, profilers and optimizers (coverage.py's sysmon core takes 1); 3 is Hypothesis'
# explain-phase tracer, which gives up quietly when it finds 3 taken, so 3 is the fallback.
TOOL_IDS = (4, 3)
TOOL_NAME = "kubesim"


class Points:
    """A points backend (see the module docstring for the contract)."""

    name = "none"
    opcodes = False

    def start(self) -> None:
        """Before any controlled thread runs (controller thread)."""

    def enter_thread(self) -> None:
        """In a controlled thread, before its target."""

    def exit_thread(self) -> None:
        """In a controlled thread, after its target (also when it raised)."""

    def stop(self) -> None:
        """After the run, on every path: leave nothing installed."""


class SettracePoints(Points):
    """``sys.settrace`` in each controlled thread: opcode events on 3.10 and 3.11."""

    name = "settrace"

    def __init__(
        self, traced: tuple[str, ...], *, opcodes: bool, point: Callable[[], None]
    ) -> None:
        self.traced = traced
        # 3.12.1 ignores f_trace_opcodes set from a trace function (and crashed in long runs):
        # line events only there, whatever was asked.
        self.opcodes = opcodes and not _SETTRACE_OPCODES_UNSUPPORTED
        self.point = point
        self._traced_code: dict[CodeType, bool] = {}
        self._global_trace, self._local_trace = self._trace_functions()

    def enter_thread(self) -> None:
        if self.traced:
            sys.settrace(self._global_trace)

    def exit_thread(self) -> None:
        sys.settrace(None)

    def _trace_functions(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """The global and local trace functions, as closures over what they read: the global
        one runs at every call in a controlled thread (the client's and kubesim's code
        included), the local one at every opcode of traced code, so each attribute lookup
        saved is saved millions of times in a campaign."""
        traced_code = self._traced_code
        known = traced_code.get
        prefixes = self.traced
        point = self.point
        opcodes = self.opcodes
        opcodes_at_call = opcodes and not _SETTRACE_OPCODES_FROM_LINE_EVENT
        opcodes_at_line = opcodes and _SETTRACE_OPCODES_FROM_LINE_EVENT

        def local_trace(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode" or event == "line":
                if opcodes_at_line and not frame.f_trace_opcodes:
                    frame.f_trace_opcodes = True
                point()
            return local_trace

        def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
            code = frame.f_code
            traced = known(code)
            if traced is None:
                traced = traced_code[code] = code.co_filename.startswith(prefixes)
            if not traced:
                return None
            if opcodes_at_call:
                frame.f_trace_opcodes = True
                frame.f_trace_lines = False
            return local_trace

        return points_trace(global_trace, prefixes), local_trace


# Since 3.12 (settrace on top of sys.monitoring), f_trace_opcodes set in the "call" event is
# ignored; set from a "line" event it takes effect (3.13.0). Lines then stay on as points too.
_SETTRACE_OPCODES_FROM_LINE_EVENT = sys.version_info >= (3, 12)
# On 3.12 (3.12.1 checked) setting f_trace_opcodes from a trace function is ignored and, in long
# runs, crashed the interpreter (a segfault in the opcode-tracing path).
_SETTRACE_OPCODES_UNSUPPORTED = sys.version_info[:2] == (3, 12)


class MonitoringPoints(Points):
    """``sys.monitoring`` (3.12+): ``INSTRUCTION`` (or ``LINE``) events on traced code only."""

    name = "monitoring"

    def __init__(
        self, traced: tuple[str, ...], *, opcodes: bool, point: Callable[[], None]
    ) -> None:
        if _MONITORING is None:
            raise RuntimeError(
                f"the monitoring points backend needs sys.monitoring (Python 3.12+), "
                f"this is Python {sys.version.split()[0]}"
            )
        self.traced = traced
        self.opcodes = opcodes
        self.point = point
        # The event that is a scheduling point: every instruction, or every new line.
        self.event: int = _MONITORING.events.INSTRUCTION if opcodes else _MONITORING.events.LINE
        self.tool: int | None = None
        # The code objects given local events in this run, in discovery order.
        self.instrumented: dict[CodeType, None] = {}

    def start(self) -> None:
        if not self.traced:
            return
        mon = _MONITORING
        events = mon.events
        self.tool = _take_tool_id()
        point = self.point

        # One Python call per event in traced code, in every thread: keep it to the point.
        def on_event(code: CodeType, where: int) -> None:
            point()

        mon.register_callback(self.tool, events.PY_START, self._discover)
        mon.register_callback(self.tool, events.PY_RESUME, self._discover)
        mon.register_callback(self.tool, self.event, on_event)
        mon.set_events(self.tool, events.PY_START | events.PY_RESUME)

    def _discover(self, code: CodeType, offset: int) -> object:
        """PY_START/PY_RESUME: instrument code of traced files, then never hear of it again.

        A generator created before the run and resumed in it is found by its PY_RESUME.
        """
        tool = self.tool
        if (
            tool is not None
            and code not in self.instrumented
            and code.co_filename.startswith(self.traced)
        ):
            self.instrumented[code] = None
            _MONITORING.set_local_events(tool, code, self.event)
        return _MONITORING.DISABLE

    def stop(self) -> None:
        tool = self.tool
        if tool is None:
            return
        self.tool = None
        mon = _MONITORING
        events = mon.events
        try:
            mon.set_events(tool, 0)
            for code in list(self.instrumented):
                mon.set_local_events(tool, code, 0)
            # free_tool_id leaves callbacks and events in place on 3.12 and 3.13
            # (CPython issue 111963): clear them first.
            for event in (events.PY_START, events.PY_RESUME, self.event):
                mon.register_callback(tool, event, None)
        finally:
            mon.free_tool_id(tool)
            # A DISABLE is documented to last until restart_events(), tool or no tool: re-arm
            # them, or the next run might never hear of code it must instrument.
            mon.restart_events()


def _take_tool_id() -> int:
    mon = _MONITORING
    for tool in TOOL_IDS:
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, TOOL_NAME)
            return tool
    held = ", ".join(f"{tool} by {mon.get_tool(tool)!r}" for tool in TOOL_IDS)
    raise MonitoringToolBusy(
        f"kubesim needs a free sys.monitoring tool id for its scheduling points (it takes "
        f"{TOOL_IDS[0]}, or {TOOL_IDS[1]} if that is held), but both are held: {held}. Stop one "
        "of those tools for the controlled run"
    )


def monitoring_available() -> bool:
    return _MONITORING is not None


def points_for(
    traced: tuple[str, ...], *, opcodes: bool, point: Callable[[], None], backend: str | None = None
) -> Points:
    """The points backend for this Python: ``monitoring`` on 3.12+, ``settrace`` before.

    ``backend`` forces one (``"settrace"`` or ``"monitoring"``), for the benchmark and tests.
    """
    if backend is None:
        backend = "monitoring" if monitoring_available() else "settrace"
    if backend == "monitoring":
        return MonitoringPoints(traced, opcodes=opcodes, point=point)
    if backend == "settrace":
        return SettracePoints(traced, opcodes=opcodes, point=point)
    raise ValueError(f"backend must be 'settrace' or 'monitoring', got backend={backend!r}")
