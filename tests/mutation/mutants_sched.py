"""Named mutants of the scheduler's detectors, and the tests that must fail with each applied."""

MUTANTS = [
    {
        "name": "relist-never-sampled",
        "path": "kubesim/sched/strategies.py",
        "old": "            if own is not None and self._samplers and own % stride == 0:",
        "new": "            if False:",
        "tests": [
            "tests/unit/test_scheduler_turns.py::test_a_sampler_gets_evenly_spaced_turns_in_a_listing_threads_region",
            "tests/unit/test_power.py::test_a_relist_reader_samples_the_whole_relist_whatever_the_schedule",
        ],
        "why": "a relist half applied over a few points would be seen only by a lucky draw",
    },
    {
        "name": "atomic-block-silences-every-thread",
        "path": "kubesim/sched/scheduler.py",
        "old": "        thread = self.thread = self.scheduler.current_thread()",
        "new": "        thread = self.thread = None",
        "tests": [
            "tests/unit/test_scheduler_turns.py::test_a_thread_parked_inside_an_atomic_block_leaves_the_others_their_points",
        ],
        "why": "a reader parked in its bookkeeping would leave the store's relist no points",
    },
    {
        "name": "yield-to-keeps-the-turn",
        "path": "kubesim/sched/scheduler.py",
        "old": "        self._switch(ct, target)\n        return True",
        "new": "        return True",
        "tests": [
            "tests/unit/test_scheduler_turns.py::test_yield_to_runs_the_other_thread_now_and_the_caller_after"
        ],
        "why": "a sampling reader would read the same instant over and over",
    },
    {
        "name": "blocked-report-shows-the-harness",
        "path": "kubesim/sched/scheduler.py",
        "old": "    if outer < len(summary):\n        summary = summary[outer:]\n",
        "new": "",
        "tests": [
            "tests/unit/test_every_run_failure.py::"
            "test_the_run_returns_and_the_oracles_name_the_failure[real lock]",
        ],
        "why": "a blocked store's report would show kubesim's own frames around the store's",
    },
    {
        "name": "busy-wait-never-called-a-spin",
        "path": "kubesim/sched/scheduler.py",
        "old": "            spinning = spinning + 1 if busy and idle else 0",
        "new": "            spinning = 0",
        "tests": [
            "tests/unit/test_watchdog.py::"
            "test_a_busy_wait_on_another_thread_is_reported_as_a_spin_and_stopped",
        ],
        "why": "a store polling a flag would hang its campaign for ten minutes, then be misnamed",
    },
    {
        "name": "spinning-thread-left-burning",
        "path": "kubesim/sched/scheduler.py",
        "old": (
            "                self._fail(self._spinning(holder))\n"
            "                _stop_spinning(holder)\n"
        ),
        "new": "                self._fail(self._spinning(holder))\n",
        "tests": [
            "tests/unit/test_watchdog.py::"
            "test_a_busy_wait_on_another_thread_is_reported_as_a_spin_and_stopped",
        ],
        "why": "every spinning example would leave a thread burning a core until the process ends",
    },
    {
        "name": "explore-default-granularity-line",
        "path": "kubesim/sched/explore.py",
        "old": 'DEFAULT_GRANULARITY = "opcode"',
        "new": 'DEFAULT_GRANULARITY = "line"',
        "tests": [
            "tests/unit/test_scheduler_verdicts.py::"
            "test_a_one_line_lost_update_is_found_with_the_default_granularity",
        ],
        "why": "explore and run_schedule would miss every one-line read-modify-write race",
    },
    {
        "name": "scheduler-default-granularity-line",
        "path": "kubesim/sched/scheduler.py",
        "old": '        granularity: str = "opcode",',
        "new": '        granularity: str = "line",',
        "tests": [
            "tests/unit/test_scheduler_verdicts.py::"
            "test_a_scheduler_made_without_a_granularity_splits_a_one_line_lost_update",
        ],
        "why": "a Scheduler built without a granularity would miss one-line RMW races",
    },
    {
        "name": "any-pending-timer-defers-deadlock",
        "path": "kubesim/sched/scheduler.py",
        "old": "        return any(\n            t.state is State.BLOCKED\n",
        "new": "        return True or any(\n            t.state is State.BLOCKED\n",
        "tests": [
            "tests/unit/test_scheduler_verdicts.py::"
            "test_a_deadlock_next_to_a_ticking_timer_is_reported_at_once",
        ],
        "why": "a timer that wakes no blocked thread would hide a deadlock behind autojumps",
    },
    {
        "name": "busy-wait-runs-without-a-time-slice",
        "path": "kubesim/sched/scheduler.py",
        "old": "            if self._slice >= TIME_SLICE:",
        "new": "            if False:",
        "tests": [
            "tests/unit/test_watchdog.py::"
            "test_a_traced_busy_wait_yields_after_a_time_slice_and_ends",
        ],
        "why": "a traced loop polling a flag another thread sets would be a false livelock",
    },
    {
        "name": "run-threads-free-to-change-cpu",
        "path": "kubesim/sched/affinity.py",
        "old": "        os.sched_setaffinity(0, {cpu})\n",
        "new": "",
        "tests": [
            "tests/unit/test_cpu_pin.py::"
            "test_every_thread_of_a_run_is_on_one_cpu_and_the_driver_gets_its_cpus_back",
        ],
        "why": "every hand-off between a run's threads would cost a wake-up on another core",
    },
    {
        "name": "threads-of-a-run-left-on-one-cpu",
        "path": "kubesim/sched/affinity.py",
        "old": "        for tid in _tasks() - self._before:\n",
        "new": "        for tid in ():\n",
        "tests": [
            "tests/unit/test_cpu_pin.py::"
            "test_a_thread_still_alive_after_the_run_gets_its_cpus_back",
        ],
        "why": "a pool started in a run would share one core with everything for the process' life",
    },
    {
        "name": "stop-location-in-a-library",
        "path": "kubesim/sched/scheduler.py",
        "old": "        if own and filename.startswith(tuple(own)):\n            outside = frame\n",
        "new": "        if False:\n            outside = frame\n",
        "tests": [
            "tests/unit/test_crash_report.py::"
            "test_the_stop_location_is_the_stores_code_not_a_librarys",
        ],
        "why": "the timeline's column would name httpx's line where the store's call waited",
    },
    {
        "name": "crash-traceback-keeps-every-library-frame",
        "path": "kubesim/_core/paths.py",
        "old": "            kept = run if len(run) < 3 else [run[0], run[-1]]\n",
        "new": "            kept = run\n",
        "tests": [
            "tests/unit/test_crash_report.py::"
            "test_library_runs_are_condensed_around_the_stores_own_frames",
        ],
        "why": "a crash deep in a client would show a screenful of its frames, not the store's",
    },
]
