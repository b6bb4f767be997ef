"""kubesim for test suites: ``check_store``, one-line store tests, strategies, explicit scenarios.

What a user writes::

    from kubesim.testing import store_test

    test_my_cache = store_test("mypackage.cache:factory")   # a property test pytest collects

or, for a hand-written scenario::

    from kubesim.testing import ExpireWatches, CreatePods, judge, run_scenario

    result = run_scenario(factory, [CreatePods(3), ExpireWatches()])
    assert judge(result.recording).ok

The pytest plugin (fixtures ``kubesim_server``, ``kubesim_simulation``, ``kubesim_client``,
the ``kubesim_<oracle>`` markers and the ``--kubesim-*`` options) is
:mod:`kubesim.testing.pytest_plugin`, registered as a ``pytest11`` entry point: installing
kubesim is enough, a conftest needs nothing.

Names are imported on first use, so pytest loading the plugin does not import Hypothesis or
the simulation for test runs that never use kubesim.
"""

from __future__ import annotations

import typing as _typing

from kubesim._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from kubesim.checks.store import ORACLES, Verdict, judge
    from kubesim.checks.violation import Violation
    from kubesim.scenario.run import ScenarioResult, Setup, run_scenario
    from kubesim.scenario.steps import (
        AdvanceTime,
        ChurnPods,
        CompactHistory,
        CrashAndRestart,
        CreatePods,
        DeletePods,
        DeleteWhileDisconnected,
        DropWatches,
        ExpireWatches,
        FailRequests,
        LagReplica,
        PatchLabels,
        ReadConcurrently,
        ResumeWatchCache,
        ReusePodIP,
        SendBookmarks,
        SlowConsumerBurst,
        StallWatchCache,
        Step,
        UpdatePodStatus,
    )
    from kubesim.testing.check import CheckReport, Found, NondeterminismDetected, check_store
    from kubesim.testing.fuzz import StoreViolation, example_database, fuzz_test
    from kubesim.testing.properties import store_property, store_test
    from kubesim.testing.replay import InvalidReplayToken, Replay, parse_token
    from kubesim.testing.strategies import ALL_KINDS, DEFAULT_KINDS, FAULT_KINDS, scenarios, steps

_STEPS = "kubesim.scenario.steps"
_EXPORTS = {
    "ALL_KINDS": "kubesim.testing.strategies",
    "DEFAULT_KINDS": "kubesim.testing.strategies",
    "AdvanceTime": _STEPS,
    "CheckReport": "kubesim.testing.check",
    "ChurnPods": _STEPS,
    "CompactHistory": _STEPS,
    "CrashAndRestart": _STEPS,
    "CreatePods": _STEPS,
    "DeletePods": _STEPS,
    "DeleteWhileDisconnected": _STEPS,
    "DropWatches": _STEPS,
    "ExpireWatches": _STEPS,
    "FAULT_KINDS": "kubesim.testing.strategies",
    "FailRequests": _STEPS,
    "Found": "kubesim.testing.check",
    "InvalidReplayToken": "kubesim.testing.replay",
    "NondeterminismDetected": "kubesim.testing.check",
    "ORACLES": "kubesim.checks.store",
    "PatchLabels": _STEPS,
    "ReadConcurrently": _STEPS,
    "Replay": "kubesim.testing.replay",
    "ResumeWatchCache": _STEPS,
    "ReusePodIP": _STEPS,
    "ScenarioResult": "kubesim.scenario.run",
    "SendBookmarks": _STEPS,
    "Setup": "kubesim.scenario.run",
    "SlowConsumerBurst": _STEPS,
    "LagReplica": _STEPS,
    "StallWatchCache": _STEPS,
    "Step": _STEPS,
    "UpdatePodStatus": _STEPS,
    "Verdict": "kubesim.checks.store",
    "Violation": "kubesim.checks.violation",
    "StoreViolation": "kubesim.testing.fuzz",
    "check_store": "kubesim.testing.check",
    "example_database": "kubesim.testing.fuzz",
    "fuzz_test": "kubesim.testing.fuzz",
    "judge": "kubesim.checks.store",
    "parse_token": "kubesim.testing.replay",
    "run_scenario": "kubesim.scenario.run",
    "scenarios": "kubesim.testing.strategies",
    "steps": "kubesim.testing.strategies",
    "store_property": "kubesim.testing.properties",
    "store_test": "kubesim.testing.properties",
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ALL_KINDS",
    "DEFAULT_KINDS",
    "FAULT_KINDS",
    "ORACLES",
    "AdvanceTime",
    "CheckReport",
    "ChurnPods",
    "CompactHistory",
    "CrashAndRestart",
    "CreatePods",
    "DeletePods",
    "DeleteWhileDisconnected",
    "DropWatches",
    "ExpireWatches",
    "FailRequests",
    "Found",
    "InvalidReplayToken",
    "LagReplica",
    "NondeterminismDetected",
    "PatchLabels",
    "ReadConcurrently",
    "Replay",
    "ResumeWatchCache",
    "ReusePodIP",
    "ScenarioResult",
    "SendBookmarks",
    "Setup",
    "SlowConsumerBurst",
    "StallWatchCache",
    "Step",
    "StoreViolation",
    "UpdatePodStatus",
    "Verdict",
    "Violation",
    "check_store",
    "example_database",
    "fuzz_test",
    "judge",
    "parse_token",
    "run_scenario",
    "scenarios",
    "steps",
    "store_property",
    "store_test",
]
