"""An informer with a resync period whose update handler acts on every call, before and after.

Upstream: oracle/oci-native-ingress-controller issue #140, fixed by PR #141. The controller
builds its informers with a resync period of one minute (``main.go``); the Ingress informer's
``UpdateFunc`` (``pkg/controllers/ingress/ingress.go``) logs "Updating ingress", counts an
update in the ``ingress_updation_count`` metric and queues the ingress for reconciliation.
client-go calls ``UpdateFunc(old, new)`` not only for real changes but for *every* cached
object at every resync tick, with ``old`` and ``new`` the same version; and when a relist
replaces the store, for every object it lists, changed or not. So every minute the controller
counted (and reconciled) every ingress in the cluster as updated: churn that never happened.
The fix compares resourceVersions and ignores an update whose version did not change (the
same check many controllers carry: kubernetes' ReplicaSet and Deployment handlers, say).

The model keeps the informer's shape on the official client: list, watch from the list's
resourceVersion, re-watch from the last one when a watch ends or is cut, relist (a consistent
read) after a 410 or an error, with backoff; the relist hands every listed object that was
already known to ``on_update(old, new)``, as client-go's ``Replace`` does. A second thread
(the reflector's resync timer) calls ``on_update(obj, obj)`` for every cached object every
:data:`RESYNC_PERIOD` seconds. The side effect is the handler's: one update operation per
call, keyed ``(uid, resourceVersion)`` of the new object (``effects()``), so the same version
handled twice is a duplicate. Adds are not counted: a restarted controller adds (and
reconciles) every object again by design. The objects are pods, the objects kubesim's
scenarios change; the upstream informer watches Ingresses.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

JSON = dict[str, Any]

RESYNC_PERIOD = 60.0  # main.go: the informer factory's resync period, one minute
MAX_BACKOFF = 30.0


def _key(obj: JSON) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def _version(obj: JSON) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta["uid"], meta["resourceVersion"])


class IngressController:
    """An informer (indexer, reflector, resync timer) and the controller's event handlers."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        skip_unchanged: bool,
        resync_period: float = RESYNC_PERIOD,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.skip_unchanged = skip_unchanged
        self.resync_period = resync_period
        self._lock = threading.Lock()  # the indexer's lock
        self.indexer: dict[str, JSON] = {}
        self.resource_version = ""
        self.performed: list[tuple[str, str]] = []  # update operations since effects()

    # -- the reflector -----------------------------------------------------------------------
    def run(self) -> None:
        threading.Thread(target=self._resync_loop, name="resync", daemon=True).start()
        backoff = 1.0
        while True:
            try:
                self._relist()
                while self._watch():  # it ended or was cut: watch again from the last RV
                    backoff = 1.0  # a watch was open: the trouble is over
            except client.ApiException:
                time.sleep(backoff)  # refused: back off, then list again
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        fresh = {_key(pod): pod for pod in listed["items"]}
        with self._lock:
            old, self.indexer = self.indexer, dict(fresh)
            self.resource_version = listed["metadata"]["resourceVersion"]
        # client-go's Replace: every listed object is an update of what was known, or an add;
        # what was known and is not listed is a delete.
        for key, pod in fresh.items():
            if key in old:
                self.on_update(old[key], pod)
            else:
                self.on_add(pod)
        for key in old.keys() - fresh.keys():
            self.on_delete(old[key])

    def _watch(self) -> bool:
        """One watch from the last RV; True to watch again, False to relist (410)."""
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
        except client.ApiException as error:
            if error.status == 410:
                return False
            raise
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired in the stream: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                key = _key(obj)
                with self._lock:
                    before = self.indexer.get(key)
                    if kind == "DELETED":
                        self.indexer.pop(key, None)
                    else:
                        self.indexer[key] = obj
                if kind == "DELETED":
                    self.on_delete(obj)
                elif before is None:
                    self.on_add(obj)
                else:
                    self.on_update(before, obj)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    def _resync_loop(self) -> None:
        """The resync timer: every period, ``on_update(obj, obj)`` for every cached object."""
        while True:
            time.sleep(self.resync_period)
            with self._lock:
                cached = list(self.indexer.values())
            for obj in cached:
                self.on_update(obj, obj)

    # -- the controller's handlers (ingress.go) ----------------------------------------------
    def on_add(self, obj: JSON) -> None:
        pass  # counted as a creation and queued; not the subject here

    def on_update(self, old: JSON, new: JSON) -> None:
        if self.skip_unchanged and (
            old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]
        ):
            return  # PR #141: a resync, not an update
        # IncrementIngressUpdateOperation() and queue the ingress for reconciliation.
        self.performed.append(_version(new))

    def on_delete(self, obj: JSON) -> None:
        pass

    # -- hooks -------------------------------------------------------------------------------
    def view(self) -> dict[str, JSON]:
        with self._lock:
            return dict(self.indexer)

    def effects(self) -> list[tuple[str, str]]:
        """The update operations since the last call, each keyed (uid, resourceVersion)."""
        done, self.performed = self.performed, []
        return done

    def sizes(self) -> dict[str, int]:
        return {"indexer": len(self.indexer)}


def counts_every_update(api_client: client.ApiClient) -> IngressController:
    """Before PR #141: every UpdateFunc call, resyncs included, is an update operation."""
    return IngressController(api_client, skip_unchanged=False)


def skips_resyncs(api_client: client.ApiClient) -> IngressController:
    """After PR #141: an update whose resourceVersion did not change is ignored."""
    return IngressController(api_client, skip_unchanged=True)
