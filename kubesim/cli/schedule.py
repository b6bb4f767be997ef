"""``kubesim schedule``: run one schedule of a scenario again, the replay ``explore`` prints.

    kubesim schedule MODULE:SCENARIO --seed SEED --strategy "PCT(2, steps=1000)"
        [--traced MODULE_OR_PATH ...] [--granularity opcode|line] [--max-steps N] [--max-time T]

Prints the outcome (the failure's type and the first lines of its message, or that it passed)
and ``trace <hash>``, which is the trace hash ``explore`` reported for the same schedule.
Exit status: 1 if the schedule failed, 0 if it passed, 2 for a usage error (strategy text that
does not parse, a scenario or traced module that does not import).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType
from typing import Any

from kubesim.sched.scheduler import DEFAULT_MAX_STEPS

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
# How much of a failure message to print: enough for the assertion and the first stack lines.
MESSAGE_LINES = 12


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``schedule`` on the ``kubesim`` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "schedule",
        help="run one schedule of a thread scenario again (the replay explore prints)",
        description=(
            "Run one controlled schedule of MODULE:SCENARIO (a function of no arguments that "
            "starts the store's threads) and print its outcome and trace hash. The exit status "
            "is 1 if the schedule failed, 0 if it passed."
        ),
    )
    parser.add_argument("scenario", metavar="MODULE:SCENARIO", help="the scenario function")
    parser.add_argument("--seed", required=True, help="the schedule's seed (e.g. 0/17)")
    parser.add_argument(
        "--strategy",
        required=True,
        metavar="TEXT",
        help='RandomWalk(p), PCT(depth, steps=k) or Preemptions([step, ...]), e.g. "PCT(2, '
        'steps=1000)"',
    )
    parser.add_argument(
        "--traced",
        action="append",
        default=[],
        metavar="MODULE_OR_PATH",
        help="code that gets scheduling points: an importable module, or a file or directory "
        "path (repeatable)",
    )
    parser.add_argument("--granularity", choices=("opcode", "line"), default="opcode")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N")
    parser.add_argument("--max-time", type=_number, default=None, metavar="SECONDS")
    return parser


def _number(text: str) -> int | float:
    """An int when the text is one: ``max_time=30`` and ``30.0`` read differently in the
    failure message, which is in the trace, so a replay passes the number as it was given."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


class _Usage(Exception):
    """A user mistake on the command line; the message says which argument and why."""


def _traced(text: str) -> str | ModuleType:
    """A path when the text looks like one (or exists), else a module to import."""
    if os.sep in text or text.endswith(".py") or os.path.exists(text):
        if not os.path.exists(text):
            raise _Usage(f"--traced {text!r}: no such file or directory")
        return text
    try:
        return importlib.import_module(text)
    except ImportError as exc:
        raise _Usage(f"--traced {text!r}: cannot import it as a module ({exc})") from None


def cmd_schedule(args: argparse.Namespace) -> int:
    from kubesim.cli.arguments import load_factory
    from kubesim.sched.explore import run_schedule
    from kubesim.sched.strategies import InvalidStrategy, describe_strategy, parse_strategy

    try:
        module, colon, name = args.scenario.partition(":")
        if not (module and colon and name):
            raise _Usage(
                "expected the scenario as MODULE:SCENARIO (e.g. tests.races:lost_update), "
                f"got {args.scenario!r}"
            )
        try:
            scenario = load_factory(args.scenario)
        except argparse.ArgumentTypeError as exc:
            raise _Usage(str(exc)) from None
        try:
            strategy = parse_strategy(args.strategy)
        except InvalidStrategy as exc:
            raise _Usage(f"--strategy: {exc}") from None
        traced = [_traced(text) for text in args.traced]
        if args.max_steps < 1:
            raise _Usage(f"--max-steps must be >= 1, got {args.max_steps}")
        if args.max_time is not None and args.max_time < 0:
            raise _Usage(f"--max-time must be >= 0, got {args.max_time}")
    except _Usage as exc:
        print(f"kubesim schedule: {exc}", file=sys.stderr)
        return EXIT_USAGE
    result = run_schedule(
        scenario,
        seed=args.seed,
        strategy=strategy,
        traced=traced,
        granularity=args.granularity,
        max_steps=args.max_steps,
        max_time=args.max_time,
    )
    print(
        f"kubesim schedule {args.scenario}: seed {args.seed}, {describe_strategy(strategy)}, "
        f"{args.granularity} points: {result.steps} steps, {result.preemptions} preemptions, "
        f"{result.threads} threads, virtual time {result.virtual_time:.3f} s"
    )
    if result.failure is None:
        print("passed")
    else:
        lines = str(result.failure).splitlines() or [""]
        print(f"FAILED: {type(result.failure).__name__}: {lines[0]}")
        for line in lines[1:MESSAGE_LINES]:
            print(f"    {line}")
        if len(lines) > MESSAGE_LINES:
            print(f"    ... ({len(lines) - MESSAGE_LINES} more lines)")
    print(f"trace {result.trace_hash}")
    return EXIT_PASSED if result.failure is None else EXIT_FAILED
