"""One-line property tests for pytest: ``test_my_cache = store_test("mypackage.cache:factory")``.

:func:`store_test` returns a test function that pytest collects like any other. It runs
:func:`~kubesim.testing.check.check_store` with the session's ``--kubesim-seed``,
``--kubesim-examples`` and ``--kubesim-database``, honours the ``kubesim_<oracle>`` markers
(:mod:`kubesim.testing.marks`), and on a violation fails with kubesim's own report, not a
traceback through Hypothesis: the violations with their numbers, the shrunk scenario as lines,
and, last, the ``replay: kubesim replay ks1...`` line that runs the failing example again.

:func:`store_property` is the decorator form, for a factory that needs fixtures or setup::

    @store_property(kinds=["create", "expire"], examples=50)
    def test_my_cache(tmp_path):
        return functools.partial(MyCache, state_dir=tmp_path)

The replay command names the factory the way a fresh process can import it: the spec string
as given, else ``module:name`` for a module that imports by that name from the directory pytest
ran in (or is installed), else ``path/to/file.py:name``. A factory with no importable name (a
lambda, a closure, a ``partial``) still fails with its report; the report then says the replay
command cannot load it.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesim._core.words import counted
from kubesim.checks.store import checked_oracles
from kubesim.scenario.run import Setup, StoreFactory
from kubesim.testing.marks import STORE_TEST_ATTRIBUTE, missing_oracles, required_oracles
from kubesim.testing.strategies import DEFAULT_KINDS, _checked_kinds

if TYPE_CHECKING:
    import pytest

    from kubesim.testing.check import CheckReport

DEFAULT_EXAMPLES = 100


@dataclass(frozen=True)
class _Campaign:
    """What a store test checks, as written in the test module."""

    examples: int | None
    kinds: tuple[str, ...]
    setup: Setup | None
    max_steps: int
    traced: tuple[Any, ...]
    oracles: tuple[str, ...] | None
    max_time: float | None


def _campaign(
    *,
    examples: int | None,
    kinds: Sequence[str],
    setup: Setup | None,
    max_steps: int,
    traced: Sequence[Any],
    oracles: Sequence[str] | None,
    max_time: float | None,
) -> _Campaign:
    # Checked when the test module is imported: a bad argument is a collection error that names
    # it, not a failure of every run.
    if examples is not None and (not isinstance(examples, int) or examples < 1):
        raise ValueError(f"examples must be an int >= 1 or None, got examples={examples!r}")
    if setup is not None and not isinstance(setup, Setup):
        raise TypeError(f"setup must be a kubesim.testing.Setup, got setup={setup!r}")
    if not isinstance(max_steps, int) or max_steps < 0:
        raise ValueError(f"max_steps must be an int >= 0, got max_steps={max_steps!r}")
    if max_time is not None and not max_time > 0:
        raise ValueError(f"max_time must be > 0 seconds or None, got max_time={max_time!r}")
    return _Campaign(
        examples=examples,
        kinds=_checked_kinds(kinds),
        setup=setup,
        max_steps=max_steps,
        traced=tuple(traced),
        oracles=None if oracles is None else checked_oracles(oracles),
        max_time=max_time,
    )


def store_test(
    factory: StoreFactory | str,
    *,
    examples: int | None = None,
    kinds: Sequence[str] = DEFAULT_KINDS,
    setup: Setup | None = None,
    max_steps: int = 12,
    traced: Sequence[Any] = (),
    oracles: Sequence[str] | None = None,
    max_time: float | None = None,
) -> Callable[..., None]:
    """A pytest test function that property-tests the store ``factory`` builds.

    ``factory``: a callable ``factory(api_client) -> store``, or its spec
    (``"module:attribute"``, ``"path/to/file.py:attribute"``), resolved when the test runs.
    ``examples`` (default 100) is overridden by ``--kubesim-examples``; ``kinds`` narrows the
    step kinds drawn; ``oracles`` narrows the oracles that judge (as the ``kubesim_<oracle>``
    markers do, without requiring them); the other options are :func:`check_store`'s.
    """
    if not (callable(factory) or isinstance(factory, str)):
        raise TypeError(
            "factory must be a callable factory(api_client) -> store or a 'module:attribute' "
            f"spec, got factory={factory!r}"
        )
    campaign = _campaign(
        examples=examples,
        kinds=kinds,
        setup=setup,
        max_steps=max_steps,
        traced=traced,
        oracles=oracles,
        max_time=max_time,
    )

    def test(request: pytest.FixtureRequest) -> None:
        _run(request, campaign, lambda: factory)

    label = factory if isinstance(factory, str) else _name(factory)
    test.__name__ = test.__qualname__ = f"store_test({label})"
    test.__doc__ = f"kubesim property test of the store {label} builds."
    setattr(test, STORE_TEST_ATTRIBUTE, True)
    return test


def store_property(
    make: Callable[..., StoreFactory | str] | None = None,
    /,
    *,
    examples: int | None = None,
    kinds: Sequence[str] = DEFAULT_KINDS,
    setup: Setup | None = None,
    max_steps: int = 12,
    traced: Sequence[Any] = (),
    oracles: Sequence[str] | None = None,
    max_time: float | None = None,
) -> Any:
    """Decorator: the decorated function returns the factory; it may ask for pytest fixtures.

    ``@store_property`` or ``@store_property(examples=..., kinds=...)``; options as
    :func:`store_test`. The function runs once per test, before the campaign.
    """
    campaign = _campaign(
        examples=examples,
        kinds=kinds,
        setup=setup,
        max_steps=max_steps,
        traced=traced,
        oracles=oracles,
        max_time=max_time,
    )

    def decorate(make: Callable[..., StoreFactory | str]) -> Callable[..., None]:
        if not callable(make):
            raise TypeError(f"store_property decorates a function, got {make!r}")
        wanted = list(inspect.signature(make).parameters.values())

        def test(**fixtures: Any) -> None:
            request = fixtures["request"]
            arguments = {p.name: fixtures[p.name] for p in wanted}
            _run(request, campaign, lambda: make(**arguments))

        # pytest reads the fixtures a test asks for from its signature: the function's own,
        # plus ``request`` for the session's options and the markers.
        names = ["request", *(p.name for p in wanted if p.name != "request")]
        test.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names]
        )
        test.__name__ = make.__name__
        test.__qualname__ = make.__qualname__
        test.__module__ = make.__module__
        test.__doc__ = make.__doc__
        setattr(test, STORE_TEST_ATTRIBUTE, True)
        return test

    return decorate if make is None else decorate(make)


def _run(
    request: pytest.FixtureRequest,
    campaign: _Campaign,
    get_factory: Callable[[], StoreFactory | str],
) -> None:
    import pytest

    from kubesim.sim.store import StoreContractError, load_factory
    from kubesim.testing.check import NondeterminismDetected, check_store
    from kubesim.testing.pytest_plugin import REPLAY_KEY, session_options

    options = session_options(request.config)
    required = required_oracles(mark.name for mark in request.node.iter_markers())
    selected = campaign.oracles
    if required:
        selected = (*(selected or ()), *required)
    note: str | None = None
    try:
        target = get_factory()
        if isinstance(target, str):
            spec, note = target, None
            factory = load_factory(target)
        elif callable(target):
            factory = target
            spec, note = replay_spec(target, directory=str(request.config.invocation_params.dir))
        else:
            raise StoreContractError(
                f"a store_property function must return a factory or a spec, got {target!r}"
            )
        started = time.monotonic()
        report = check_store(
            factory,
            spec=spec,
            examples=options.examples or campaign.examples or DEFAULT_EXAMPLES,
            seed=options.seed,
            kinds=campaign.kinds,
            max_steps=campaign.max_steps,
            setup=campaign.setup,
            database=options.database,
            traced=campaign.traced,
            oracles=selected,
            max_time=campaign.max_time,
        )
    except (StoreContractError, NondeterminismDetected) as exc:
        pytest.fail(f"kubesim: {exc}", pytrace=False)
    if options.report is not None:
        from kubesim.report import write_report

        page = write_report(
            Path(options.report) / f"{_file_name(request.node.nodeid)}.html",
            report,
            seconds=time.monotonic() - started,
            seed=options.seed,
            factory=factory,
        )
        request.node.add_report_section("call", "kubesim report", str(page))
    text = failure_text(report, required=required, seed=options.seed, note=note)
    if text is not None:
        if report.found is not None:
            request.node.stash[REPLAY_KEY] = report.found.replay.command()
        pytest.fail(text, pytrace=False)
    request.node.add_report_section("call", "kubesim", summary(report, seed=options.seed))


def _file_name(nodeid: str) -> str:
    """A test's node id as a file name: ``tests/test_x.py::test_y[a]`` -> ``test_x.test_y-a``."""
    stem = nodeid.rsplit("/", 1)[-1].replace(".py::", ".").replace("::", ".")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-")


