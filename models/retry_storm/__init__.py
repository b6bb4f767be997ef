"""A list-watch loop under a lasting 429 storm or 5xx outage: retry at once, or back off.

Upstream: ``kubernetes/client-go`` #222 (kubelets and node-problem-detectors retried failed requests
against an API server that was answering 429, "leading to thousands of qps of 429s");
``kubernetes/kubernetes`` #26871 ("Retry-After in client doesn't work") and #34938 (retries after a
429 were not throttled); #79805 and #117734 (after an apiserver restart every client relists at
once, and the max-in-flight filter, later API Priority and Fairness, answers 429 with a fixed
``Retry-After: 1``); ``nolar/kopf`` #962 / PR #963 and #1011, #1108, #1195 / PR #1229 (a watch
answered 429 failed the watcher; the fix retries and obeys ``retryAfterSeconds`` from the ``Status``
or the ``Retry-After`` header, and never waits less than its own backoff). The reference behaviour
is client-go's: ``rest/with_retry.go`` waits what ``Retry-After`` says, and the reflector waits
between ``ListAndWatch`` attempts with an exponential backoff (800 ms doubling to 30 s, with jitter:
``NewExponentialBackoffManager`` in ``tools/cache/reflector.go``), backing off on a 429 from a watch
too ("Watch returned 429 - backing off"). The official Python client 37 ships the same parsing as
``kubernetes.utils.retry.retry_after_seconds``.

How the store works: list, watch from the list's resourceVersion (bookmarks on), watch again from
the last resourceVersion after a clean end or a cut, relist after a 410. Any other failed request
(429 ``TooManyRequests`` while APF sheds load or the watch cache re-initialises, 500/503 while an
apiserver or etcd is down, 504) is retried. The bug is how: at once, from the same request, with no
backoff and the ``Retry-After`` header ignored, which is what the hand-written loops of the reports
do, and the official client's own ``SharedInformer`` on its watch path ("Watch stream ended with
ApiException (status=...); reconnecting"; its list path waits a fixed 5 s). During a storm that
lasts (every client of a large cluster relisting after an apiserver restart, an etcd outage, an
overloaded control plane), each such store sends requests as fast as the API server can refuse them,
which is the load that keeps the storm going. The fix: wait before every retry, ``max(backoff,
Retry-After)`` with the backoff doubling from 1 s to a 30 s cap, reset once a request works again.
(client-go adds jitter; the model leaves it out so that its waits are the same on every run.)
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.utils.retry import retry_after_seconds
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError, ProtocolError

Pod = dict[str, Any]
INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 30.0


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _retry_after(error: Exception) -> float:
    """What the server asked for: the ``Retry-After`` header, or the ``Status`` details."""
    seconds = retry_after_seconds(error)
    if seconds is not None:
        return seconds
    body = getattr(error, "body", None)
    if body:
        try:
            details = json.loads(body).get("details") or {}
            return float(details.get("retryAfterSeconds") or 0)
        except (TypeError, ValueError, AttributeError):
            pass
    return 0.0


class Reflector:
    """List, then watch; what happens between a failed request and the next is the subject."""

    def __init__(self, api_client: client.ApiClient, *, back_off: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.back_off = back_off
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""
        self._backoff = INITIAL_BACKOFF

    def run(self) -> None:
        while True:
            try:
                self._relist()
            except (client.ApiException, HTTPError) as error:
                self._failed(error)
                continue
            self._worked()
            while self._watch():
                pass

    def _failed(self, error: Exception) -> None:
        if not self.back_off:
            return  # before the fix: straight back to the same request
        wait = max(self._backoff, _retry_after(error))
        self._backoff = min(self._backoff * 2, MAX_BACKOFF)
        time.sleep(wait)

    def _worked(self) -> None:
        self._backoff = INITIAL_BACKOFF

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
            self._failed(error)  # 429, 5xx, 504: retry the watch from the same RV
            return True
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        return False  # Expired: relist
                    error = client.ApiException(status=obj.get("code"), reason=obj.get("reason"))
                    self._failed(error)
                    return True
                self.resource_version = obj["metadata"]["resourceVersion"]
                self._worked()
                if kind == "BOOKMARK":
                    continue
                with self._lock:
                    if kind == "DELETED":
                        self.pods.pop(_key(obj), None)
                    else:
                        self.pods[_key(obj)] = obj
        except ProtocolError:
            return True  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    def view(self) -> dict[str, Pod]:
        with self._lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}


def retry_immediately(api_client: client.ApiClient) -> Reflector:
    """Before the fix: a failed list or watch is sent again at once; Retry-After is ignored."""
    return Reflector(api_client, back_off=False)


def backoff_with_retry_after(api_client: client.ApiClient) -> Reflector:
    """After: wait max(exponential backoff capped at 30 s, Retry-After) before every retry."""
    return Reflector(api_client, back_off=True)
