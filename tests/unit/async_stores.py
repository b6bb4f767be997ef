"""Async stores on kubernetes_asyncio, for the tests of ``kubesim check`` on async stores.

Each keeps a map ``namespace/name -> pod dict`` fed by list and watch, as a reflector written
with ``kubernetes_asyncio`` would. ``Reflector`` is correct; the others each carry one bug.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kubernetes_asyncio import client, config, watch


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class Reflector:
    """List, then watch from the list's resourceVersion; relist after a 410 or an error."""

    PAGE = 0  # list page size; 0: one request

    def __init__(self, api_client: Any = None) -> None:
        self.v1 = client.CoreV1Api(api_client)
        self.pods: dict[str, dict[str, Any]] = {}
        self.stopping = False
        self.task: asyncio.Task[None] | None = None

    async def list_pods(self) -> str:
        pods: dict[str, dict[str, Any]] = {}
        token = None
        while True:
            response = await self.v1.list_pod_for_all_namespaces(
                limit=self.PAGE or None, _continue=token, _preload_content=False
            )
            page = json.loads(await response.read())
            for pod in page["items"]:
                pods[_key(pod)] = pod
            token = page["metadata"].get("continue")
            if not token:
                self.pods = pods  # one assignment: readers see the old map or the new one
                return str(page["metadata"]["resourceVersion"])

    async def watch_pods(self) -> None:
        rv: str | None = None
        while not self.stopping:
            try:
                if rv is None:
                    rv = await self.list_pods()
                async with watch.Watch().stream(
                    self.v1.list_pod_for_all_namespaces,
                    resource_version=rv,
                    timeout_seconds=300,
                    _preload_content=False,
                ) as stream:
                    async for event in stream:
                        pod = event["raw_object"]
                        if event["type"] == "DELETED":
                            self.pods.pop(_key(pod), None)
                        else:
                            self.pods[_key(pod)] = pod
                        rv = pod["metadata"]["resourceVersion"]
            except client.ApiException as error:
                rv = None
                if error.status != 410:
                    await asyncio.sleep(1)
            except Exception:
                rv = None
                await asyncio.sleep(1)

    async def run(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.watch_pods())
        await self.task

    def view(self) -> dict[str, Any]:
        return self.pods

    def read(self) -> dict[str, Any]:
        return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}

    async def stop(self) -> None:
        self.stopping = True
        if self.task is not None:
            self.task.cancel()


class TornRelist(Reflector):
    """Relists in place: clears the map, then fills it page by page, awaiting each page.

    A consumer that reads between two pages (any task of the same loop, at the await) sees a
    cache that is neither the old state nor the new one.
    """

    PAGE = 2

    async def list_pods(self) -> str:
        self.pods.clear()
        token = None
        while True:
            response = await self.v1.list_pod_for_all_namespaces(
                limit=self.PAGE, _continue=token, _preload_content=False
            )
            page = json.loads(await response.read())
            for pod in page["items"]:
                self.pods[_key(pod)] = pod
            token = page["metadata"].get("continue")
            if not token:
                return str(page["metadata"]["resourceVersion"])


class IgnoresStop(Reflector):
    """stop() sets a flag the watch loop only reads after its watch ends (300 s away)."""

    async def stop(self) -> None:
        self.stopping = True


async def reflector(api_client: Any) -> Reflector:
    return Reflector(api_client)


async def paged_reflector(api_client: Any) -> Reflector:
    store = Reflector(api_client)
    store.PAGE = 2
    return store


async def torn_relist(api_client: Any) -> TornRelist:
    return TornRelist(api_client)


async def ignores_stop(api_client: Any) -> IgnoresStop:
    return IgnoresStop(api_client)


async def own_client(api_client: Any) -> Reflector:
    """Builds its own client, as a program run in a cluster would: kubesim points it."""
    await config.load_kube_config()
    return Reflector(client.ApiClient())


def plain_factory(api_client: Any) -> Reflector:
    """A plain factory whose store's run() is async: it ignores the official client it gets
    and builds an asyncio one (which kubesim points at the simulation)."""
    config.load_incluster_config()
    return Reflector(None)


class Projecting(Reflector):
    """Hands out projections: the identity the contract asks for, none of the object's fields."""

    kept: dict[str, dict[str, Any]] | None = None

    def view(self) -> dict[str, Any]:
        # The same projection object while the pod's version stands, as an index keeps them.
        kept = self.kept or {}
        self.kept = {
            key: kept[key]
            if key in kept and kept[key]["metadata"] == _identity(pod)["metadata"]
            else _identity(pod)
            for key, pod in self.pods.items()
        }
        return dict(self.kept)

    def read(self) -> dict[str, Any]:
        return self.view()


def _identity(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"metadata": {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}}


class ShieldedCleanup(Reflector):
    """Its run() closes a helper under asyncio.shield when cancelled, as kopf's schedulers do:
    the cleanup is a task of its own, started while the loop is being unwound."""

    closed: list[str] = []  # noqa: RUF012 (shared on purpose: the test reads it after the run)
    started: list[str] = []  # noqa: RUF012

    async def run(self) -> None:
        ShieldedCleanup.started.append("started")
        try:
            await super().run()
        finally:
            await asyncio.shield(self._close())

    async def _close(self) -> None:
        try:
            await asyncio.Event().wait()  # for workers that will never report back
        finally:
            ShieldedCleanup.closed.append("closed")


async def projecting(api_client: Any) -> Projecting:
    return Projecting(api_client)


async def shielded_cleanup(api_client: Any) -> ShieldedCleanup:
    return ShieldedCleanup(api_client)
