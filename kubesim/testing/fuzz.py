"""Fuzz targets: a store as a plain Hypothesis test, for HypoFuzz and for fleets of workers.

:func:`fuzz_test` turns a factory into an ``@given`` test that draws one scenario and one
thread schedule per example, runs it and judges it, exactly as ``kubesim check`` does for each
of its examples. Being an ordinary Hypothesis test, it runs unchanged under pytest and under
HypoFuzz (``hypothesis fuzz``), which runs it adaptively on many processes for as long as you
let it; failing examples go to the test's example database, where every other worker and every
later run finds them and replays them first.

The database is Hypothesis' own, the active settings profile's (HypoFuzz only fuzzes tests
that use it). :func:`use_database` makes a URL the profile's database: ``redis://host:port/db``
for ``hypothesis.extra.redis.RedisExampleDatabase`` (a fleet of machines sharing one), a
directory, or ``:memory:``. The pytest plugin calls it for ``KUBESIM_DATABASE`` or a
``--kubesim-database redis://...``, so a conftest needs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kubesim.scenario.run import Setup, StoreFactory
from kubesim.testing.database import DATABASE_VARIABLE, PROFILE, example_database, use_database
from kubesim.testing.marks import FLEET_TEST_ATTRIBUTE

__all__ = [
    "DATABASE_VARIABLE",
    "PROFILE",
    "StoreViolation",
    "example_database",
    "fuzz_test",
    "use_database",
]


class StoreViolation(AssertionError):
    """A fuzz target's example broke a property: the message ends with the replay command."""


def fuzz_test(
    factory: StoreFactory | str,
    *,
    kinds: Sequence[str] | None = None,
    max_steps: int = 12,
    setup: Setup | None = None,
    oracles: Sequence[str] | None = None,
    max_examples: int | None = None,
) -> Callable[..., None]:
    """An ``@given`` test of the store ``factory`` builds (or names, as ``module:attribute``).

    ``max_examples``: examples per pytest run (default: the settings profile's); HypoFuzz
    ignores it and runs until stopped.
    """
    from kubesim.checks.store import checked_oracles, judge
    from kubesim.scenario.run import run_scenario
    from kubesim.sim.store import load_factory
    from kubesim.testing.check import MAX_PREEMPTION_POINT, MAX_PREEMPTIONS
    from kubesim.testing.replay import Replay, python_version
    from kubesim.testing.strategies import DEFAULT_KINDS, _checked_kinds, scenarios

    chosen = _checked_kinds(kinds if kinds is not None else DEFAULT_KINDS)
    only = None if oracles is None else checked_oracles(oracles)
    setup = setup if setup is not None else Setup()
    spec = factory if isinstance(factory, str) else f"{factory.__module__}:{factory.__qualname__}"
    options: dict[str, Any] = {
        "deadline": None,
        # Runs are slow next to a pure function, and scenarios large; nothing else is
        # suppressed (HypoFuzz refuses tests that suppress every health check).
        "suppress_health_check": [
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
        "print_blob": False,
        # No explain phase: it runs a failing scenario again under sys.settrace, and once per
        # part it varies, which for a whole simulation takes minutes; the failure's replay
        # line already names everything needed to run it again.
        "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    }
    if max_examples is not None:
        options["max_examples"] = max_examples

    @settings(**options)
    @given(st.data())
    def test(data: st.DataObject) -> None:
        import kubesim

        store = load_factory(factory) if isinstance(factory, str) else factory
        steps = data.draw(scenarios(kinds=chosen, max_steps=max_steps), label="scenario")
        schedule = data.draw(
            st.lists(
                st.integers(0, MAX_PREEMPTION_POINT), max_size=MAX_PREEMPTIONS, unique=True
            ).map(sorted),
            label="schedule",
        )
        result = run_scenario(store, steps, seed=0, setup=setup, schedule=schedule, spec=spec)
        verdict = judge(result.recording, only=only)
        if verdict.ok:
            return
        replay = Replay(
            factory=spec,
            steps=tuple(result.steps),
            schedule=tuple(result.schedule),
            seed=0,
            setup=setup,
            traced=(),
            kubesim_version=kubesim.__version__,
            python=python_version(),
            oracles=None if only is None else tuple(only),
        )
        lines = [str(v) for v in verdict.violations]
        lines += [f"  {n}. {line}" for n, line in enumerate(result.lines, 1)]
        lines.append(f"replay: {replay.command()}")
        raise StoreViolation("\n".join(lines))

    test.__name__ = test.__qualname__ = f"fuzz_{spec.replace(':', '_').replace('.', '_')}"
    # The pytest plugin keys this test's examples by node id, as HypoFuzz does (marks.py).
    setattr(test.hypothesis.inner_test, FLEET_TEST_ATTRIBUTE, True)  # type: ignore[attr-defined]
    return test
