"""Each client library's own configuration loading, pointed at the simulation.

lightkube (``KubeConfig.from_env()``, ``Client()``), kr8s (``kr8s.api()``,
``kr8s.asyncio.api()``), pykube-ng (``KubeConfig.from_env()``) and most other clients find their
cluster the same way: in-cluster configuration when ``KUBERNETES_SERVICE_HOST`` is set (and a
service account is mounted), else the kubeconfig file ``KUBECONFIG`` names. :func:`pointed_env`
sets ``KUBECONFIG`` to a kubeconfig kubesim wrote (cluster ``http://kubesim.invalid``, a bearer
token user, namespace ``default``) and hides the in-cluster variables for the length of a block,
so a store that loads its configuration as in production gets the simulation, through the
library's own loader. The transports of :mod:`kubesim.transport.http_clients` answer for that
host. Everything is restored afterwards.

The file is written once per process and kept until it exits: a client may read it again later
(kr8s re-reads it to re-authenticate). The environment is process-wide, like the patches.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator

from kubesim.transport.http import write_kubeconfig
from kubesim.transport.routing import KUBESIM_URL

TOKEN = "kubesim"
"""The bearer token of the kubeconfig's user (the in-process server accepts any)."""

NAMESPACE = "default"
"""The kubeconfig context's namespace: what ``Client().namespace`` and kr8s default to."""

# Variables that make a loader take the in-cluster path (pykube-ng has its own prefix).
IN_CLUSTER = (
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "PYKUBE_KUBERNETES_SERVICE_HOST",
    "PYKUBE_KUBERNETES_SERVICE_PORT",
)

_lock = threading.Lock()
_path: str | None = None


def kubeconfig_path() -> str:
    """The kubeconfig kubesim points ``KUBECONFIG`` at (written on first use)."""
    global _path
    with _lock:
        if _path is None:
            directory = tempfile.mkdtemp(prefix="kubesim-")
            path = os.path.join(directory, "kubeconfig")
            write_kubeconfig(path, KUBESIM_URL, namespace=NAMESPACE, token=TOKEN)
            atexit.register(_remove, directory, path)
            _path = path
        return _path


def _remove(directory: str, path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)
        os.rmdir(directory)


@contextlib.contextmanager
def pointed_env() -> Iterator[str]:
    """``KUBECONFIG`` names kubesim's kubeconfig and no in-cluster variable is set, inside the
    block; yields the file's path."""
    path = kubeconfig_path()
    names = ("KUBECONFIG", *IN_CLUSTER)
    saved = {name: os.environ.get(name) for name in names}
    os.environ["KUBECONFIG"] = path
    for name in IN_CLUSTER:
        os.environ.pop(name, None)
    try:
        yield path
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


__all__ = ["NAMESPACE", "TOKEN", "kubeconfig_path", "pointed_env"]
