"""Handlers fed by the official client's ``Watch().stream`` and kubernetes_asyncio's.

Each runs a handler once for every pod change, as the README's watch loop does: the first watch
has no resourceVersion (every pod as ``ADDED``, then the changes); after a cut it watches again
from ``Watch.resource_version``, where the ``Watch`` says the stream stood; after a 410 it takes
the changes from a fresh list's resourceVersion on. ``listing`` lists first and watches from the
list's resourceVersion, as client-go's reflector does. docs/findings/official-watch-replays-past.md
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import kubernetes_asyncio.client
import kubernetes_asyncio.watch
from kubernetes import client, watch
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


def factory(api_client: Any) -> PodHandler:
    return PodHandler(api_client)


def listing(api_client: Any) -> PodHandler:
    return PodHandler(api_client, list_first=True)


async def async_factory(api_client: Any) -> AsyncPodHandler:
    return AsyncPodHandler(api_client)
