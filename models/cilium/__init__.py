"""Cilium's service backend cache: deletions lost across a relist, before and after the fix.

Upstream: cilium/cilium PR #38779 ("k8s: fix missing service endpoints delete events"); the
same family: #24740 / PR #25499 (clustermesh watchers restarted after a reconnect: the initial
relist yields only upserts, so keys deleted during the gap stay), issue #48050 (EndpointSlice
removals dropped after an apiserver reconnect).

An informer keeps a store; when its watch breaks for longer than the server keeps history,
the re-watch gets 410 and the reflector relists. The listing is *replaced* into the store, and
every key the store held that the listing lacks is delivered to the delete handler wrapped in
a tombstone (client-go's ``DeletedFinalStateUnknown``: "deleted, final state unknown"), since
the real DELETED event was never seen. Cilium's handler only removed backends when handed the
object itself, so a tombstone was dropped silently: traffic kept going to pods long gone.

The fix unwraps the tombstone. The model keeps its backends keyed ``namespace/name`` with the
pod each one came from; ``view()`` is that map, the service's belief.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

JSON = dict[str, Any]


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """A delete discovered by a relist: the key, and the last state the store had."""

    key: str
    obj: JSON


def _key(obj: JSON) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class BackendCache:
    """An informer (list, watch from the RV, relist on 410) feeding service backends."""

    def __init__(self, api_client: client.ApiClient, *, unwrap_tombstones: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.unwrap_tombstones = unwrap_tombstones
        self.known: dict[str, JSON] = {}  # the informer's store
        self.backends: dict[str, JSON] = {}  # what the service load-balances to
        self.resource_version = ""

    # -- the informer ------------------------------------------------------------------------
    def run(self) -> None:
        while True:
            try:
                self._relist()
                while self._watch():
                    pass
            except client.ApiException:
                time.sleep(1)

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        fresh = {_key(pod): pod for pod in listed["items"]}
        for key, last in list(self.known.items()):
            if key not in fresh:  # gone while we were away: a tombstone
                del self.known[key]
                self.on_delete(DeletedFinalStateUnknown(key, last))
        for key, pod in fresh.items():
            self.known[key] = pod
            self.on_upsert(pod)
        self.resource_version = listed["metadata"]["resourceVersion"]

    def _watch(self) -> bool:
        """One watch from the last RV; False when the server says 410 (relist)."""
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True, resource_version=self.resource_version, _preload_content=False
            )
        except client.ApiException as error:
            if error.status == 410:
                return False
            raise
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return False
                pod = event["object"]
                self.resource_version = pod["metadata"]["resourceVersion"]
                if event["type"] == "DELETED":
                    self.known.pop(_key(pod), None)
                    self.on_delete(pod)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    self.known[_key(pod)] = pod
                    self.on_upsert(pod)
        except ProtocolError:
            pass  # cut: watch again from the last RV
        return True

    # -- the service's handlers --------------------------------------------------------------
    def on_upsert(self, pod: JSON) -> None:
        self.backends[_key(pod)] = pod

    def on_delete(self, obj: JSON | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            if not self.unwrap_tombstones:
                return  # before PR #38779: not a pod, so nothing to remove
            obj = obj.obj
        self.backends.pop(_key(obj), None)

    def view(self) -> dict[str, JSON]:
        return dict(self.backends)

    def sizes(self) -> dict[str, int]:
        return {"known": len(self.known), "backends": len(self.backends)}


def drops_tombstones(api_client: client.ApiClient) -> BackendCache:
    """Before PR #38779: a delete found by a relist is ignored."""
    return BackendCache(api_client, unwrap_tombstones=False)


def unwraps_tombstones(api_client: client.ApiClient) -> BackendCache:
    """After PR #38779: the tombstone's last state is removed like any deleted pod."""
    return BackendCache(api_client, unwrap_tombstones=True)
