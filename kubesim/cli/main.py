"""The ``kubesim`` command line.

``kubesim restarts``: run stores across watch restarts in the deterministic simulation and
report the memory they retain (the KubeArmor reproduction is the README's main job).
``kubesim serve``: the fake API server on a real HTTP port, for kubectl and any client.
``kubesim schedule``: run one controlled thread schedule again (the replay ``explore`` prints).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence

from kubesim._version import __version__
from kubesim.cli.arguments import (
    EXIT_EXPECTATION_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    load_factory,
    seed,
)

__all__ = ["EXIT_EXPECTATION_FAILED", "EXIT_OK", "EXIT_USAGE", "load_factory", "main"]


def _node_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 250:
        raise argparse.ArgumentTypeError(f"expected a node count from 0 to 250, got {text!r}")
    return value


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
        allow_abbrev=False,
        description=(
            "Deterministic simulation and property testing for Kubernetes client-side stores."
        ),
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"kubesim {__version__} (Python {platform.python_version()})",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    restarts = commands.add_parser(
        "restarts",
        allow_abbrev=False,  # --pod must not be taken for --pods
        help="run stores across watch restarts and report the memory they retain",
        description=(
            "Run each store (module:factory) against the fake API server in the deterministic "
            "simulation: N pods, then R watch restarts. After every restart, print what the store "
            "retains (bytes reachable from the store and its module's globals) and its sizes(). "
            "--leaky/--bounded state what you expect; the exit status is 1 if a store does not "
            "behave as stated, crashes or stops watching, 2 on a usage error."
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
    restarts.add_argument(
        "--churn",
        type=int,
        default=0,
        metavar="N",
        help="before every restart, replace the N oldest pods by new ones (default 0)",
    )
    restarts.add_argument("--seed", default="0")
    restarts.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help=(
            "bytes per restart a bounded store may grow (default: 0.05%% of what it retains, at "
            "least 256; see docs/explanation/memory-oracle.md). A sizes() entry that grows is "
            "a leak whatever the tolerance"
        ),
    )
    restarts.add_argument(
        "--plot", metavar="PNG", help="draw memory over restarts to this PNG file"
    )

    serve = commands.add_parser(
        "serve",
        allow_abbrev=False,
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
    serve.add_argument(
        "--nodes",
        type=_node_count,
        default=1,
        metavar="N",
        help="nodes that schedule and start pods, node-0 ... node-N-1 (1; 0 leaves pods Pending)",
    )
    serve.add_argument(
        "--no-controllers",
        dest="controllers",
        action="store_false",
        help="no Deployment, ReplicaSet, StatefulSet, DaemonSet or endpoints controllers, no "
        "garbage collector and no kube-root-ca.crt ConfigMaps: with --nodes 0, an API server "
        "alone, as envtest runs one",
    )
    serve.add_argument(
        "--no-system-pods",
        dest="system_pods",
        action="store_false",
        help="leave kube-system empty: no control-plane pods, CoreDNS or kube-proxy (they run "
        "only with nodes and controllers)",
    )
    serve.add_argument(
        "--no-metrics-server",
        dest="metrics_server",
        action="store_false",
        help="serve no metrics.k8s.io API and run no metrics-server, as a kind or kubeadm "
        "cluster starts (its pods and nodes resources are not listed twice by api-resources)",
    )
    serve.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="log every request to stderr, one access-log line each (client, request line, "
        "status): what a client under test sends",
    )

    from kubesim.cli.schedule import add_parser as add_schedule

    add_schedule(commands)
    from kubesim.cli.check import add_parsers as add_check

    add_check(commands)
    return parser


def cmd_restarts(args: argparse.Namespace) -> int:
    from kubesim.sim.restarts import (
        BOUNDED,
        GROWS,
        RestartReport,
        RestartRound,
        run_watch_restarts,
    )
    from kubesim.sim.store import StoreContractError

    plan: list[tuple[str, str | None]] = [(s, None) for s in args.stores]
    plan += [(s, GROWS) for s in args.leaky] + [(s, BOUNDED) for s in args.bounded]
    if not plan:
        print(
            "kubesim restarts: name at least one store (MODULE:FACTORY, --leaky or --bounded)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not 0 <= args.churn <= args.pods:
        print(
            f"kubesim restarts: --churn must be between 0 and --pods ({args.pods}), "
            f"got {args.churn}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.tolerance is not None and args.tolerance < 0:
        print(f"kubesim restarts: --tolerance must be >= 0, got {args.tolerance}", file=sys.stderr)
        return EXIT_USAGE
    try:
        factories = [(spec, load_factory(spec), expect) for spec, expect in plan]
    except argparse.ArgumentTypeError as exc:
        print(f"kubesim restarts: {exc}", file=sys.stderr)
        return EXIT_USAGE
    seed_value = seed(args.seed)
    print(
        f"kubesim restarts: {args.pods} pods x {args.containers} containers in {args.namespaces} "
        f"namespaces, {args.restarts} watch restarts ({args.fault}), seed {seed_value}"
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

        try:
            report = run_watch_restarts(
                factory,
                name=spec.split(":")[-1],
                seed=seed_value,
                pods=args.pods,
                containers=args.containers,
                namespaces=args.namespaces,
                restarts=args.restarts,
                fault=args.fault,
                churn=args.churn,
                tolerance_per_round=args.tolerance,
                on_round=show,
            )
        except StoreContractError as exc:
            print(f"kubesim restarts: {spec}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        reports.append(report)
    failures = 0
    print("\n== verdict")
    for (spec, _, expect), report in zip(factories, reports, strict=False):
        verdict = report.verdict
        if report.failure is None:
            verdict += f", {report.growth_per_round:+,.0f} bytes per restart"
        print(f"{spec}: {verdict} (trace {report.trace_hash[:16]})")
        for line in report.explain():
            print(f"    {line}")
        if report.failure is not None:
            failures += 1
        elif expect is not None and expect != report.verdict:
            failures += 1
            print(f"    expected it to be {'leaky' if expect == GROWS else 'bounded'}: FAILED")
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
            *([f"--churn {args.churn}"] if args.churn else []),
            f"--seed {args.seed}",
            *([f"--tolerance {args.tolerance:g}"] if args.tolerance is not None else []),
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


def _check(args: argparse.Namespace) -> int:
    from kubesim.cli.check import cmd_check

    return cmd_check(args)


def _replay(args: argparse.Namespace) -> int:
    from kubesim.cli.check import cmd_replay

    return cmd_replay(args)


COMMANDS = {
    "restarts": cmd_restarts,
    "serve": _serve,
    "schedule": _schedule,
    "check": _check,
    "replay": _replay,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # subcommands are required: argparse exits on none
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        # The reader went away (`kubesim check ... | head`): not an error of the command. Point
        # stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
