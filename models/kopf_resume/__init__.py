"""An operator whose handlers run again on every reconnect, before and after the fix.

Upstream: zalando-incubator/kopf #223, #113, #214 -> PR #229 (it re-listed on every reconnect,
about once a minute, and fed every listed object in as an event, so ``@kopf.on.resume``
handlers ran again and again; the fix keeps watching from the last resourceVersion and relists
only on 410) and PR #230 (an in-memory per-object "already handled" mark). The same family:
flyteorg/flyte #6988 / PR #7037 (a watch with no resourceVersion: duplicate ADDED on every
reconnect), dotnet/dotnet-operator-sdk #585 / PR #780 (a watcher timeout re-emits Added and
triggers a reconcile).

The operator's handler has a side effect once per object (registering it with an external
system, sending a welcome message): ``effects()`` lists them keyed by the object's uid. The
bug: every watch end is a relist, and every listed object goes to the handler again. The fix:
re-watch from the last resourceVersion, relist only on 410, and keep the "done" mark where a
restart finds it, on the object itself (an annotation, as kopf's progress storage does), not
in memory: an in-memory mark forgets everything when the operator restarts.
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


DONE = "operator.example.com/registered"


class Operator:
    def __init__(self, api_client: client.ApiClient, *, fixed: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.fixed = fixed
        self.objects: dict[str, JSON] = {}
        self.performed: list[str] = []  # the side effects since effects() was last called
        self.resource_version = ""

    def run(self) -> None:
        while True:
            try:
                self._list_and_resume()
                while self._watch() and self.fixed:
                    pass  # the fix: watch again from the last RV; the bug: relist every time
            except client.ApiException:
                time.sleep(1)

    def _list_and_resume(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        self.objects = {_key(pod): pod for pod in listed["items"]}
        for pod in listed["items"]:
            self.handle(pod)  # @kopf.on.resume: every listed object
        self.resource_version = listed["metadata"]["resourceVersion"]

    def _watch(self) -> bool:
        """One watch; True to watch again from the last RV, False to relist (410)."""
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
                    self.objects.pop(_key(pod), None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    self.objects[_key(pod)] = pod
                    if event["type"] == "ADDED":
                        self.handle(pod)
        except ProtocolError:
            pass
        return True

    def handle(self, pod: JSON) -> None:
        meta = pod["metadata"]
        if self.fixed and (meta.get("annotations") or {}).get(DONE):
            return  # done before, by this process or an earlier one
        self.performed.append(meta["uid"])
        if self.fixed:
            self.core.patch_namespaced_pod(
                meta["name"], meta["namespace"], {"metadata": {"annotations": {DONE: "true"}}}
            )

    def view(self) -> dict[str, JSON]:
        return dict(self.objects)

    def effects(self) -> list[str]:
        """The side effects since the last call (the harness's sink; then forgotten)."""
        done, self.performed = self.performed, []
        return done

    def sizes(self) -> dict[str, int]:
        return {"objects": len(self.objects)}


def relist_on_reconnect(api_client: client.ApiClient) -> Operator:
    """Before kopf PR #229/#230: every reconnect re-lists and resumes every object."""
    return Operator(api_client, fixed=False)


def watch_from_last_rv(api_client: client.ApiClient) -> Operator:
    """After: re-watch from the last RV, relist on 410 only, the done mark kept on the object."""
    return Operator(api_client, fixed=True)