def summary(report: CheckReport, *, seed: int) -> str:
    """A few lines on what a campaign did: examples, seed, oracles run, not exercised, skipped,
    not selected."""
    from kubesim.checks.store import NOT_SELECTED

    ran = ", ".join(sorted(report.ran)) or "none"
    examples = counted(report.examples, "example")
    lines = [f"{report.factory}: {examples}, seed {seed}", f"oracles run: {ran}"]
    if report.not_exercised:
        lines.append(
            "oracles not exercised: "
            + "; ".join(f"{n} ({why})" for n, why in sorted(report.not_exercised.items()))
        )
    skipped = sorted((n, why) for n, why in report.skipped.items() if why != NOT_SELECTED)
    if skipped:
        lines.append("oracles skipped: " + "; ".join(f"{n} ({why})" for n, why in skipped))
    unselected = sorted(n for n, why in report.skipped.items() if why == NOT_SELECTED)
    if unselected:
        lines.append(f"oracles not selected: {', '.join(unselected)}")
    return "\n".join(lines)


def failure_text(
    report: CheckReport, *, required: Sequence[str], seed: int, note: str | None = None
) -> str | None:
    """The failure message of a store test, or None when it passes; it ends with the replay."""
    missing = missing_oracles(required, ran=report.ran, skipped=report.skipped)
    if report.found is None and not missing:
        return None
    lines = []
    if report.found is not None:
        broke = ", ".join(dict.fromkeys(report.found.properties))
        lines.append(
            f"kubesim: {report.factory} broke {broke} after "
            f"{counted(report.examples, 'example')}, seed {seed}"
        )
    else:
        lines.append(
            f"kubesim: {report.factory}: {counted(report.examples, 'example')}, seed {seed}"
        )
    lines.extend(missing)
    lines.append(summary(report, seed=seed).split("\n", 1)[1])
    if report.found is not None:
        if note:
            lines.append(note)
        lines.append("")
        lines.append(str(report.found))
    return "\n".join(lines)


