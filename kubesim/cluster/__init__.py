"""The cluster around the API server: kubelets, controllers, the control plane's objects.

Each module is one part of a real cluster, acting through the core's public verbs and its
extension points (:mod:`kubesim.apiserver.extensions`), never its internals;
:class:`~kubesim.cluster.cluster.Cluster` assembles them with the admission plugins
(:mod:`kubesim.admission`) around an :class:`~kubesim.apiserver.server.APIServer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.cluster.cluster import Cluster


def __getattr__(name: str) -> Any:
    # Lazy, so that importing one controller module does not assemble the whole cluster.
    if name == "Cluster":
        from kubesim.cluster.cluster import Cluster

        return Cluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Cluster"]
