"""kubesim's pytest plugin: fixtures, the ``kubesim_<oracle>`` markers, the ``--kubesim-*`` options.

Registered as a ``pytest11`` entry point (``kubesim = "kubesim.testing.pytest_plugin"``), so it
is active wherever kubesim is installed; a conftest needs nothing. Without the entry point (a
source checkout on ``PYTHONPATH``), load it with ``-p kubesim.testing.pytest_plugin`` or
``pytest_plugins = ["kubesim.testing.pytest_plugin"]``.

It costs nothing to runs that do not use kubesim: loading it imports the oracle table only
(to register the markers, a few small modules); the fixtures import the server and the
simulation when a test asks for them; there are no autouse fixtures.

Options:

- ``--kubesim-seed N``: the seed of every kubesim fixture and store test (0);
- ``--kubesim-examples N``: examples per store test, overriding each test's own (CI vs nightly);
- ``--kubesim-database DIR``: where failing examples are kept and tried first next time
  (``.kubesim/examples``; ``:memory:`` keeps none);
- ``--kubesim-report DIR``: each store test's campaign report, one HTML page per test;
- ``KUBESIM_DATABASE`` (or ``--kubesim-database redis://host:port/db``): the example database of
  every Hypothesis test, Redis for a fleet (see :mod:`kubesim.testing.fuzz`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from kubesim.testing.marks import (
    FLEET_TEST_ATTRIBUTE,
    MARKERS,
    STORE_TEST_ATTRIBUTE,
    marker_help,
)

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer
    from kubesim.sim.simulation import Simulation

# Where a failed store test leaves its replay command, for pytest_runtest_makereport.
REPLAY_KEY = pytest.StashKey[str]()


@dataclass(frozen=True)
class Options:
    """The session's kubesim options, as store tests and fixtures use them."""

    seed: int
    examples: int | None
    database: str | None
    seed_given: bool
    report: str | None = None


def session_options(config: pytest.Config) -> Options:
    """The ``--kubesim-*`` options; their defaults when the plugin is not loaded."""
    seed = config.getoption("kubesim_seed", default=None)
    return Options(
        seed=0 if seed is None else seed,
        examples=config.getoption("kubesim_examples", default=None),
        database=config.getoption("kubesim_database", default=None),
        seed_given=seed is not None,
        report=config.getoption("kubesim_report", default=None),
    )


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise pytest.UsageError(f"expected a whole number, got {text!r}") from None
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise pytest.UsageError(f"--kubesim-examples: expected a number >= 1, got {text!r}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kubesim", "kubesim (deterministic simulation of Kubernetes stores)")
    group.addoption(
        "--kubesim-seed",
        type=_count,
        default=None,
        metavar="N",
        help="seed of every kubesim fixture and store test (default 0)",
    )
    group.addoption(
        "--kubesim-examples",
        type=_positive,
        default=None,
        metavar="N",
        help="examples per kubesim store test, overriding each test's own (default: the test's, "
        "else 100)",
    )
    group.addoption(
        "--kubesim-database",
        default=None,
        metavar="DIR",
        help="example database of kubesim store tests (default .kubesim/examples; :memory: for "
        "none)",
    )
    group.addoption(
        "--kubesim-report",
        default=None,
        metavar="DIR",
        help="write each kubesim store test's campaign report to DIR/<test>.html (verdict per "
        "oracle; for a failure its scenario, replay, memory plot and thread timeline)",
    )


def pytest_configure(config: pytest.Config) -> None:
    for oracle in MARKERS.values():
        config.addinivalue_line("markers", marker_help(oracle))
    # A shared example database (a fleet of fuzzing workers, CI and developers): every
    # Hypothesis test uses it, as HypoFuzz requires.
    url = os.environ.get("KUBESIM_DATABASE") or ""
    option = config.getoption("kubesim_database", default=None) or ""
    if option.startswith(("redis://", "rediss://", "unix://")):
        url = option
    if url:
        from kubesim.testing.fuzz import use_database

        try:
            use_database(url)
        except ValueError as exc:
            raise pytest.UsageError(f"kubesim: {exc}") from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    options = session_options(config)
    shown = []
    if options.seed_given:
        shown.append(f"seed {options.seed}")
    if options.examples is not None:
        shown.append(f"examples {options.examples}")
    if options.database is not None:
        shown.append(f"database {options.database}")
    return [f"kubesim: {', '.join(shown)}"] if shown else []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A fuzz_test's failures must replay wherever they were found. HypoFuzz keys a test's
    # examples by its pytest node id (it adds the id to the test's digest); plain pytest adds
    # the id only to parametrized tests. Adding it here too gives both the same key, so a
    # failure a fleet of HypoFuzz workers saved is the first thing a pytest run replays.
    for item in items:
        inner = getattr(getattr(getattr(item, "obj", None), "hypothesis", None), "inner_test", None)
        if getattr(inner, FLEET_TEST_ATTRIBUTE, False):
            inner._hypothesis_internal_add_digest = item.nodeid.encode()  # type: ignore[union-attr]


def pytest_runtest_setup(item: pytest.Item) -> None:
    # The oracle markers mean something only on a store test; elsewhere they would be silently
    # ignored, which reads as "checked" when nothing was.
    marked = [m.name for m in item.iter_markers() if m.name in MARKERS]
    if marked and not getattr(getattr(item, "obj", None), STORE_TEST_ATTRIBUTE, False):
        pytest.fail(
            f"{item.nodeid}: @pytest.mark.{marked[0]} applies to kubesim store tests only "
            "(test_x = kubesim.testing.store_test(factory), or @kubesim.testing.store_property)",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    # pytest prints captured output (the store's logs) below the failure message: repeat the
    # replay command after it, so that the last line of a failure is always the replay.
    replay = item.stash.get(REPLAY_KEY, None)
    if replay is not None and report.when == "call" and report.failed and report.sections:
        report.sections.append(("kubesim replay", replay))
    return report


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture
def kubesim_seed(request: pytest.FixtureRequest) -> int:
    """The session's ``--kubesim-seed`` (0 unless given)."""
    return session_options(request.config).seed


@pytest.fixture
def kubesim_server(kubesim_seed: int) -> APIServer:
    """A fresh fake API server, seeded with ``--kubesim-seed``."""
    from kubesim.apiserver.server import APIServer

    return APIServer(seed=kubesim_seed)


@pytest.fixture
def kubesim_simulation(kubesim_seed: int) -> Iterator[Simulation]:
    """A :class:`kubesim.Simulation` seeded with ``--kubesim-seed``; stopped at teardown."""
    from kubesim.sim.simulation import Simulation

    simulation = Simulation(seed=kubesim_seed)
    try:
        yield simulation
    finally:
        simulation.stop()


@pytest.fixture
def kubesim_client(kubesim_simulation: Simulation) -> Iterator[Any]:
    """An in-process ``kubernetes.client.ApiClient`` on the simulation's server (no sockets)."""
    client = kubesim_simulation.kubernetes_client()
    try:
        yield client
    finally:
        client.close()
