"""An operator that remembers, in memory, every object it has handled, before and after pruning.

Upstream: zalando-incubator/kopf PR #230, the second half of the fix for #223 (handlers of
``@kopf.on.resume`` ran again on every reconnect, see ``models/kopf_resume``): the operator keeps
a per-object, in-memory "already resumed" mark and skips objects that carry it. Its author
noted the cost: one entry per object the operator has ever seen, on big clusters. The same
remedy, with the same catch, is dotnet/dotnet-operator-sdk PR #780 (an entity cache that
swallows recurring Added events) and any "seen uids" set added in front of a handler.

The bug this model is about is that remedy's own: the set of handled uids only grows. A
DELETED event does not remove the uid, nor does a relist that no longer lists it (a delete the
operator missed while disconnected, after a 410). Deployments create pods under fresh names and
uids all day, so the set grows with churn while the cluster stays the same size: an unbounded
structure, and a slow memory leak in a process meant to run for months. The fix prunes the set
on DELETED and, after every relist, keeps only the uids that were listed.

The store otherwise is a correct reflector (list, watch from the last resourceVersion, re-watch
after a clean end or a cut, relist after a 410, back off after errors), so ``view()`` converges
in both variants. ``sizes()`` reports the set. There is no ``effects()`` hook: an in-memory mark
is forgotten when the operator restarts, and kopf runs resume handlers again in a new process by
design, so "once" here means once per process, which the hook cannot express.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

JSON = dict[str, Any]

MAX_BACKOFF = 30.0


def _key(obj: JSON) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class Operator:
    def __init__(self, api_client: client.ApiClient, *, prune: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.prune = prune
        self.objects: dict[str, JSON] = {}
        self.handled: set[str] = set()  # uids whose handler has run (kopf PR #230's mark)
        self.resource_version = ""
        self.handler_runs = 0

    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                self._relist()
                while self._watch():
                    backoff = 1.0  # a watch was open: the trouble is over
            except client.ApiException:
                time.sleep(backoff)  # refused: back off, then list again
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        self.objects = {_key(pod): pod for pod in listed["items"]}
        if self.prune:
            # The fix: what the list no longer has was deleted, seen or not.
            self.handled &= {pod["metadata"]["uid"] for pod in listed["items"]}
        for pod in listed["items"]:
            self.handle(pod)
        self.resource_version = listed["metadata"]["resourceVersion"]

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
                kind, pod = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired in the stream: relist
                self.resource_version = pod["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self.objects.pop(_key(pod), None)
                    if self.prune:
                        self.handled.discard(pod["metadata"]["uid"])  # the fix
                else:
                    self.objects[_key(pod)] = pod
                    self.handle(pod)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    def handle(self, pod: JSON) -> None:
        uid = pod["metadata"]["uid"]
        if uid in self.handled:
            return  # resumed before, in this process
        self.handled.add(uid)
        self.handler_runs += 1  # the once-per-object handler (a registration, a message)

    def view(self) -> dict[str, JSON]:
        return dict(self.objects)

    def sizes(self) -> dict[str, int]:
        return {"objects": len(self.objects), "handled": len(self.handled)}


def never_forgets(api_client: client.ApiClient) -> Operator:
    """The in-memory mark of kopf PR #230 as a set that is never pruned."""
    return Operator(api_client, prune=False)


def prunes_on_delete(api_client: client.ApiClient) -> Operator:
    """The set pruned on DELETED and to the listed uids after every relist."""
    return Operator(api_client, prune=True)
