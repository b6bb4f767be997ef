"""Patroni's Kubernetes DCS as a store for ``kubesim check`` (patroni 4.1.5).

What runs is Patroni's own code, unchanged: ``get_dcs()`` builds ``patroni.dcs.kubernetes.
Kubernetes`` as a Patroni member does, which loads the kubeconfig ``KUBECONFIG`` names (under
kubesim, the simulation's; its context is ``kubesim``) and starts two ``ObjectCache`` threads,
each a list then a watch of one namespace, label-selected (``application=patroni,
cluster-name=demo``): the ConfigMaps that hold the leader lock, the configuration and the
failover key, and the member pods. Its requests go through its own ``urllib3.PoolManager``,
which kubesim routes in-process.

``CACHE`` says which of the two the store's view is: ``_kinds`` (ConfigMaps; check with
``--kinds configmaps --objects`` a ConfigMap labelled as Patroni labels them) or ``_pods``
(``--kinds pods``, and a Patroni pod). ``read()`` is the copy Patroni's ``get_cluster()``
takes of it (``ObjectCache.copy()``, under the cache's lock).
"""

from __future__ import annotations

import json
import os
from typing import Any

from patroni.dcs import get_dcs

CACHE = os.environ.get("PATRONI_CACHE", "_kinds")
CONFIG = {"name": "demo-0", "scope": "demo", "ttl": 30, "loop_wait": 10, "retry_timeout": 10}
KUBERNETES = {"labels": {"application": "patroni"}, "context": "kubesim"}


class PatroniCache:
    def __init__(self) -> None:
        self.dcs = get_dcs({**CONFIG, "kubernetes": dict(KUBERNETES)})
        self.cache = getattr(self.dcs, CACHE)

    def run(self) -> None:
        self.cache.join()  # the ObjectCache thread, started by Kubernetes(): it never returns

    def view(self) -> dict[str, Any]:
        return {f"default/{k}": json.loads(repr(v)) for k, v in self.cache.copy().items()}

    read = view


def factory(api_client: Any) -> PatroniCache:
    return PatroniCache()
