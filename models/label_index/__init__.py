"""An informer's indexer with a label index: empty index entries kept or deleted, before and after.

Upstream: ``kubernetes/kubernetes`` issue #84959 ("client-go - ThreadSafeMap indicies - empty sets
not deleted - memory increase with high cardinality short lived resources"), fixed by PR #84970
(merged November 2019, "Delete backing string set from a threadSafeMap index when the string set
length reaches 0"); earlier attempts at the same three lines: PRs #75500 and #77785. Files:
``staging/src/k8s.io/client-go/tools/cache/thread_safe_store.go`` (``threadSafeMap``,
``updateIndices``, ``deleteFromIndices``; today ``storeIndex.deleteKeyFromIndex``, whose comment
cites #84959) and ``shared_informer.go`` (``HandleDeltas``, which feeds the indexer).

How the real store works: an informer's indexer is a ``threadSafeMap`` of objects by key plus, for
each registered ``IndexFunc``, an index ``value -> set of keys``, all under one RWMutex. Every
``Add``/``Update``/``Delete`` removes the key from the sets of the old object's index values and
adds it to those of the new object's. Listers and controllers read through it: ``ByIndex(name,
value)`` (``Pods(ns).List()`` is ``ByIndex("namespace", ns)``; controllers register their own
indexes, here one over the pods' labels, ``key=value`` per label, to find the pods a selector or
a label value names).

The bug: ``deleteFromIndices`` removed the key from the set but left the set in the index when
it became empty. Every index value ever seen therefore stays in the index map for the life of the
process, with an empty set, even after the last object carrying it moved to another value or was
deleted. The issue's reporter saw it with a namespace index over short-lived namespaces named by
UUIDs; a label index shows it with any label whose values churn: a ``pod-template-hash`` per
rollout, a ``version`` label rewritten on every deploy, a per-job or per-run label. On a real
cluster the controller's memory grows with every distinct value ever observed until it is
OOM-killed, while the cluster itself stays the same size. A relist does not help: in a shared
informer the reflector's ``Replace`` goes to the DeltaFIFO, and the indexer only receives
per-object ``Update``/``Delete`` calls (``threadSafeMap.Replace``, which does rebuild the indexes,
is only used when a reflector feeds a bare indexer). The fix deletes the set from the index when
its last key is removed.

The model is an informer on the official client: a reflector (list, watch from the last
resourceVersion, re-watch after a clean end or a cut, relist after a 410, back off after API
errors) whose relist is delivered to the indexer as ``HandleDeltas`` would (an update per listed
object, a delete per vanished one), and the indexer with a ``namespace`` and a ``labels`` index.
``view()`` is what a lister serves through the namespace index (every namespace the index lists,
``ByIndex`` of each, under one read lock); ``sizes()`` counts the items and the entries of each
index map. There is no ``read()`` hook on purpose: until client-go's ``AtomicFIFO`` (KEP-5647,
kubernetes PR #135462, on by default in 1.36) an informer applied a relist to its indexer one
object at a time, releasing the lock in between (the comment of kubernetes PR #77636 describes
it), so a lister read during a relist was not a snapshot in either variant. That is another
defect, with its own fix; this model keeps to the index.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]
IndexFunc = Callable[[Pod], list[str]]

MAX_BACKOFF = 30.0


def _key(pod: Pod) -> str:
    """``MetaNamespaceKeyFunc``."""
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def namespace_index(pod: Pod) -> list[str]:
    """``cache.MetaNamespaceIndexFunc``: every informer's indexer carries it."""
    return [pod["metadata"].get("namespace", "")]


def label_index(pod: Pod) -> list[str]:
    """The controller's own index: one ``key=value`` entry per label of the pod."""
    labels = pod["metadata"].get("labels") or {}
    return [f"{name}={value}" for name, value in sorted(labels.items())]


INDEXERS: dict[str, IndexFunc] = {"namespace": namespace_index, "labels": label_index}


