"""The ``kubesim`` command line.

``kubesim restarts``: run stores across watch restarts in the deterministic simulation and
report the memory they retain (the KubeArmor reproduction is the README's main job).
``kubesim serve``: the fake API server on a real HTTP port, for kubectl and any client.
``kubesim schedule``: run one controlled thread schedule again (the replay ``explore`` prints).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK = 0
EXIT_EXPECTATION_FAILED = 1
EXIT_USAGE = 2


def load_factory(spec: str) -> Any:
    """Resolve ``module:attribute`` (e.g. ``models.kubearmor:before_pr1553``) to a callable.

    The current directory is importable, as for ``python -m``, so a repository's own
    ``models`` or ``tests`` packages can be named.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise argparse.ArgumentTypeError(
            "expected a store factory as module:attribute "
            f"(e.g. models.kubearmor:before_pr1553), got {spec!r}"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise argparse.ArgumentTypeError(
            f"cannot import {module_name!r} for {spec!r}: {exc}"
        ) from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise argparse.ArgumentTypeError(
                f"{module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(target):
        raise argparse.ArgumentTypeError(f"{spec!r} is not callable")
    return target


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubesim",
        description=(
            "Deterministic simulation and property testing for Kubernetes client-side stores."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True)

    restarts = commands.add_parser(
        "restarts",
        help="run stores across watch restarts and report the memory they retain",
        description=(
            "Run each store (module:factory) against the fake API server in the deterministic "
            "simulation: N pods, then R watch restarts. After every restart, print what the store "
            "retains. --leaky/--bounded state what you expect; the exit status is 1 if a store "
            "does not behave as stated."
        ),
    )
    restarts.add_argument("stores", nargs="*", metavar="MODULE:FACTORY", help="stores to measure")
    restarts.add_argument(
        "--leaky",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="a store expected to grow (repeatable)",
    )
    restarts.add_argument(
        "--bounded",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="a store expected to stay bounded (repeatable)",
    )
    restarts.add_argument("--pods", type=_positive, default=100)
    restarts.add_argument("--containers", type=_positive, default=2, help="containers per pod")
    restarts.add_argument("--namespaces", type=_positive, default=2)
    restarts.add_argument("--restarts", type=_positive, default=20)
    restarts.add_argument(
        "--fault",
        choices=("expire", "drop"),
        default="expire",
        help="how watches end: clean close (expire) or abrupt cut (drop)",
    )
    restarts.add_argument("--seed", default="0")
    restarts.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="bytes per restart a bounded store may grow (default: 1%% of its size, >= 1 KiB)",
    )
    restarts.add_argument(
        "--plot", metavar="PNG", help="draw memory over restarts to this PNG file"
    )

    serve = commands.add_parser(
        "serve",
        help="serve the fake API server over HTTP (kubectl, client-go, any client)",
        description=(
            "Serve the fake Kubernetes API server over HTTP. The first line printed holds its URL."
        ),
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: loopback only)"
    )
    serve.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="allow --host to name a non-loopback address (off by default)",
    )
    serve.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    serve.add_argument(
        "--history-window",
        type=_positive,
        default=None,
        metavar="N",
        help="events kept for watch replay and continue tokens",
    )
    serve.add_argument("--bookmark-interval", type=float, default=60.0, metavar="SECONDS")
    serve.add_argument("--kubeconfig", metavar="PATH", help="write a kubeconfig for clients here")
    serve.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a generated self-signed CA (its certificate goes in the kubeconfig)",
    )
    serve.add_argument(
        "--token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every request (401 otherwise)",
    )
    serve.add_argument("--seed", default="0")
    serve.add_argument("--pods", type=int, default=0, help="pre-populate this many pods")

    from kubesim.cli.schedule import add_parser as add_schedule

    add_schedule(commands)
    return parser


def _seed(text: str) -> int | str:
    return int(text) if text.lstrip("-").isdigit() else text


def cmd_restarts(args: argparse.Namespace) -> int:
    from kubesim.sim.restarts import RestartReport, RestartRound, run_watch_restarts

    plan: list[tuple[str, str | None]] = [(s, None) for s in args.stores]
    plan += [(s, "grows") for s in args.leaky] + [(s, "bounded") for s in args.bounded]
    if not plan:
        print(
            "kubesim restarts: name at least one store (MODULE:FACTORY, --leaky or --bounded)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        factories = [(spec, load_factory(spec), expect) for spec, expect in plan]
    except argparse.ArgumentTypeError as exc:
        print(f"kubesim restarts: {exc}", file=sys.stderr)
        return EXIT_USAGE
    seed = _seed(args.seed)
    print(
        f"kubesim restarts: {args.pods} pods x {args.containers} containers in {args.namespaces} "
        f"namespaces, {args.restarts} watch restarts ({args.fault}), seed {seed}"
    )
    reports: list[RestartReport] = []
    for spec, factory, _ in factories:
        print(f"\n== {spec}")
        print(f"{'restart':>7} {'retained bytes':>15} {'growth':>12}  sizes")

        shown: list[RestartRound] = []

        def show(done: RestartRound, shown: list[RestartRound] = shown) -> None:
            shown.append(done)
            growth = done.retained_bytes - shown[0].retained_bytes
            sizes = " ".join(f"{k}={v}" for k, v in sorted(done.sizes.items()))
            print(f"{done.round:>7} {done.retained_bytes:>15,} {growth:>+12,}  {sizes}", flush=True)

        report = run_watch_restarts(
            factory,
            name=spec.split(":")[-1],
            seed=seed,
            pods=args.pods,
            containers=args.containers,
            namespaces=args.namespaces,
            restarts=args.restarts,
            fault=args.fault,
            tolerance_per_round=args.tolerance,
            on_round=show,
        )
        reports.append(report)
    failures = 0
    print("\n== verdict")
    for (spec, _, expect), report in zip(factories, reports, strict=False):
        verdict = "GROWS" if report.grows else "BOUNDED"
        print(
            f"{spec}: {verdict}, {report.growth_per_round:+,.0f} bytes per restart "
            f"(trace {report.trace_hash[:16]})"
        )
        if report.violation is not None:
            for line in str(report.violation).splitlines():
                print(f"    {line}")
        if expect is not None and (expect == "grows") != report.grows:
            failures += 1
            print(f"    expected it to be {'leaky' if expect == 'grows' else 'bounded'}: FAILED")
    replay = " ".join(
        [
            "kubesim restarts",
            *args.stores,
            *(f"--leaky {s}" for s in args.leaky),
            *(f"--bounded {s}" for s in args.bounded),
            f"--pods {args.pods}",
            f"--containers {args.containers}",
            f"--namespaces {args.namespaces}",
            f"--restarts {args.restarts}",
            f"--fault {args.fault}",
            f"--seed {args.seed}",
        ]
    )
    if args.plot:
        from kubesim.cli.plot import plot_restarts

        plot_restarts(reports, args.plot)
        print(f"\npicture: {args.plot}")
    print(f"replay: {replay}")
    return EXIT_EXPECTATION_FAILED if failures else EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from kubesim.cli.serve import cmd_serve

    return cmd_serve(args)


def _schedule(args: argparse.Namespace) -> int:
    from kubesim.cli.schedule import cmd_schedule

    return cmd_schedule(args)


COMMANDS = {"restarts": cmd_restarts, "serve": _serve, "schedule": _schedule}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # subcommands are required: argparse exits on none
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
