"""A pod cache on kr8s (asyncio), as a kr8s user writes one: list every pod, then
``async_watch`` from the list's resourceVersion; relist when the watch ends or fails.

The kind is kr8s' ``Pod`` class, not the string ``"pods"``: a string makes kr8s look the kind up
in the API's discovery documents (two dozen requests) on every list and watch.
``kr8s.asyncio.api()`` reads its kubeconfig as in production (``KUBECONFIG``): under
``kubesim check`` kubesim's, and its httpx client reaches the simulation.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import kr8s
import kr8s.asyncio
from kr8s.asyncio.objects import Pod


def key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class PodCache:
    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}

    async def relist(self, api: Any) -> str:
        async with api.async_get_kind(Pod, namespace=kr8s.ALL) as (_kind, response):
            listed = response.json()
        self.pods = {key(pod): pod for pod in listed["items"]}
        return str(listed["metadata"]["resourceVersion"])

    async def run(self) -> None:
        api = await kr8s.asyncio.api()
        while True:
            try:
                version = await self.relist(api)
                async for change, pod in api.async_watch(Pod, namespace=kr8s.ALL, since=version):
                    if change == "DELETED":
                        self.pods.pop(key(pod.raw), None)
                    else:
                        self.pods[key(pod.raw)] = pod.raw
            except (httpx.HTTPError, kr8s.ServerError, kr8s.APITimeoutError):
                await asyncio.sleep(1)  # a cut, a 500, a 429: wait, then relist

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.pods)


def factory(api_client: Any) -> PodCache:
    return PodCache()
