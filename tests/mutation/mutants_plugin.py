"""Named mutants of the pytest plugin's checks (oracle markers, narrowed judging, replay last)."""

T = "tests/unit/test_pytest_plugin.py::"

MUTANTS = [
    dict(
        name="required-oracle-never-missing",
        path="kubesim/testing/marks.py",
        old="        if name in done:\n",
        new="        if True:\n",
        tests=[T + "test_oracle_markers_require_and_narrow_the_oracles"],
        why="a marker-required oracle that was skipped for want of a hook no longer fails the test",
    ),
    dict(
        name="judge-ignores-the-selection",
        path="kubesim/checks/store.py",
        old="if only is not None and oracle.name not in only and oracle.name != ALWAYS:",
        new="if False:",
        tests=[
            T + "test_judge_narrowed_to_some_oracles_runs_only_those_and_failure",
            T + "test_oracle_markers_require_and_narrow_the_oracles",
        ],
        why="oracle markers and oracles= no longer narrow which oracles judge",
    ),
    dict(
        name="store-test-never-fails",
        path="kubesim/testing/properties.py",
        old="    if text is not None:\n",
        new="    if False:\n",
        tests=[T + "test_a_leaky_store_fails_with_its_report_and_the_replay_line_last"],
        why="a store test passes whatever the campaign found",
    ),
    dict(
        name="replay-not-last-after-captured-output",
        path="kubesim/testing/pytest_plugin.py",
        old='        report.sections.append(("kubesim replay", replay))',
        new="        pass",
        tests=[T + "test_a_leaky_store_fails_with_its_report_and_the_replay_line_last"],
        why="a store that prints pushes the replay command up, away from the last line",
    ),
]
