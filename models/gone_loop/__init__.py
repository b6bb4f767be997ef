"""A watch loop that answers 410 Gone by watching again from the same resourceVersion.

Upstream: ``fluent-plugins-nursery/fluent-plugin-kubernetes_metadata_filter`` (then
``fabric8io/...``; shipped in ``fluent/fluentd-kubernetes-daemonset``) issue #226, fixed by PR
#243 (``kubernetes_metadata_watch_pods.rb``: a 410 becomes a ``GoneError`` that restarts the
pod list and watch); ``kubernetes-client/python-base`` issues
#133 and #227 (``watch/watch.py``: ``Watch.stream`` re-watched after an expired watch with the
resourceVersion it already had); ``kubernetes-client/java`` issue #1628 (the informer's
reflector did not relist on an in-stream 410).

A watch from a resourceVersion the server has compacted away is refused past admission: the
response is 200, and its first line is an ``ERROR`` event carrying a ``Status`` with code 410
(Expired, "too old resource version"), after which the server closes the stream. The only way
forward is a fresh list, and a watch from the list's resourceVersion. The stores of these
reports treated the end of such a stream like any clean close and watched again from the
resourceVersion they had, which is exactly the one the server just refused: each round trip is
answered at once, so the watcher spins on the API server without waiting for anything, and its
cache never learns of a change again. The fix: an ``ERROR`` event with code 410 (or an HTTP 410
when the watch is opened) means "relist".

Both versions otherwise do what a watch loop must: list, watch from the last resourceVersion,
watch again when the connection is cut, back off on API errors (``ApiException``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


class MetadataWatcher:
    """A pod metadata cache fed by list and a raw watch."""

    def __init__(self, api_client: client.ApiClient, *, relist_on_gone: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.relist_on_gone = relist_on_gone
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""

    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                self._relist()
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 1.0
            while self._watch():
                pass

    def _relist(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        with self._lock:
            self.pods = {_key(pod): pod for pod in listed["items"]}
        self.resource_version = listed["metadata"]["resourceVersion"]

    def _watch(self) -> bool:
        """One watch; True to watch again from the last RV, False to relist."""
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
        except client.ApiException as error:
            if error.status == 410 and self.relist_on_gone:
                return False
            time.sleep(1)
            return True
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if obj.get("code") == 410 and self.relist_on_gone:
                        return False  # the fix: the RV is gone, relist
                    # Before the fix: the stream ends, and the loop watches again from the
                    # resourceVersion the server has just refused.
                    continue
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                with self._lock:
                    if kind == "DELETED":
                        self.pods.pop(_key(obj), None)
                    else:
                        self.pods[_key(obj)] = obj
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    def view(self) -> dict[str, Pod]:
        with self._lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}


def rewatch_same_rv(api_client: client.ApiClient) -> MetadataWatcher:
    """Before the fix: after a 410 the watch is opened again from the refused resourceVersion."""
    return MetadataWatcher(api_client, relist_on_gone=False)


def relist_on_gone(api_client: client.ApiClient) -> MetadataWatcher:
    """After the fix: a 410, in-stream or at watch open, makes the store relist."""
    return MetadataWatcher(api_client, relist_on_gone=True)
