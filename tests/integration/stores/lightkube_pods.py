"""A pod cache on lightkube, as a lightkube user writes one: list, then watch from the list's
resourceVersion; after an error (410 Gone, a cut connection, a 500), wait a second and relist.

``Client()`` loads its configuration as in production (``KubeConfig.from_env()``); under
``kubesim check`` that is kubesim's kubeconfig, and its httpx2 client reaches the simulation.
"""

from __future__ import annotations

import time
from typing import Any

import httpx2
from lightkube import ALL_NS, Client
from lightkube.resources.core_v1 import Pod


def key(pod: Any) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


class PodCache:
    def __init__(self) -> None:
        self.client = Client()
        self.pods: dict[str, dict[str, Any]] = {}

    def relist(self) -> str:
        listed = self.client.list(Pod, namespace=ALL_NS)
        self.pods = {key(pod): pod.to_dict() for pod in listed}
        return listed.resourceVersion

    def run(self) -> None:
        while True:
            try:
                version = self.relist()
                for change, pod in self.client.watch(
                    Pod, namespace=ALL_NS, resource_version=version
                ):
                    self.apply(change, pod)
            except httpx2.HTTPError:  # a cut, or lightkube's ApiError (410 Gone, a 500)
                time.sleep(1)  # then relist

    def apply(self, change: str, pod: Any) -> None:
        if change == "DELETED":
            self.pods.pop(key(pod), None)
        else:
            self.pods[key(pod)] = pod.to_dict()

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.pods)


class MergingPodCache(PodCache):
    """The bug: a relist merges into the cache instead of replacing it, so a pod deleted while
    the watch was down stays in the cache for good."""

    def relist(self) -> str:
        listed = self.client.list(Pod, namespace=ALL_NS)
        self.pods.update({key(pod): pod.to_dict() for pod in listed})
        return listed.resourceVersion


def factory(api_client: Any) -> PodCache:
    return PodCache()


def merging(api_client: Any) -> MergingPodCache:
    return MergingPodCache()
