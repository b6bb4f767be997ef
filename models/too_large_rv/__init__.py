"""A reflector against a lagging watch cache: "Too large resource version", before and after.

Upstream: ``kubernetes/kubernetes`` issue #91073 and the reflector changes that answered it
(``staging/src/k8s.io/client-go/tools/cache/reflector.go``: ``isTooLargeResourceVersionError``,
``setIsLastSyncResourceVersionUnavailable``, and the reflector's backoff manager).

In an HA control plane a client may list from one API server and watch through another whose
watch cache for that (quiet) type is behind. A watch from a resourceVersion newer than the cache
has reached waits a few seconds and fails with a 504 ``Status`` whose cause is
``ResourceVersionTooLarge`` ("Too large resource version"). The reflector of the report took
that for a broken watch and opened it again at once, from the same resourceVersion, against the
same lagging cache: a tight loop of failing requests for as long as the cache lags. The fixes:
space the retries with an exponential backoff, and when the error says the resourceVersion is
too large, mark it unusable so that the next attempt relists (a consistent list, read from etcd)
instead of insisting on it.

The store lists with ``resourceVersion=""`` (a consistent read, which the lagging cache does not
serve) and watches from the list's resourceVersion; it relists on 410 and watches again when the
connection is cut.
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
MAX_BACKOFF = 30.0


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _too_large(error: client.ApiException) -> bool:
    return error.status == 504 and "Too large resource version" in str(error.body or "")


class Reflector:
    """List, then watch from the list's resourceVersion; the reaction to a 504 is the subject."""

    def __init__(self, api_client: client.ApiClient, *, back_off: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.back_off = back_off
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""
        self._backoff = 1.0

    def run(self) -> None:
        while True:
            try:
                self._relist()
            except (client.ApiException, ProtocolError):
                self._sleep()
                continue
            while self._watch():
                pass

    def _sleep(self) -> None:
        time.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, MAX_BACKOFF)

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
            if error.status == 410:
                return False
            if not self.back_off and _too_large(error):
                return True  # before the fix: again, at once, from the same resourceVersion
            self._sleep()
            # The fix: a too-large resourceVersion is not used again; the next attempt relists.
            return not _too_large(error)
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                self._backoff = 1.0  # the watch works: the next failure starts small again
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


def retry_at_once(api_client: client.ApiClient) -> Reflector:
    """Before the fix: a 504 "Too large resource version" is retried at once, from the same RV."""
    return Reflector(api_client, back_off=False)


def backoff_and_relist(api_client: client.ApiClient) -> Reflector:
    """After the fix: exponential backoff, and a relist instead of the too-large RV."""
    return Reflector(api_client, back_off=True)
