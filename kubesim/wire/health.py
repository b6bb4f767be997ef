"""``/healthz``, ``/livez`` and ``/readyz``, as kube-apiserver answers them.

Each endpoint runs a list of named checks (k8s.io/apiserver pkg/server/healthz): the plain
endpoint answers ``ok``; ``?verbose`` lists every check as ``[+]name ok`` and ends with
``{endpoint} check passed``; ``?exclude=name`` (repeatable) leaves checks out (``[-]`` is only
printed for failures, and none fails here); ``/{endpoint}/{name}`` runs one check, and an
unknown one is 404. Scripts written for a cluster wait on ``kubectl get --raw='/readyz?verbose'``.
"""

from __future__ import annotations

# The checks of a 1.33 kube-apiserver, trimmed to the common ones, in the order it prints them.
_LIVE = (
    "ping",
    "log",
    "etcd",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/bootstrap-controller",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/apiservice-registration-controller",
)
CHECKS = {
    "healthz": _LIVE,
    "livez": _LIVE,
    "readyz": ("ping", "log", "etcd", "etcd-readiness", "informer-sync", *_LIVE[3:], "shutdown"),
}


def answer(endpoint: str, check: str | None, verbose: bool, excluded: list[str]) -> bytes | None:
    """The text body for ``/{endpoint}[/{check}]``; None when the check does not exist."""
    names = CHECKS[endpoint]
    if check is not None:
        return b"ok" if check in names else None
    if not verbose:
        return b"ok"
    lines = [f"[+]{name} ok" for name in names if name not in excluded]
    return ("\n".join([*lines, f"{endpoint} check passed"]) + "\n").encode()
