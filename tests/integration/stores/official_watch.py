"""Handlers fed by the official client's ``Watch().stream`` and kubernetes_asyncio's.

Each runs a handler once for every pod change, as the README's watch loop does: the first watch
has no resourceVersion (every pod as ``ADDED``, then the changes); after a cut it watches again
from ``Watch.resource_version``, where the ``Watch`` says the stream stood; after a 410 it takes
the changes from a fresh list's resourceVersion on. ``listing`` lists first and watches from the
list's resourceVersion, as client-go's reflector does. docs/findings/official-watch-replays-past.md

``RawPodCache`` lists, then watches from the list's resourceVersion with
``Watch().stream(..., deserialize=False)`` (plain dicts) and lists again after any API error;
its effects are the ``(uid, resourceVersion)`` of every event it applies.
docs/findings/official-watch-deserialize-false.md
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import kubernetes_asyncio.client
import kubernetes_asyncio.watch
from kubernetes import client, dynamic, watch
from urllib3.exceptions import HTTPError


class PodHandler:
    def __init__(self, api_client: Any, *, list_first: bool = False) -> None:
        self.v1 = client.CoreV1Api(api_client)
        self.list_first = list_first
        self.handled: list[tuple[str, str]] = []  # (uid, resourceVersion) of each change handled

    def run(self) -> None:
        since = self.latest() if self.list_first else None
        while True:
            w = watch.Watch()
            try:
                for event in w.stream(self.v1.list_pod_for_all_namespaces, resource_version=since):
                    meta = event["object"].metadata
                    self.handled.append((meta.uid, meta.resource_version))
            except client.ApiException as error:
                if error.status == 410:  # too old: the changes from a fresh list's on
                    w.resource_version = self.latest()
                time.sleep(1)
            except HTTPError:  # a cut connection
                time.sleep(1)
            since = w.resource_version  # where Watch says the stream stood

    def latest(self) -> str:
        while True:
            try:
                return self.v1.list_pod_for_all_namespaces().metadata.resource_version
            except (client.ApiException, HTTPError):
                time.sleep(1)

    def effects(self) -> list[tuple[str, str]]:
        done, self.handled = self.handled, []
        return done


class AsyncPodHandler:
    def __init__(self, api_client: Any) -> None:
        self.v1 = kubernetes_asyncio.client.CoreV1Api(api_client)
        self.handled: list[tuple[str, str]] = []

    async def run(self) -> None:
        since = None
        while True:
            w = kubernetes_asyncio.watch.Watch()
            try:
                async for event in w.stream(
                    self.v1.list_pod_for_all_namespaces, resource_version=since
                ):
                    meta = event["object"].metadata
                    self.handled.append((meta.uid, meta.resource_version))
            except kubernetes_asyncio.client.ApiException as error:
                if error.status == 410:
                    w.resource_version = await self.latest()
                await asyncio.sleep(1)
            except (aiohttp.ClientError, asyncio.TimeoutError):
                await asyncio.sleep(1)
            since = w.resource_version

    async def latest(self) -> str:
        errors = (kubernetes_asyncio.client.ApiException, aiohttp.ClientError, asyncio.TimeoutError)
        while True:
            try:
                return (await self.v1.list_pod_for_all_namespaces()).metadata.resource_version
            except errors:
                await asyncio.sleep(1)

    def effects(self) -> list[tuple[str, str]]:
        done, self.handled = self.handled, []
        return done


class RawPodCache:
    def __init__(self, api_client: Any) -> None:
        self.v1 = client.CoreV1Api(api_client)
        self.pods: dict[str, dict[str, Any]] = {}
        self.applied: list[tuple[str, str]] = []

    def run(self) -> None:
        while True:
            try:
                reply = self.v1.list_pod_for_all_namespaces(_preload_content=False)
                listed = json.loads(reply.data)
                self.pods = {_key(pod): pod for pod in listed["items"]}
                for event in watch.Watch().stream(
                    self.v1.list_pod_for_all_namespaces,
                    resource_version=listed["metadata"]["resourceVersion"],
                    deserialize=False,
                ):
                    pod = event["object"]
                    if event["type"] == "DELETED":
                        self.pods.pop(_key(pod), None)
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        self.pods[_key(pod)] = pod
                    meta = pod["metadata"]
                    self.applied.append((meta["uid"], meta["resourceVersion"]))
            except (client.ApiException, HTTPError):
                time.sleep(1)

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.pods)

    def effects(self) -> list[tuple[str, str]]:
        done, self.applied = self.applied, []
        return done


class DynamicPodHandler:
    """The DynamicClient: list, watch from the list's resourceVersion; after the stream ends (it
    ends at the server's end: ``DynamicClient.watch`` passes ``timeout_seconds``), watch again
    from ``Watch.resource_version``."""

    def __init__(self, api_client: Any) -> None:
        self.pods = dynamic.DynamicClient(api_client).resources.get(api_version="v1", kind="Pod")
        self.handled: list[tuple[str, str]] = []

    def run(self) -> None:
        since = None
        while True:
            try:
                if since is None:
                    since = self.pods.get().metadata.resourceVersion
                w = watch.Watch()
                for event in self.pods.watch(resource_version=since, watcher=w):
                    meta = event["object"].metadata
                    self.handled.append((meta.uid, meta.resourceVersion))
                since = w.resource_version
            except client.ApiException as error:
                if error.status == 410:
                    since = None
                time.sleep(1)
            except HTTPError:
                time.sleep(1)

    def effects(self) -> list[tuple[str, str]]:
        done, self.handled = self.handled, []
        return done


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def factory(api_client: Any) -> PodHandler:
    return PodHandler(api_client)


def listing(api_client: Any) -> PodHandler:
    return PodHandler(api_client, list_first=True)


async def async_factory(api_client: Any) -> AsyncPodHandler:
    return AsyncPodHandler(api_client)


def raw(api_client: Any) -> RawPodCache:
    return RawPodCache(api_client)


def dynamic_handler(api_client: Any) -> DynamicPodHandler:
    return DynamicPodHandler(api_client)
