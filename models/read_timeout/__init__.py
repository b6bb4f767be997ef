"""A watch with a client read timeout whose expiry kills the watcher, before and after the fix.

Upstream: ``kubernetes-client/python`` issues #686 ("urllib3.exceptions.ReadTimeoutError when using
kubernetes.watch.Watch()"), #124 ("Keep the watch action working all the time": a watch with
``_request_timeout=60`` dies on a quiet namespace), #990 (a watch configured, as Airflow's executor
did, with ``_request_timeout: (6, 6)`` "stops watching after 6 seconds") and #1092 (the same
traceback from Airflow's ``KubernetesJobWatcher``); the client's own guidance,
``examples/watch/timeout-settings.md`` (set ``_request_timeout``, e.g. 60 s, or a dead connection
hangs the watch for ever; when it expires, ``urllib3.exceptions.ReadTimeoutError: ... Read timed
out.`` is raised) and ``examples/watch/watch_recovery.py`` (its recovery loop catches
``ApiException`` and ``urllib3.exceptions.ProtocolError``, and nothing else).

A watch is a long GET. When the path to the API server dies without a FIN or RST (a load balancer
that forgets the flow, a node that loses its route), the server's ``timeoutSeconds`` never arrives
and the client waits for ever; hence the advice to give every watch a client read timeout,
``_request_timeout=(connect, read)``, which urllib3 turns into a socket timeout. But a read timeout
also expires on a healthy, quiet watch: no event and no bookmark for ``read`` seconds. urllib3 then
raises ``ReadTimeoutError``, which is not a ``ProtocolError`` (both derive from
``urllib3.exceptions.HTTPError``), so a loop written like the recovery example, or like the reports'
``while True: for event in w.stream(...)``, lets it escape: the watcher thread dies, and the cache
stops changing while the process looks healthy. It shows on any quiet type or namespace, on the
first stretch with nothing to say longer than the read timeout. (The other shape of the bug, a bare
``except Exception`` that starts again from a fresh list, survives but relists on every quiet
minute.)

The fix: a read timeout is the end of that watch, like a clean close or a cut: keep the
resourceVersion (``Watch`` tracks it, bookmarks included) and watch again from it. Both versions
list, watch with ``Watch().stream`` from the list's resourceVersion with bookmarks, a server-side
``timeout_seconds`` of an hour and a 60 s client read timeout, as the guide recommends, relist after
a 410 and back off on other API errors.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from kubernetes import client, watch
from urllib3.exceptions import HTTPError, ProtocolError, ReadTimeoutError

Pod = dict[str, Any]
SERVER_TIMEOUT = 3600  # timeoutSeconds, as timeout-settings.md recommends
REQUEST_TIMEOUT = (10, 60)  # _request_timeout=(connect, read): a dead connection is noticed
MAX_BACKOFF = 30.0


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


class PodWatcher:
    """A pod cache on ``Watch.stream`` with a client read timeout; what that does is the subject."""

    def __init__(self, api_client: client.ApiClient, *, rewatch_on_timeout: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.rewatch_on_timeout = rewatch_on_timeout
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""
        # What a watch end may raise and the loop takes as "watch again from the last RV".
        # Before the fix: only ProtocolError, as in examples/watch/watch_recovery.py.
        self._watch_ends: tuple[type[Exception], ...] = (
            (ProtocolError, ReadTimeoutError) if rewatch_on_timeout else (ProtocolError,)
        )
        self._list_errors: tuple[type[Exception], ...] = (
            (client.ApiException, HTTPError)
            if rewatch_on_timeout
            else (client.ApiException, ProtocolError)
        )

    def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                self._relist()
            except self._list_errors:
                time.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            backoff = 1.0
            while self._watch():
                pass

    def _relist(self) -> None:
        response = self.core.list_pod_for_all_namespaces(
            _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        listed = json.loads(response.data)
        with self._lock:
            self.pods = {_key(pod): pod for pod in listed["items"]}
        self.resource_version = listed["metadata"]["resourceVersion"]

    def _watch(self) -> bool:
        """One ``Watch.stream``; True to watch again from the last RV, False to relist."""
        watcher = watch.Watch()
        try:
            for event in watcher.stream(
                self.core.list_pod_for_all_namespaces,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=SERVER_TIMEOUT,
                _request_timeout=REQUEST_TIMEOUT,
            ):
                self._handle(event)
        except client.ApiException as error:
            if error.status == 410:
                return False  # Expired: relist
            time.sleep(1)
        except self._watch_ends:
            # A cut connection; after the fix also a read timeout (nothing came for 60 s).
            # Before the fix a ReadTimeoutError is not caught here and ends the thread.
            pass
        if watcher.resource_version:
            self.resource_version = watcher.resource_version
        return True

    def _handle(self, event: dict[str, Any]) -> None:
        kind, obj = event["type"], event["raw_object"]
        self.resource_version = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            return
        with self._lock:
            if kind == "DELETED":
                self.pods.pop(_key(obj), None)
            else:
                self.pods[_key(obj)] = obj

    def view(self) -> dict[str, Pod]:
        with self._lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}


def timeout_kills_watcher(api_client: client.ApiClient) -> PodWatcher:
    """Before the fix: a read timeout on a quiet watch raises ReadTimeoutError out of run()."""
    return PodWatcher(api_client, rewatch_on_timeout=False)


def rewatch_after_timeout(api_client: client.ApiClient) -> PodWatcher:
    """After: a read timeout ends the watch, which starts again from the last RV."""
    return PodWatcher(api_client, rewatch_on_timeout=True)
