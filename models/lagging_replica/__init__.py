"""A reflector that takes a lagging API server's list for the truth, before and after the fix.

Upstream: ``kubernetes/kubernetes`` issue #59848 ("Use of resourceVersion=0 in reflectors for
initial sync breaks pod safety when more than one master"), whose relist half was fixed by PR #83520
("Avoid going back in time in Reflector relist", after the closed PR #67998;
``staging/src/k8s.io/client-go/tools/cache/reflector.go``: ``relistResourceVersion()`` relists from
the last synced resourceVersion instead of "0"); the discussion it started about reads served from
the watch cache (KEP-2340, consistent reads from cache; KEP-3157, watch-list, whose initial events
come from the cache at a resourceVersion no older than the one asked for); and the "time travel"
bugs of Sieve (sieve-project/sieve, OSDI '22), which made operators act on a past state after they
reconnected to a stale API server (elastic/cloud-on-k8s #4956 asks what they mean for its own
reflectors).

In an HA control plane every kube-apiserver keeps its own watch cache, fed by its own etcd watch;
one of them may lag behind the others for seconds (a slow etcd member, a cache re-initialising after
a restart). A list with ``resourceVersion="0"`` means "any version" and is answered from the cache
of whichever replica the load balancer picks; a watch from a resourceVersion the replica has not
reached yet waits a few seconds and fails with 504 "Too large resource version". The reflector of
the report listed with ``resourceVersion="0"`` every time it (re)listed: after its watch failed (a
410, a 504 from the lagging replica it had just reconnected to, an apiserver restart) the relist was
served by that lagging replica, and ``Replace`` swapped the cache for a state older than the one it
held. Deleted pods came back, updated ones went back to older versions, and handlers saw the past
replayed; for a kubelet that meant running again a pod already deleted and re-created elsewhere, the
pod-safety break of the title. It shows on any multi-master cluster when a client reconnects while
one replica lags.

The fix: never accept a list older than what the store has already seen. PR #83520 asks the server
for it: relist with ``resourceVersion`` set to the newest resourceVersion synced (the model adds
``resourceVersionMatch=NotOlderThan``), which a lagging replica answers with a 504 instead of its
past, and the store backs off and tries again. The model also checks the answer, as a client facing
a proxy or server that does not honour the match must: it compares the list's resourceVersion with
the newest one before replacing anything, refuses an older list and lists again later. Kubernetes
resourceVersions are formally opaque; comparing them as integers relies on kube-apiserver's being
etcd revisions, the assumption this check has to make, and the model skips the comparison when one
does not parse. A fresh process has seen nothing to go back from; its first list is a consistent
read (``resourceVersion`` unset), where client-go's reflector still lists from "0" for speed and
leaves that first read to the consistent-reads work (KEP-2340).

Both versions otherwise do what a reflector does: watch from the list's resourceVersion with
bookmarks, watch again when a watch ends or is cut, relist after a 410 or a refused watch, and back
off exponentially (1 s to 30 s) between failed attempts.
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


def _revision(resource_version: str | None) -> int | None:
    """The resourceVersion as kube-apiserver writes it (an etcd revision), or None."""
    try:
        return int(resource_version or "")
    except ValueError:
        return None


class StaleList(Exception):
    """A list older than what the store has already seen (the fix refuses it)."""


class Reflector:
    """List, then watch; what a relist accepts is the subject."""

    def __init__(self, api_client: client.ApiClient, *, not_older: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.not_older = not_older
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""  # where the next watch starts
        self.newest = ""  # the newest resourceVersion the store has synced (list or event)
        self._backoff = 1.0

    def run(self) -> None:
        while True:
            try:
                self._relist()
            except (client.ApiException, ProtocolError, StaleList):
                self._sleep()  # refused, failed or too old: back off, then list again
                continue
            self._backoff = 1.0
            while self._watch():
                pass

    def _sleep(self) -> None:
        time.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, MAX_BACKOFF)

    def _relist(self) -> None:
        if not self.not_older:
            # Before the fix: every list, first or not, asks for "any version", which the
            # replica the request lands on serves from its watch cache, however far behind.
            kwargs: dict[str, Any] = {"resource_version": "0"}
        elif not self.newest:
            kwargs = {}  # a fresh store has seen nothing: a consistent read
        else:
            # The fix: not older than the newest resourceVersion synced. A lagging replica
            # answers 504 "Too large resource version" rather than its past.
            kwargs = {"resource_version": self.newest, "resource_version_match": "NotOlderThan"}
        response = self.core.list_pod_for_all_namespaces(_preload_content=False, **kwargs)
        listed = json.loads(response.data)
        version = listed["metadata"]["resourceVersion"]
        if self.not_older:
            seen, got = _revision(self.newest), _revision(version)
            if seen is not None and got is not None and got < seen:
                raise StaleList(f"listed at {version}, already synced {self.newest}")
        with self._lock:
            self.pods = {_key(pod): pod for pod in listed["items"]}  # Replace
        self.resource_version = version
        self._synced(version)

    def _synced(self, version: str) -> None:
        seen, got = _revision(self.newest), _revision(version)
        if seen is None or got is None or got >= seen:
            self.newest = version

    def _watch(self) -> bool:
        """One watch; True to watch again from the last RV, False to relist."""
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
        except client.ApiException:
            # 410, or a 504 from a replica behind our resourceVersion, or a 5xx: the reflector
            # returns from ListAndWatch, backs off, and lists again.
            self._sleep()
            return False
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                self._synced(self.resource_version)
                self._backoff = 1.0
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


def relist_any_version(api_client: client.ApiClient) -> Reflector:
    """Before kubernetes #83520: every relist asks for resourceVersion="0" and takes what comes."""
    return Reflector(api_client, not_older=False)


def refuse_older_list(api_client: client.ApiClient) -> Reflector:
    """After: relist NotOlderThan the newest RV synced, and refuse a list older than it."""
    return Reflector(api_client, not_older=True)
