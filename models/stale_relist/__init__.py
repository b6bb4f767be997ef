"""A reflector whose relist goes back in time, before and after the fix.

Upstream: kubernetes/kubernetes #59848 (a reflector relisted with ``resourceVersion=0`` after
a watch failure: "0" means "any version", served from the apiserver's watch cache, which can
lag behind what the client has already seen, so the cache jumped back in time and deleted
objects came back), fixed by relisting from the last synced resourceVersion
(``resourceVersionMatch=NotOlderThan`` semantics: never older than what the client had);
kube-state-metrics #1679 is the same family on a lagging replica.

The model's first list is a consistent read (``resourceVersion`` unset), as a fresh process
does; after any watch failure it relists. The bug: that relist asks for ``resourceVersion=0``.
The fix: it asks for the last resourceVersion it synced, and when the cache is behind even
that ("Too large resource version", 504) it backs off and tries again, instead of accepting
older data.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

JSON = dict[str, Any]


def _key(obj: JSON) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class Reflector:
    def __init__(self, api_client: client.ApiClient, *, relist_from_last_rv: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.relist_from_last_rv = relist_from_last_rv
        self.cache: dict[str, JSON] = {}
        self.resource_version = ""

    def run(self) -> None:
        first = True
        while True:
            try:
                self._list(first)
                first = False
                while self._watch():
                    pass
            except client.ApiException:
                time.sleep(1)  # refused (a lagging cache, a 5xx): back off, then list again

    def _list(self, first: bool) -> None:
        if first:
            version = ""  # a consistent read: what a fresh process does
        elif self.relist_from_last_rv:
            version = self.resource_version  # never older than what we had
        else:
            version = "0"  # the bug: "any version", from a cache that may lag
        response = self.core.list_pod_for_all_namespaces(
            resource_version=version or None, _preload_content=False
        )
        listed = json.loads(response.data)
        self.cache = {_key(pod): pod for pod in listed["items"]}
        self.resource_version = listed["metadata"]["resourceVersion"]

    def _watch(self) -> bool:
        """One watch from the last RV; False on any failure to relist."""
        response = self.core.list_pod_for_all_namespaces(
            watch=True, resource_version=self.resource_version, _preload_content=False
        )
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return False
                obj = event["object"]
                self.resource_version = obj["metadata"]["resourceVersion"]
                if event["type"] == "DELETED":
                    self.cache.pop(_key(obj), None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    self.cache[_key(obj)] = obj
        except ProtocolError:
            pass  # cut: watch again from the last RV
        return True

    def view(self) -> dict[str, JSON]:
        return dict(self.cache)

    def sizes(self) -> dict[str, int]:
        return {"cache": len(self.cache)}


def relist_any_version(api_client: client.ApiClient) -> Reflector:
    """Before kubernetes #59848 was fixed: relist with resourceVersion=0."""
    return Reflector(api_client, relist_from_last_rv=False)


def relist_not_older(api_client: client.ApiClient) -> Reflector:
    """After: relist from the last synced resourceVersion, back off while the cache lags."""
    return Reflector(api_client, relist_from_last_rv=True)
