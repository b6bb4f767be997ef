"""dask-gateway-server's Kubernetes ``Informer`` as a store for ``kubesim check``.

What runs is dask-gateway's own code, unchanged
(``dask_gateway_server.backends.kubernetes.utils.Informer``): the cache that the gateway's
``KubeBackend`` keeps of its DaskCluster objects and the ``KubeController`` keeps of pods,
endpoints and DaskClusters. It lists, watches from the list's resourceVersion in 10 s watches,
and lists again (calling ``on_delete`` for each key the list lacks) after a 410 or any error.

The store is a pod informer built as the controller builds its ``"pod"`` informer, on a plain
``CoreV1Api`` as the backend builds its client (the controller wraps its clients in a
``RateLimitedClient``; ``controller_factory`` does the same). ``view()`` is the informer's cache,
keyed ``namespace/name`` (the informer keys ``namespace.name``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from dask_gateway_server.backends.kubernetes.utils import Informer, RateLimitedClient
from dask_gateway_server.utils import RateLimiter
from kubernetes_asyncio import client


class InformerStore:
    def __init__(self, api: Any) -> None:
        self.deleted: list[str] = []
        self.running: asyncio.Task[None] | None = None
        self.informer = Informer(
            name="pod",
            client=api,
            method="list_pod_for_all_namespaces",
            on_update=lambda obj, old=None: None,
            on_delete=lambda obj: self.deleted.append(obj["metadata"]["uid"]),
        )

    async def run(self) -> None:
        self.running = asyncio.current_task()
        await self.informer.start()  # lists once, starts the watch task
        await self.informer._task  # the informer's loop: it never returns

    def view(self) -> dict[str, Any]:
        pods = self.informer.__dict__.get("cache", {}).values()
        return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}

    read = view  # what informer.get() serves, as a whole

    def effects(self) -> list[str]:
        """The uids ``on_delete`` was called for since the last call."""
        done, self.deleted = self.deleted, []
        return done

    def expects(self, event: dict[str, Any]) -> str | None:
        """Every delete calls for ``on_delete`` (the controller cleans up after it)."""
        return event["object"]["metadata"]["uid"] if event["type"] == "DELETED" else None

    async def stop(self) -> None:
        await self.informer.stop()
        # start() waits for a first list that a stopped informer never makes: as the gateway's
        # shutdown (GracefulExit) abandons its setup(), the store ends its run().
        if self.running is not None:
            self.running.cancel()


async def factory(api_client: Any) -> InformerStore:
    return InformerStore(client.CoreV1Api(api_client))


async def controller_factory(api_client: Any) -> InformerStore:
    """As ``KubeController.setup`` builds it: the client behind its default rate limiter."""
    limiter = RateLimiter(rate=50, burst=100)
    return InformerStore(RateLimitedClient(client.CoreV1Api(api_client), limiter))
