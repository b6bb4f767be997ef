"""A pod cache on pykube-ng, as a pykube user writes one: list with a query, then watch it from
the list's resourceVersion (``since=now``); relist when the watch ends, fails or says ERROR.

``KubeConfig.from_env()`` finds kubesim's kubeconfig under ``kubesim check``, and the
``requests`` session pykube builds reaches the simulation. pykube applies its default timeout
(10 s) to watches too: a quiet watch ends with a read timeout, and the cache relists.
"""

from __future__ import annotations

import time
from typing import Any

import pykube
import requests
from pykube.query import now


def key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class PodCache:
    def __init__(self) -> None:
        self.api = pykube.HTTPClient(pykube.KubeConfig.from_env())
        self.pods: dict[str, dict[str, Any]] = {}

    def run(self) -> None:
        while True:
            try:
                query = pykube.Pod.objects(self.api, namespace=pykube.all)
                self.pods = {key(pod.obj): pod.obj for pod in query}
                for event in query.watch(since=now):
                    if event.type == "ERROR":  # 410 Gone: the version is too old
                        break
                    if event.type == "DELETED":
                        self.pods.pop(key(event.object.obj), None)
                    else:
                        self.pods[key(event.object.obj)] = event.object.obj
            except (requests.exceptions.RequestException, pykube.exceptions.HTTPError):
                # a cut, a read timeout, an error answer (pykube's own for a watch's)
                time.sleep(1)

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.pods)


def factory(api_client: Any) -> PodCache:
    return PodCache()
