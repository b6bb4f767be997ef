"""Named mutants of the scheduling-points backends (kubesim/sched/tracing.py).

Every mutant here is killed on every supported Python: the listed tests run the monitoring
backend against a recorded ``sys.monitoring``, so they run (and kill) on 3.10 and 3.11 too;
the tests against the real one (3.12+) are skipped there, so they are not listed.
"""

MUTANTS = [
    dict(
        name="library-leaf-leaves-the-trace-off",
        path="kubesim/_core/untraced.py",
        old="""    finally:
        _settrace(trace)


def untraced_leaf""",
        new="""    finally:
        pass


def untraced_leaf""",
        tests=[
            "tests/unit/test_untraced.py::"
            "test_a_library_leaf_runs_untraced_unless_its_file_is_traced",
            "tests/integration/test_client_leaves.py::"
            "test_a_run_with_untraced_leaves_has_the_same_points_and_trace",
        ],
        why="after the client decodes one event the store's own code would lose its points",
    ),
    dict(
        name="library-leaf-untraced-in-a-traced-library",
        path="kubesim/_core/untraced.py",
        old="if traced is None or filename.startswith(traced):",
        new="if traced is None:",
        tests=[
            "tests/unit/test_untraced.py::test_a_library_leaf_runs_untraced_unless_its_file_is_traced"
        ],
        why="a library the user asked to trace would lose its points",
    ),
    dict(
        name="monitoring-points-at-lines",
        path="kubesim/sched/tracing.py",
        old="self.event: int = _MONITORING.events.INSTRUCTION if opcodes else",
        new="self.event: int = _MONITORING.events.LINE if opcodes else",
        tests=[
            "tests/unit/test_sched_tracing.py::"
            "test_the_monitoring_backend_asks_for_instruction_events_on_traced_code_only",
            "tests/unit/test_sched_tracing.py::"
            "test_a_race_inside_one_line_is_found_at_opcode_granularity_only",
        ],
        why="opcode granularity on 3.12+ gives line points: races inside one line are missed",
    ),
    dict(
        name="monitoring-misses-resumed-generators",
        path="kubesim/sched/tracing.py",
        old="mon.set_events(self.tool, events.PY_START | events.PY_RESUME)",
        new="mon.set_events(self.tool, events.PY_START)",
        tests=[
            "tests/unit/test_sched_tracing.py::"
            "test_the_monitoring_backend_asks_for_instruction_events_on_traced_code_only",
            "tests/unit/test_sched_tracing.py::"
            "test_a_race_inside_one_line_is_found_at_opcode_granularity_only"
            "[generators-resumed-in-the-run]",
        ],
        why="a generator started before the run and resumed in it gets no scheduling points",
    ),
    dict(
        name="monitoring-leaves-local-events-on",
        path="kubesim/sched/tracing.py",
        old="mon.set_local_events(tool, code, 0)",
        new="pass",
        tests=[
            "tests/unit/test_sched_tracing.py::"
            "test_the_monitoring_backend_asks_for_instruction_events_on_traced_code_only",
        ],
        why="traced code keeps INSTRUCTION events after the run (slow, and a later tool sees them)",
    ),
    dict(
        name="scheduler-points-only-at-lines",
        path="kubesim/sched/scheduler.py",
        old='self.traced, opcodes=granularity == "opcode", point=self.point',
        new="self.traced, opcodes=False, point=self.point",
        tests=[
            "tests/unit/test_sched_tracing.py::"
            "test_a_race_inside_one_line_is_found_at_opcode_granularity_only",
        ],
        why="the default opcode granularity silently becomes lines on every Python",
    ),
]