class ThreadSafeStore:
    """``threadSafeMap``: items by key and, per index name, ``value -> set of keys``."""

    def __init__(self, indexers: dict[str, IndexFunc], *, delete_empty_sets: bool) -> None:
        self._lock = threading.Lock()  # the RWMutex
        self.items: dict[str, Pod] = {}
        self.indexers = indexers
        self.indices: dict[str, dict[str, set[str]]] = {name: {} for name in indexers}
        self.delete_empty_sets = delete_empty_sets

    # -- writes (the informer's HandleDeltas calls these) ------------------------------------
    def update(self, key: str, obj: Pod) -> None:
        """``Add`` and ``Update``: store the object, move its key between index sets."""
        with self._lock:
            old = self.items.get(key)
            self.items[key] = obj
            self._update_indices(old, obj, key)

    def delete(self, key: str) -> None:
        with self._lock:
            old = self.items.pop(key, None)
            if old is not None:
                self._update_indices(old, None, key)

    def _update_indices(self, old: Pod | None, new: Pod | None, key: str) -> None:
        if old is not None:
            self._delete_from_indices(old, key)
        if new is None:
            return
        for name, index_func in self.indexers.items():
            index = self.indices[name]
            for value in index_func(new):
                index.setdefault(value, set()).add(key)

    def _delete_from_indices(self, obj: Pod, key: str) -> None:
        for name, index_func in self.indexers.items():
            index = self.indices[name]
            for value in index_func(obj):
                keys = index.get(value)
                if keys is None:
                    continue
                keys.discard(key)
                if self.delete_empty_sets and not keys:
                    # PR #84970: an empty set goes, or every value ever seen stays forever.
                    del index[value]

    # -- reads (listers) ---------------------------------------------------------------------
    def by_index(self, name: str, value: str) -> list[Pod]:
        with self._lock:
            return [self.items[key] for key in sorted(self.indices[name].get(value, ()))]

    def list_keys(self) -> list[str]:
        with self._lock:
            return list(self.items)

    def list_index_func_values(self, name: str) -> list[str]:
        with self._lock:
            return sorted(self.indices[name])

    def list_through_index(self, name: str) -> list[Pod]:
        """Every object reachable through one index, read under one read lock."""
        with self._lock:
            index = self.indices[name]
            keys = {key for value in index for key in index[value]}
            return [self.items[key] for key in sorted(keys)]


class IndexedInformer:
    """A shared informer's reflector and indexer (no event handlers: readers use the index)."""

    def __init__(self, api_client: client.ApiClient, *, delete_empty_sets: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.indexer = ThreadSafeStore(INDEXERS, delete_empty_sets=delete_empty_sets)
        self.resource_version = ""

    # -- the reflector -----------------------------------------------------------------------
    def run(self) -> None:
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
        # DeltaFIFO.Replace then HandleDeltas: Replaced deltas become indexer updates, keys the
        # indexer knows and the list lacks become deletes (DeletedFinalStateUnknown).
        for key in self.indexer.list_keys():
            if key not in fresh:
                self.indexer.delete(key)
        for key, pod in fresh.items():
            self.indexer.update(key, pod)
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
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired in the stream: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self.indexer.delete(_key(obj))
                else:
                    self.indexer.update(_key(obj), obj)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    # -- hooks -------------------------------------------------------------------------------
    def view(self) -> dict[str, Pod]:
        """What listers serve: every namespace's ``ByIndex("namespace", ns)``, one read lock."""
        return {_key(pod): pod for pod in self.indexer.list_through_index("namespace")}

    def sizes(self) -> dict[str, int]:
        sizes = {"items": len(self.indexer.items)}
        for name, index in self.indexer.indices.items():
            sizes[f"index[{name}]"] = len(index)
        return sizes


def keeps_empty_index_sets(api_client: client.ApiClient) -> IndexedInformer:
    """Before PR #84970: a value's set stays in the index after its last key leaves it."""
    return IndexedInformer(api_client, delete_empty_sets=False)


def deletes_empty_index_sets(api_client: client.ApiClient) -> IndexedInformer:
    """After PR #84970: a set is deleted from the index when its last key is removed."""
    return IndexedInformer(api_client, delete_empty_sets=True)
