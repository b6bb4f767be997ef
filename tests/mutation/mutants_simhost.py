"""Mutants of the simulation host: the watchdog, scheduling points, atomic server operations
and the external driver's quiescence. Each must be killed by the listed fast tests."""

MUTANTS = [
    {
        "name": "failure-kind-not-read-from-its-class",
        "path": "kubesim/checks/store.py",
        "old": 'Violation(breaks(failure) or "crash", f"{kind}',
        "new": 'Violation("crash", f"{kind}',
        "tests": [
            "tests/unit/test_every_run_failure.py::"
            "test_the_run_returns_and_the_oracles_name_the_failure[deadlock]",
        ],
        "why": "a deadlock, a livelock or a store that stopped watching would all read 'crash'",
    },
    {
        "name": "watchdog-never-reports-a-stuck-thread",
        "path": "kubesim/sched/scheduler.py",
        "old": "same = same + 1 if unchanged and not busy else 0",
        "new": "same = 0",
        "tests": [
            "tests/unit/test_simulation.py::"
            "test_a_store_blocked_on_a_real_lock_is_named_within_seconds",
        ],
        "why": "a store blocked on a real lock would only be reported after the 600 s cap",
    },
    {
        "name": "watchdog-ignores-cpu-time",
        "path": "kubesim/sched/scheduler.py",
        "old": "busy = cpu is not None and last_cpu is not None and cpu - last_cpu > interval / 10",
        "new": "busy = False",
        "tests": [
            "tests/unit/test_simulation.py::"
            "test_a_long_computation_without_scheduling_points_is_not_reported",
        ],
        "why": "a tight loop is interrupted at the same instruction: only CPU time shows it moves",
    },
    {
        "name": "point-from-a-blocked-thread-schedules",
        "path": "kubesim/sched/scheduler.py",
        "old": " or ct._state is not State.RUNNABLE or ct.atomic:",
        "new": " or ct.atomic:",
        "tests": [
            "tests/unit/test_scheduler_watch.py::"
            "test_a_point_from_a_thread_that_is_not_runnable_is_not_a_scheduling_point",
        ],
        "why": "a timer callback's lock in a handing-off thread asked PCT to choose among nobody",
    },
    {
        "name": "server-lock-not-atomic",
        "path": "kubesim/sim/threads.py",
        "old": "        if scheduler is not None and scheduler.current_thread() is not None:\n"
        "            block = scheduler.atomic()",
        "new": "        if False:\n            block = scheduler.atomic()",
        "tests": [
            "tests/unit/test_scheduler_watch.py::"
            "test_no_scheduling_point_while_a_thread_holds_the_server_lock_even_when_traced",
        ],
        "why": "a thread preempted inside a server operation leaves the lock taken for the others",
    },
    {
        "name": "quiescence-does-not-return-to-the-driver",
        "path": "kubesim/sched/scheduler.py",
        "old": "            if self.external:\n                # Every controlled thread waits",
        "new": "            if False:\n                # Every controlled thread waits",
        "tests": [
            "tests/unit/test_simulation.py::test_the_driver_can_set_an_event_the_store_waits_on",
        ],
        "why": "settle() would move virtual time (or report a deadlock) instead of handing back",
    },
    {
        "name": "driver-notify-wakes-nobody",
        "path": "kubesim/sched/primitives.py",
        "old": "            waiter.scheduler.wake(waiter)\n",
        "new": "",
        "tests": [
            "tests/unit/test_simulation.py::test_the_driver_can_set_an_event_the_store_waits_on",
        ],
        "why": "an Event set by the driver between settles would never wake the store",
    },
]
