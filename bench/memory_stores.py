"""Stores for the memory oracle: correct ones (its noise floor) and leaks it must flag.

Each is a factory ``factory(api_client) -> store`` (contract in ``kubesim/sim/store.py``),
written only against the official ``kubernetes`` client. ``bench/memory_tolerance.py`` runs the
correct ones to measure how much a correct store drifts per watch restart; the tests run all of
them (``tests/unit/test_memory_oracle.py``).
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

JSON = dict[str, Any]


def _key(obj: JSON) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return meta.get("namespace", ""), meta.get("name", "")


class InformerStore:
    """A reflector: list, then watch from the list's resourceVersion; 410 -> relist.

    Keeps one dict entry per pod (the object as decoded). Correct: bounded by the live set.
    ``catch_cut=False`` lets a cut connection (urllib3 ``ProtocolError``) escape ``run()``,
    which is the mistake :func:`informer_not_catching_cuts` makes.
    """

    def __init__(self, api_client: Any, *, catch_cut: bool = True) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[tuple[str, str], JSON] = {}
        self.resource_version = ""
        self.catch_cut = catch_cut

    def relist(self) -> None:
        resp = self.core.list_pod_for_all_namespaces(_preload_content=False)
        body = json.loads(resp.data)
        self.cache = {_key(item): item for item in body["items"]}
        self.resource_version = body["metadata"]["resourceVersion"]

    def run(self) -> None:
        self.relist()
        while True:
            resp = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
            try:
                for line in iter_resp_lines(resp):
                    if not self.handle(json.loads(line)):
                        self.relist()
                        break
            except HTTPError:
                if not self.catch_cut:
                    raise
            finally:
                resp.release_conn()

    def handle(self, event: JSON) -> bool:
        """Apply one event; False when the store must relist (410 Gone)."""
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            return False
        self.resource_version = obj["metadata"]["resourceVersion"]
        if kind in ("ADDED", "MODIFIED"):
            self.cache[_key(obj)] = obj
        elif kind == "DELETED":
            self.cache.pop(_key(obj), None)
        return True

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.cache)}


class PerNamespaceStore:
    """One watch per namespace (as an operator restricted to namespaces does), one thread.

    Lists each namespace, then opens every namespace's watch at its resourceVersion and reads
    them in turn; when all have ended, opens them again. Correct: idle restarts re-watch every
    namespace and keep nothing new.
    """

    def __init__(self, api_client: Any) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[str, dict[str, JSON]] = {}
        self.resource_versions: dict[str, str] = {}

    def run(self) -> None:
        namespaces = self.core.list_namespace(_preload_content=False)
        for item in json.loads(namespaces.data)["items"]:
            self.relist(item["metadata"]["name"])
        while True:
            watches = [
                (
                    namespace,
                    self.core.list_namespaced_pod(
                        namespace,
                        watch=True,
                        resource_version=self.resource_versions[namespace],
                        allow_watch_bookmarks=True,
                        _preload_content=False,
                    ),
                )
                for namespace in sorted(self.cache)
            ]
            for namespace, resp in watches:
                try:
                    for line in iter_resp_lines(resp):
                        event = json.loads(line)
                        if event["type"] == "ERROR":
                            self.relist(namespace)
                            break
                        self.handle(namespace, event)
                except HTTPError:
                    pass  # cut: watch again from the last resourceVersion
                finally:
                    resp.release_conn()

    def relist(self, namespace: str) -> None:
        resp = self.core.list_namespaced_pod(namespace, _preload_content=False)
        body = json.loads(resp.data)
        self.cache[namespace] = {item["metadata"]["name"]: item for item in body["items"]}
        self.resource_versions[namespace] = body["metadata"]["resourceVersion"]

    def handle(self, namespace: str, event: JSON) -> None:
        obj = event["object"]
        self.resource_versions[namespace] = obj["metadata"]["resourceVersion"]
        name = obj["metadata"]["name"]
        if event["type"] in ("ADDED", "MODIFIED"):
            self.cache[namespace][name] = obj
        elif event["type"] == "DELETED":
            self.cache[namespace].pop(name, None)

    def sizes(self) -> dict[str, int]:
        return {"pods": sum(len(pods) for pods in self.cache.values())}


class RawWatchStore(InformerStore):
    """KubeArmor's raw watch, done right: no list, no resourceVersion, keyed by name.

    Every restart replays every pod as ADDED; the dict absorbs the duplicates. Correct.
    """

    def run(self) -> None:
        while True:
            resp = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            try:
                for line in iter_resp_lines(resp):
                    self.handle(json.loads(line))
            except HTTPError:
                pass
            finally:
                resp.release_conn()


class ChunkKeepingStore(RawWatchStore):
    """Leaks: keeps every raw chunk it reads from the watch (a "debug buffer").

    The chunks are bytes the *server* allocated (the in-process transport hands them over as
    they are), so an oracle that charges memory to whoever allocated it misses this leak.
    """

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        self.chunks: list[bytes] = []

    def run(self) -> None:
        while True:
            resp = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            try:
                for chunk in resp.stream():
                    self.chunks.append(chunk)
                    for line in chunk.splitlines():
                        self.handle(json.loads(line))
            except HTTPError:
                pass
            finally:
                resp.release_conn()


class IndexLeakStore(RawWatchStore):
    """Leaks a little: an index that gains one entry per ADDED, so one per pod per restart.

    The cache is right; the index (namespace, name) grows in a straight line, a few dozen bytes
    per entry, and ``sizes()`` says so.
    """

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        self.index: list[tuple[str, str]] = []

    def handle(self, event: JSON) -> bool:
        if event["type"] == "ADDED":
            self.index.append(_key(event["object"]))
        return super().handle(event)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.cache), "index": len(self.index)}


class ListOnceStore(InformerStore):
    """Lists once and returns: never watches, so its cache goes stale at once."""

    def run(self) -> None:
        self.relist()


class WatchOnceStore(InformerStore):
    """Lists, watches until the first watch ends, then returns."""

    def run(self) -> None:
        self.relist()
        resp = self.core.list_pod_for_all_namespaces(
            watch=True, resource_version=self.resource_version, _preload_content=False
        )
        try:
            for line in iter_resp_lines(resp):
                self.handle(json.loads(line))
        finally:
            resp.release_conn()


def informer(api_client: Any) -> InformerStore:
    return InformerStore(api_client)


def informer_not_catching_cuts(api_client: Any) -> InformerStore:
    return InformerStore(api_client, catch_cut=False)


def per_namespace(api_client: Any) -> PerNamespaceStore:
    return PerNamespaceStore(api_client)


def raw_watch(api_client: Any) -> RawWatchStore:
    return RawWatchStore(api_client)


def keeps_chunks(api_client: Any) -> ChunkKeepingStore:
    return ChunkKeepingStore(api_client)


def index_leak(api_client: Any) -> IndexLeakStore:
    return IndexLeakStore(api_client)


def list_once(api_client: Any) -> ListOnceStore:
    return ListOnceStore(api_client)


def watch_once(api_client: Any) -> WatchOnceStore:
    return WatchOnceStore(api_client)
