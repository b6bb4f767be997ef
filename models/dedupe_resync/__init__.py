"""A handled-version cache in front of an update handler, under informer resyncs: leak or prune.

No single upstream report covers this exact store; the model is built on the closest real code
and reports. client-go's shared informer (``staging/src/k8s.io/client-go/tools/cache/
shared_informer.go``: ``HandleDeltas``/``processDeltas``, the resync timer of ``Reflector`` and
``DeltaFIFO.Resync``) calls ``UpdateFunc(old, new)`` for every cached object at every resync period,
with ``old`` and ``new`` the same version, and for every listed object on a relist (PR #87957:
relisted objects whose resourceVersion did not change are resync events). Handlers that act on
every call re-send old changes: kubeshop/botkube #123 ("BotKube sends older update events after
resync", and #1081 years later), vmware-archive/eventrouter PR #53, KestrelAI/Kestrel-Operator PR
#44 ("re-syncing stale K8s events every 5 minutes"), oracle/oci-native-ingress-controller #140
(``models/resync_handler``). The documented remedy is the check in the update handler of
``kubernetes/sample-controller``: "Periodic resync will send update events for all known
Deployments. Two different versions of the same Deployment will always have different RVs." The
other common remedy, a cache of what was already handled in front of the handler (kopf PR #230,
argoproj/argo-workflows PR #3350, ``models/dedup_set``), works for resyncs but carries the leak
this model is about.

The store: an informer (reflector, indexer, resync timer) whose update handler sends each new
version of a pod to an external sink (a notification, an export, a reconcile). In front of the
sink sits a dedupe cache ``uid -> resourceVersion last sent``: an update whose version was already
sent is dropped, which is what makes resyncs and relists harmless.

Buggy (``never_forgets_handled``): the cache is the only guard and it is never pruned: a DELETED
event does not remove the pod's uid, nor does a relist that no longer lists it (a delete missed
while disconnected). Pods are replaced under fresh uids all day (rollouts, Jobs, evictions), so the
cache grows with churn while the cluster stays the same size, and holds entries a freshly started
process would not have. Fixed (``prunes_and_skips_resyncs``): the handler first drops updates whose
resourceVersion did not change (the sample-controller check: a resync or a no-op relist), and the
cache is pruned on DELETED (tombstones included) and, after each relist, to the listed uids.

The model runs the informer on the official client: list, watch from the last resourceVersion,
re-watch after a clean end or a cut, relist after a 410 (updates for listed pods, tombstones for
vanished ones), back off after API errors, and a resync thread that calls ``on_update(obj, obj)``
for every cached pod every :data:`RESYNC_PERIOD` seconds; notifications are delivered one at a
time, as a listener's are. ``effects()`` reports the sink's sends, keyed ``(uid, resourceVersion)``
of the version sent; adds are not counted (a restarted process announces every object again by
design). ``expects()`` names the send a MODIFIED change calls for. ``sizes()`` counts the indexer
and the dedupe cache.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]

RESYNC_PERIOD = 30.0  # sample-controller's informer factory: time.Second*30
MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    key: str
    obj: Pod


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _version(pod: Pod) -> tuple[str, str]:
    return (pod["metadata"]["uid"], pod["metadata"]["resourceVersion"])


class Notifier:
    """An informer, its resync timer, and the handler with its dedupe cache in front of a sink."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        prune: bool,
        resync_period: float = RESYNC_PERIOD,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.prune = prune
        self.resync_period = resync_period
        self._indexer_lock = threading.Lock()
        self.indexer: dict[str, Pod] = {}
        self.resource_version = ""
        self._listener_lock = threading.Lock()  # a listener gets one notification at a time
        self.sent: dict[str, str] = {}  # the dedupe cache: uid -> resourceVersion last sent
        self.performed: list[tuple[str, str]] = []

    # -- the reflector -----------------------------------------------------------------------
    def run(self) -> None:
        threading.Thread(target=self._resync_loop, name="resync", daemon=True).start()
        backoff = 1.0
        while True:
            try:
                self._relist()
                while self._watch():  # it ended or was cut: watch again from the last RV
                    backoff = 1.0  # a watch was open: the trouble is over
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)  # refused: back off, then list again
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        fresh = {_key(pod): pod for pod in listed["items"]}
        with self._indexer_lock:
            old, self.indexer = self.indexer, dict(fresh)
            self.resource_version = listed["metadata"]["resourceVersion"]
        with self._listener_lock:
            for key, last in old.items():
                if key not in fresh:
                    self.on_delete(DeletedFinalStateUnknown(key, last))
            for key, pod in fresh.items():
                if key in old:
                    self.on_update(old[key], pod)
                else:
                    self.on_add(pod)
            if self.prune:
                # The fix: a uid the list no longer has was deleted, seen or not.
                listed_uids = {pod["metadata"]["uid"] for pod in fresh.values()}
                self.sent = {uid: rv for uid, rv in self.sent.items() if uid in listed_uids}

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
                with self._indexer_lock:
                    before = self.indexer.get(key)
                    if kind == "DELETED":
                        self.indexer.pop(key, None)
                    else:
                        self.indexer[key] = obj
                with self._listener_lock:
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
        """The resync timer: every period, ``on_update(obj, obj)`` for every cached pod."""
        while True:
            time.sleep(self.resync_period)
            with self._indexer_lock:
                cached = list(self.indexer.values())
            for obj in cached:
                with self._listener_lock:
                    self.on_update(obj, obj)

    # -- the handlers ------------------------------------------------------------------------
    def on_add(self, obj: Pod) -> None:
        uid, rv = _version(obj)
        self.sent[uid] = rv  # announced as new; not an update

    def on_update(self, old: Pod, new: Pod) -> None:
        if self.prune and old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]:
            return  # the sample-controller check: a resync or a no-op relist
        uid, rv = _version(new)
        if self.sent.get(uid) == rv:
            return  # the dedupe cache: this version was sent already
        self.sent[uid] = rv
        self.performed.append((uid, rv))  # the sink: one send per new version

    def on_delete(self, obj: Pod | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self.prune:
            self.sent.pop(pod["metadata"]["uid"], None)  # the fix

    # -- hooks -------------------------------------------------------------------------------
    def view(self) -> dict[str, Pod]:
        with self._indexer_lock:
            return dict(self.indexer)

    def effects(self) -> list[tuple[str, str]]:
        """The sink's sends since the last call, keyed (uid, resourceVersion)."""
        with self._listener_lock:
            done, self.performed = self.performed, []
        return done

    def expects(self, event: dict[str, Any]) -> tuple[str, str] | None:
        """A MODIFIED change calls for one send of the version it produced."""
        if event.get("type") != "MODIFIED":
            return None
        return _version(event["object"])

    def sizes(self) -> dict[str, int]:
        return {"indexer": len(self.indexer), "sent": len(self.sent)}


def never_forgets_handled(api_client: client.ApiClient) -> Notifier:
    """Before: the dedupe cache is the only resync guard and is never pruned."""
    return Notifier(api_client, prune=False)


def prunes_and_skips_resyncs(api_client: client.ApiClient) -> Notifier:
    """After: same-RV updates are skipped; the cache is pruned on delete and after relists."""
    return Notifier(api_client, prune=True)