def _name(factory: Any) -> str:
    return str(getattr(factory, "__qualname__", None) or getattr(factory, "__name__", factory))


def replay_spec(factory: Any, *, directory: str) -> tuple[str, str | None]:
    """How ``kubesim replay``, run in ``directory``, names ``factory``; and a note if it can't.

    ``module:qualname`` when the module imports by that name from ``directory`` (or from
    anywhere: installed); else ``path/to/file.py:qualname`` (relative to ``directory`` when
    below it), which imports the file with its folder first on ``sys.path``.
    """
    module_name = getattr(factory, "__module__", None) or ""
    qualname = getattr(factory, "__qualname__", None) or ""
    module = sys.modules.get(module_name)
    fallback = f"{module_name}:{qualname}" if module_name and qualname else repr(factory)
    if (
        module is None
        or not qualname
        or "<" in qualname
        or _lookup(module, qualname) is not factory
    ):
        return fallback, (
            f"note: the factory {_name(factory)} is not a module-level name that "
            "`kubesim replay` can import; define it at module level (or pass a "
            "'module:attribute' spec) to replay the failure"
        )
    path = getattr(module, "__file__", None)
    if not path or module_name == "__main__":
        return fallback, None
    path = os.path.abspath(path)
    directory = os.path.abspath(directory)
    parts = module_name.split(".")
    by_name = os.path.join(directory, *parts)
    inside = path.startswith(directory + os.sep)
    if not inside or path in (by_name + ".py", os.path.join(by_name, "__init__.py")):
        return f"{module_name}:{qualname}", None
    return f"{os.path.relpath(path, directory)}:{qualname}", None


def _lookup(module: Any, qualname: str) -> Any:
    target = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target
