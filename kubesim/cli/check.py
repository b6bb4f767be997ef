"""``kubesim check`` and ``kubesim replay``: a verdict on a store, and a failure run again.

``kubesim check MODULE_OR_FILE:FACTORY`` runs the default campaign (every step kind swarmed,
every oracle the store's hooks allow) and exits 0 when no property broke, 1 on a violation
(printed with its numbers, the shrunk scenario as lines, and the replay command), 2 on a usage
or harness error. ``kubesim replay TOKEN`` runs one example from its token and exits the same
way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from kubesim._core.words import counted, did_you_mean
from kubesim.cli.arguments import EXIT_EXPECTATION_FAILED, EXIT_OK, EXIT_USAGE, load_factory

FAULT_HELP = (
    "comma-separated step kinds to draw faults from (default: all but those --list-kinds marks "
    "opt-in)"
)
# Thread schedules per scenario with --races.
RACE_SCHEDULES = 8


def add_parsers(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="property-test a store: scenarios of faults and threads, shrunk to a replay",
        description=(
            "Run a campaign of generated scenarios (workload, faults and thread schedules drawn "
            "together by Hypothesis) against a store factory, judge each run with every oracle "
            "its hooks allow, and shrink the first failure to a short scenario that replays. "
            "Exit 0: no property broke; 1: a violation; 2: usage or harness error."
        ),
        allow_abbrev=False,
    )
    # Optional only for --list-kinds and --replay, which need no factory.
    check.add_argument("factory", metavar="MODULE_OR_FILE:FACTORY", nargs="?")
    check.add_argument("--examples", type=int, default=100, help="scenarios to run (100)")
    check.add_argument("--seed", type=int, default=0, help="campaign seed (0)")
    check.add_argument(
        "--max-time",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop drawing new examples after this many seconds of wall time",
    )
    check.add_argument("--max-steps", type=int, default=12, help="steps per scenario (12)")
    check.add_argument("--pods", type=int, default=6, help="pods the server starts with (6)")
    check.add_argument(
        "--kinds",
        metavar="RESOURCES",
        help="comma-separated resources the workload writes (jobs.batch,pods); default: the "
        "ones the store watches, else pods",
    )
    check.add_argument(
        "--objects",
        metavar="FILE",
        help="the starting world: a YAML or JSON manifest file, as kubectl apply -f takes it "
        "(CRDs in it are served; new objects of its kinds are clones of its first of each)",
    )
    check.add_argument(
        "--server-version",
        metavar="VERSION",
        help="the API server release the runs start as (1.14, 1.17, 1.27; default: the newest, "
        "1.33): the 410's reason, bookmarks, watch-list, consistent lists from the watch cache",
    )
    check.add_argument(
        "--controllers",
        action="store_true",
        help="run the cluster's kubelets and controllers (Deployment, ReplicaSet, Job, "
        "garbage collector, ...) in the simulation, on the virtual clock",
    )
    faults = check.add_mutually_exclusive_group()
    faults.add_argument("--faults", metavar="KINDS", help=FAULT_HELP)
    faults.add_argument(
        "--no-faults", action="store_true", help="draw only workload steps (no faults)"
    )
    check.add_argument(
        "--oracles",
        metavar="NAMES",
        help="comma-separated oracles to judge by (default: every one the store's hooks "
        "allow; failure always judges); see --list-oracles",
    )
    check.add_argument("--list-kinds", action="store_true", help="list step kinds and exit")
    check.add_argument("--list-oracles", action="store_true", help="list oracles and exit")
    check.add_argument(
        "--database",
        default=None,
        metavar="DIR",
        help="example database directory (.kubesim/examples), or :memory: for none",
    )
    check.add_argument(
        "--traced",
        action="append",
        default=[],
        metavar="MODULE",
        help="module whose code gets scheduling points (repeatable): races inside the store",
    )
    check.add_argument(
        "--races",
        action="store_true",
        help=f"try {RACE_SCHEDULES} thread schedules per scenario instead of one (the store's "
        "own module always gets scheduling points; --traced adds more)",
    )
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--report",
        metavar="FILE.html",
        help="write the report as one self-contained HTML page (verdict per oracle; for a "
        "failure its scenario, replay, memory plot and thread timeline; else the coverage)",
    )
    check.add_argument("--replay", metavar="TOKEN", help="run one example from its replay token")

    replay = commands.add_parser(
        "replay",
        help="run one example again from its replay token",
        description="Run the example a replay token describes; exit 1 if it still fails.",
        allow_abbrev=False,
    )
    replay.add_argument("token", metavar="TOKEN")
    replay.add_argument("--json", action="store_true", help="print the result as JSON")
    replay.add_argument("--report", metavar="FILE.html", help="write the result as an HTML page")


def _kinds(args: argparse.Namespace) -> list[str]:
    from kubesim.scenario.steps import STEP_KINDS

    workload = [row.kind for row in STEP_KINDS if not row.fault]
    if args.no_faults:
        return workload
    if args.faults:
        wanted = [k.strip() for k in args.faults.split(",") if k.strip()]
        known = {row.kind for row in STEP_KINDS if row.fault}
        unknown = [k for k in wanted if k not in known]
        if unknown:
            always = [k for k in unknown if k in workload]
            noun = "is a workload kind" if len(always) == 1 else "are workload kinds"
            why = (
                f"; {', '.join(always)} {noun}, always drawn"
                if always
                else did_you_mean(unknown[0], known)
            )
            raise argparse.ArgumentTypeError(
                f"--faults: unknown fault kind(s) {unknown}{why}; fault kinds are {sorted(known)}"
            )
        return workload + wanted
    return [row.kind for row in STEP_KINDS if row.default]


def _print_kinds() -> None:
    from kubesim.scenario.steps import STEP_KINDS

    width = max(len(row.kind) for row in STEP_KINDS)
    workload = [row for row in STEP_KINDS if not row.fault]
    faults = [row for row in STEP_KINDS if row.fault]
    print("workload (always drawn; --faults does not take them):")
    for row in workload:
        print(f"  {row.kind:<{width}} {'-':<10} {row.summary}")
    print("faults (--faults KIND,...; --no-faults draws none):")
    for row in faults:
        opt_in = "" if row.default else " (opt-in: only with --faults)"
        print(f"  {row.kind:<{width}} {row.fault:<10} {row.summary}{opt_in}")


def _print_oracles() -> None:
    from kubesim.checks.store import ORACLES

    for oracle in ORACLES:
        needs = ", ".join(f"{hook}()" for hook in oracle.needs) or "-"
        print(f"{oracle.name:<17} {needs:<22} {oracle.summary}")


def _oracles(args: argparse.Namespace) -> list[str] | None:
    from kubesim.checks.store import ORACLES

    if not args.oracles:
        return None
    wanted = [name.strip() for name in args.oracles.split(",") if name.strip()]
    known = [oracle.name for oracle in ORACLES]
    unknown = [name for name in wanted if name not in known]
    if unknown or not wanted:
        hint = did_you_mean(unknown[0], known) if unknown else ""
        raise argparse.ArgumentTypeError(
            f"--oracles: unknown oracle(s) {unknown or args.oracles!r}{hint}; oracles are {known}"
        )
    return wanted


def cmd_check(args: argparse.Namespace) -> int:
    if args.list_kinds:
        _print_kinds()
        return EXIT_OK
    if args.list_oracles:
        _print_oracles()
        return EXIT_OK
    if args.replay:
        return _replay(args.replay, as_json=args.json, report_path=args.report)
    if not args.factory:
        print(
            "kubesim check: the store's factory is required, as MODULE_OR_FILE:FACTORY "
            "(mystore.py:factory, mypackage.cache:factory)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        factory = load_factory(args.factory)
        kinds = _kinds(args)
        oracles = _oracles(args)
        traced = [_import(name) for name in args.traced]
        if args.report:
            _check_report_path(args.report)
    except argparse.ArgumentTypeError as exc:
        print(f"kubesim check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from kubesim.scenario.run import Setup
    from kubesim.testing.check import CheckReport, NondeterminismDetected, check_store
    from kubesim.workload.manifests import load_manifests

    try:
        setup = Setup(
            pods=args.pods,
            kinds=tuple(k.strip() for k in (args.kinds or "").split(",") if k.strip()),
            objects=tuple(load_manifests(args.objects)) if args.objects else (),
            controllers=args.controllers,
            server_version=args.server_version,
        )
    except ValueError as exc:
        print(f"kubesim check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    started = time.monotonic()
    progress = _Progress(args.examples, quiet=args.json)

    def on_example(report: CheckReport) -> None:
        progress.update(report)

    try:
        report = check_store(
            factory,
            spec=args.factory,
            examples=args.examples,
            seed=args.seed,
            kinds=kinds,
            max_steps=args.max_steps,
            setup=setup,
            database=args.database,
            traced=traced,
            on_example=on_example,
            max_time=args.max_time,
            oracles=oracles,
            schedules=RACE_SCHEDULES if args.races else 1,
        )
    except (ValueError, TypeError) as exc:  # StoreContractError is a ValueError
        progress.close()
        print(f"kubesim check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NondeterminismDetected as exc:
        # A verdict, not a crash: the same example did not give the same outcome twice, so no
        # replay token could be trusted. Said in one line, with what to look for.
        progress.close()
        if args.json:
            print(json.dumps({"factory": args.factory, "ok": False, "nondeterministic": str(exc)}))
        print(f"kubesim check {args.factory}: NONDETERMINISTIC: {exc}", file=sys.stderr)
        return EXIT_EXPECTATION_FAILED
    finally:
        progress.close()
    elapsed = time.monotonic() - started
    failure = None
    if report.found is not None and (args.json or args.report):
        from kubesim.report.data import failure_data

        # The shrunk example once more, with its timeline: the same run (same token).
        failure = failure_data(report.found, factory=factory)
    if args.json:
        print(json.dumps(_report_json(report, elapsed, failure), indent=2))
    else:
        _print_report(report, elapsed)
    if args.report:
        _write_report(args.report, report, elapsed, args.seed, failure, quiet=args.json)
    return EXIT_OK if report.ok else EXIT_EXPECTATION_FAILED


def _check_report_path(path: str) -> None:
    """Refuse a report path that cannot be written before the campaign runs, not after."""
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise argparse.ArgumentTypeError(f"--report {path}: is a folder; give a file name")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(
                    f"--report {path}: {parent} is a file, not a folder"
                )
            if not os.access(parent, os.W_OK):
                raise argparse.ArgumentTypeError(f"--report {path}: {parent} is not writable")
            return


def _write_report(
    path: str, report: Any, elapsed: float, seed: int | str, failure: Any, *, quiet: bool
) -> None:
    from kubesim.report import write_report

    target = write_report(path, report, seconds=elapsed, seed=seed, failure=failure)
    if not quiet:
        print(f"report: {target}")


def _import(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise argparse.ArgumentTypeError(f"--traced {name}: cannot import it: {exc}") from None


def _print_report(report: Any, elapsed: float) -> None:
    rate = report.examples / elapsed if elapsed > 0 else 0.0
    if report.ok:
        outcome = f"OK after {counted(report.examples, 'example')}"
        if report.out_of_time:
            outcome += " (--max-time spent: not the --examples asked for)"
    else:
        shrinking = report.examples - (report.found_at or report.examples)
        outcome = (
            f"FAILED at example {report.found_at}, shrunk in {shrinking} more "
            f"({counted(report.examples, 'example')} in all)"
        )
    print(f"kubesim check {report.factory}: {outcome} ({elapsed:.1f} s, {rate:.1f} examples/s)")
    print(f"oracles run: {', '.join(sorted(report.ran)) or 'none'}")
    for name, why in sorted(report.not_exercised.items()):
        print(f"oracle not exercised: {name} ({why})")
    for name, why in sorted(report.skipped.items()):
        print(f"oracle skipped: {name} ({why})")
    print(f"steps drawn: {_drawn(report)}")
    if report.found is not None:
        print()
        print(report.found)


def _drawn(report: Any) -> str:
    """Every step kind the campaign could draw with how many steps of it it drew, in table
    order (a kind ``--faults`` left out is not listed: it was never a candidate)."""
    from kubesim.scenario.steps import STEP_KINDS

    every = {row.kind for row in STEP_KINDS}
    enabled = every if report.enabled is None else set(report.enabled)
    return ", ".join(
        f"{row.kind} {report.kinds.get(row.kind, 0)}" for row in STEP_KINDS if row.kind in enabled
    )


def _report_json(report: Any, elapsed: float, failure: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "factory": report.factory,
        "ok": report.ok,
        "examples": report.examples,
        "found_at": report.found_at,
        "out_of_time": report.out_of_time,
        "seconds": round(elapsed, 3),
        "oracles": {
            "ran": sorted(report.ran),
            "not_exercised": dict(sorted(report.not_exercised.items())),
            "skipped": dict(sorted(report.skipped.items())),
        },
        "steps_drawn": dict(sorted(report.kinds.items())),
    }
    if failure is not None:
        out["failure"] = failure
    return out


def _replay(token: str, *, as_json: bool, report_path: str | None = None) -> int:
    from kubesim.checks.store import judge
    from kubesim.scenario.store_log import captured
    from kubesim.testing.check import Found
    from kubesim.testing.replay import InvalidReplayToken, parse_token, python_version

    try:
        replay = parse_token(token)
        # Loaded here for their usage errors; Replay.run finds them loaded.
        load_factory(replay.factory)
        for name in replay.traced:
            _import(name)
        if report_path is not None:
            _check_report_path(report_path)
    except (InvalidReplayToken, argparse.ArgumentTypeError) as exc:
        print(f"kubesim replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if replay.python and replay.python != python_version():
        print(
            f"kubesim replay: note: found on Python {replay.python}, replaying on "
            f"{python_version()}; thread schedules may not carry across versions",
            file=sys.stderr,
        )
    with captured() as log:
        result = replay.run(timeline=as_json or report_path is not None)
    verdict = judge(result.recording, only=replay.oracles)
    found = Found(verdict, result, replay, log)
    if report_path is not None:
        _write_replay_report(report_path, found, quiet=as_json)
    if as_json:
        from kubesim.report.data import failure_data

        print(json.dumps({"ok": verdict.ok, **failure_data(found)}, indent=2))
    elif verdict.ok:
        print(f"kubesim replay {replay.factory}: passed (trace {result.trace_hash[:16]})")
    else:
        print(f"kubesim replay {replay.factory}: FAILED")
        print(found)
    return EXIT_OK if verdict.ok else EXIT_EXPECTATION_FAILED


def _write_replay_report(path: str, found: Any, *, quiet: bool) -> None:
    """The page of one replayed example: a campaign of one."""
    from collections import Counter

    from kubesim.testing.check import CheckReport

    verdict = found.verdict
    drawn = Counter(step.kind for step in found.result.steps)
    report = CheckReport(
        factory=found.replay.factory,
        enabled=tuple(drawn),  # one example: what it could draw is what it drew
        examples=1,
        found=None if verdict.ok else found,
        ran=set(verdict.ran),
        skipped=dict(verdict.skipped),
        kinds=drawn,
        found_at=None if verdict.ok else 1,
    )
    from kubesim.report.data import failure_data

    _write_report(path, report, 0.0, 0, None if verdict.ok else failure_data(found), quiet=quiet)


def cmd_replay(args: argparse.Namespace) -> int:
    return _replay(args.token, as_json=args.json, report_path=args.report)


class _Progress:
    """A rich progress bar on a terminal (stderr); nothing when quiet or not a terminal."""

    def __init__(self, total: int, *, quiet: bool) -> None:
        self._bar: Any = None
        if quiet or not sys.stderr.isatty():
            return
        try:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        except ImportError:
            return
        self._bar = Progress(
            TextColumn("examples"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[found]}"),
            transient=True,
        )
        self._task = self._bar.add_task("check", total=total, found="")
        self._bar.start()

    def update(self, report: Any) -> None:
        if self._bar is not None:
            found = "" if report.ok else "failure found, shrinking"
            self._bar.update(self._task, completed=report.examples, found=found)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
