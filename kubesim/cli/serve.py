"""``kubesim serve``: the fake API server over HTTP, with virtual time following the wall clock.

``--tls`` serves HTTPS with a CA generated for this run (kubesim.transport.tls; its files live in
a private temporary directory removed at exit) and ``--token`` requires a bearer token; both go
into the ``--kubeconfig`` written for clients.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import signal
import sys
import threading
import time

from kubesim._core import VirtualClock
from kubesim.apiserver.server import DEFAULT_HISTORY_WINDOW, APIServer
from kubesim.cluster import Cluster
from kubesim.cluster.root_ca import PLAIN_HTTP_PLACEHOLDER
from kubesim.transport.http import HTTPTransport, write_kubeconfig

# How often virtual time catches up with the wall clock (firing watch timeouts and bookmarks).
TICK_SECONDS = 0.05


def cmd_serve(args: argparse.Namespace) -> int:
    # Virtual time starts at the wall-clock time of start-up, so timestamps are today's and the
    # ages kubectl computes from them on the client side (`describe`, `get -o yaml`) agree
    # with the server's AGE column. The seed still decides uids and every other choice.
    started_at = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    tls_files = None
    if args.tls:
        from kubesim.transport.tls import generate

        try:
            tls_files = generate()
        except (ValueError, OSError, RuntimeError) as exc:
            print(f"kubesim serve: {exc}", file=sys.stderr)
            return 2
    bundle = tls_files.ca_pem.decode("ascii") if tls_files is not None else PLAIN_HTTP_PLACEHOLDER
    try:
        api = _build_server(args, started_at, bundle)
    except BaseException:
        if tls_files is not None:
            tls_files.cleanup()  # no private key is left behind
        raise
    try:
        transport = HTTPTransport(
            api,
            host=args.host,
            port=args.port,
            allow_non_loopback=args.allow_non_loopback,
            tls=tls_files.server_context() if tls_files is not None else None,
            token=args.token,
            verbose=args.verbose,
        )
    except (ValueError, OSError, RuntimeError) as exc:
        if tls_files is not None:
            tls_files.cleanup()
        print(f"kubesim serve: {exc}", file=sys.stderr)
        return 2
    transport.start()
    if args.kubeconfig:
        # Written before the banner: a script that starts the server and waits for its first
        # line may use the kubeconfig at once.
        write_kubeconfig(
            args.kubeconfig,
            transport.url,
            ca_pem=tls_files.ca_pem if tls_files is not None else None,
            token=args.token,
            client_cert_pem=tls_files.client_cert_pem if tls_files is not None else None,
            client_key_pem=tls_files.client_key_pem if tls_files is not None else None,
        )
    print(f"kubesim serving at {transport.url}", flush=True)
    if args.kubeconfig:
        print(f"kubeconfig written to {args.kubeconfig}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    started = time.monotonic()
    try:
        while not stop.wait(TICK_SECONDS):
            api.advance_to(time.monotonic() - started)
    except KeyboardInterrupt:
        pass
    finally:
        transport.close()
        if tls_files is not None:
            tls_files.cleanup()
    return 0


def _build_server(
    args: argparse.Namespace, started_at: _dt.datetime, root_ca_bundle: str
) -> APIServer:
    from kubesim.cli.arguments import seed as _seed

    api = Cluster(
        seed=_seed(args.seed),
        clock=VirtualClock(epoch=started_at),
        history_window=args.history_window or DEFAULT_HISTORY_WINDOW,
        bookmark_interval=args.bookmark_interval,
        # What a cluster does that clients and their tests look for: a `default` ServiceAccount
        # and (with the controllers) a `kube-root-ca.crt` ConfigMap in every namespace (the CA
        # that verifies this server, or a placeholder over plain HTTP), the two default
        # tolerations and the full defaults on every pod (and pod template), managedFields on
        # every object (named after the User-Agent when the request names no fieldManager),
        # pods that get scheduled and start, Deployments that make ReplicaSets that make pods,
        # owners whose deletion deletes what they own, nodes no kubelet reports on going
        # Unknown and losing their pods, and what a control plane writes at start-up (the
        # kubernetes Service; kube-system's pods when there are nodes and controllers).
        service_accounts=True,
        root_ca_bundle=root_ca_bundle if args.controllers else None,
        default_tolerations=True,
        pod_spec_defaults=True,
        field_managers_from_user_agent=True,
        nodes=args.nodes,
        controllers=args.controllers,
        node_lifecycle=args.controllers,
        control_plane=True,
        system_pods=args.system_pods and args.nodes > 0 and args.controllers,
        metrics_server=args.metrics_server and args.nodes > 0,
    )
    if args.pods:
        from kubesim.workload.pods import populate_pods

        # Spread over the served nodes, already running (the kubelets leave them as they are).
        populate_pods(api, api.choices.fork("workload"), pods=args.pods, nodes=max(args.nodes, 1))
    return api
