"""A watcher on ``kubernetes.watch.Watch`` that reads every event as a pod, before and after.

Upstream: ``kubernetes-client/python`` issue #1729 ("Add support for bookmark events"; its PR
#1796 and the Airflow reports it cites, ``apache/airflow`` #21087 and PR #23578), and
``kubernetes/base/watch/watch.py`` (``Watch.unmarshal_event``).

Informers ask for bookmarks (``allowWatchBookmarks=true``): the server then sends, now and then,
a ``BOOKMARK`` event whose object carries only ``metadata.resourceVersion``. The official
client's ``Watch.stream`` deliberately does not turn such an event into the model class (it is
incomplete): ``event["object"]`` stays the raw dict. A watch loop written for ADDED, MODIFIED and
DELETED that reads ``event["object"].metadata.namespace`` and ``.name`` for every event (the
Airflow job watcher shape) raises ``AttributeError: 'dict' object has no attribute 'metadata'``
on the first bookmark, and the watcher thread dies. The fix: look at the event type first, skip
``BOOKMARK`` (keep its resourceVersion, which ``Watch`` already records) and act only on the
three object events.

Apart from that, both versions handle what a watch loop must: they list, watch from the list's
resourceVersion with ``Watch.stream`` (which re-watches once by itself after a 410 and then
raises ``ApiException(410)``), relist on 410, back off on other API errors, and watch again when
the connection is cut.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client, watch
from urllib3.exceptions import ProtocolError


class PodWatcher:
    """A list-then-watch pod cache on the official client's typed API and ``Watch.stream``."""

    def __init__(self, api_client: client.ApiClient, *, skip_bookmarks: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.skip_bookmarks = skip_bookmarks
        self._lock = threading.Lock()
        self.pods: dict[str, client.V1Pod] = {}
        self.resource_version = ""

    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                listed = self.core.list_pod_for_all_namespaces()
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 1.0
            with self._lock:
                self.pods = {_key(pod): pod for pod in listed.items}
            self.resource_version = listed.metadata.resource_version
            while self._watch():
                pass

    def _watch(self) -> bool:
        """One ``Watch.stream``; True to watch again from the last RV, False to relist."""
        watcher = watch.Watch()
        try:
            for event in watcher.stream(
                self.core.list_pod_for_all_namespaces,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
            ):
                self.handle(event)
        except client.ApiException as error:
            if error.status == 410:
                return False  # Expired: relist
            time.sleep(1)
        except ProtocolError:
            pass  # the connection was cut: watch again
        if watcher.resource_version:
            self.resource_version = watcher.resource_version
        return True

    def handle(self, event: dict[str, Any]) -> None:
        if self.skip_bookmarks and event["type"] == "BOOKMARK":
            # The fix: a bookmark only moves the resourceVersion (Watch recorded it already).
            return
        pod = event["object"]
        # Before the fix every event is taken for a pod; a BOOKMARK's object is a raw dict.
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        with self._lock:
            if event["type"] == "DELETED":
                self.pods.pop(key, None)
            else:
                self.pods[key] = pod
        self.resource_version = pod.metadata.resource_version

    def view(self) -> dict[str, client.V1Pod]:
        with self._lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}


def _key(pod: client.V1Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def every_event_is_a_pod(api_client: client.ApiClient) -> PodWatcher:
    """Before the fix: a BOOKMARK's object is read as a pod, and the watcher thread dies."""
    return PodWatcher(api_client, skip_bookmarks=False)


def skips_bookmarks(api_client: client.ApiClient) -> PodWatcher:
    """After the fix: BOOKMARK events only move the resourceVersion."""
    return PodWatcher(api_client, skip_bookmarks=True)
