"""A shared informer's fan-out to listeners, one of them stalled: per-event buffers, before/after.

Upstream: ``kubernetes/kubernetes`` ``staging/src/k8s.io/client-go/tools/cache/shared_informer.go``
(``sharedProcessor.distribute``, ``processorListener.pop``/``run``, whose
``pendingNotifications`` is "an unbounded ring buffer ... a failing/stalled listener will have
infinite pendingNotifications added until we OOM"), issues #103789 and #121474 and PR #137314
(which adds a metric for that buffer's length, so operators can see it grow);
``kuberhealthy/kuberhealthy`` issue #533 (watches nobody read any more, buffering for days).

A shared informer hands every notification to every registered listener, and each listener
buffers notifications its handler has not taken yet, one entry per event, without limit. When
one handler stalls (it waits on a reply that never comes, or on a lock another part of the
program holds), the informer keeps distributing: that listener's buffer grows with every event
for every object, a copy of each object version, until the process runs out of memory. The
healthy listeners are unaffected, which is why it goes unnoticed.

The fix this model shows is the one client-go offers for slow handlers: the handler does not do
the work, it enqueues the object's *key* in a workqueue, which holds a key once however many
events arrive for it, and the slow work reads the latest object when it gets to the key. The
buffer is then bounded by the number of objects, not of events. (A key added and deleted again
before the worker ever saw it is dropped: there is nothing left to do for it.)

Both versions run the informer's reflector (list, watch from the last resourceVersion, relist
on 410, back off on API errors) in ``run()`` and start one thread per listener from it.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]
Notification = tuple[str, Pod]  # ("add" | "update" | "delete", the object)


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


class EventBuffer:
    """processorListener's ``pendingNotifications``: every notification, in order, unbounded."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: collections.deque[Notification] = collections.deque()

    def add(self, kind: str, pod: Pod) -> None:
        with self._cond:
            self._pending.append((kind, pod))
            self._cond.notify()

    def pop(self) -> Notification:
        with self._cond:
            while not self._pending:
                self._cond.wait()
            return self._pending.popleft()

    def __len__(self) -> int:
        return len(self._pending)


class KeyQueue:
    """A workqueue: each key queued once however many notifications; the latest one wins."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: dict[str, Notification] = {}  # insertion-ordered: FIFO by first add
        self._seen: set[str] = set()  # keys the handler has been given (a delete must reach it)

    def add(self, kind: str, pod: Pod) -> None:
        key = _key(pod)
        with self._cond:
            if kind == "delete" and key not in self._seen:
                self._pending.pop(key, None)  # never handed out: nothing left to do for it
                return
            if key in self._pending:
                self._pending[key] = (kind, pod)  # coalesced: the position is kept
            else:
                self._pending[key] = (kind, pod)
                self._cond.notify()

    def pop(self) -> Notification:
        with self._cond:
            while not self._pending:
                self._cond.wait()
            key = next(iter(self._pending))
            kind, pod = self._pending.pop(key)
            if kind == "delete":
                self._seen.discard(key)
            else:
                self._seen.add(key)
            return kind, pod

    def __len__(self) -> int:
        return len(self._pending)


class Listener:
    """One registered handler, its buffer, and the thread that feeds the handler."""

    def __init__(self, name: str, buffer: EventBuffer | KeyQueue, handler: Any) -> None:
        self.name = name
        self.buffer = buffer
        self.handler = handler

    def run(self) -> None:
        while True:
            kind, pod = self.buffer.pop()
            self.handler(kind, pod)


class SharedInformer:
    """A pod informer with two listeners: a prompt indexer and a stalled notifier."""

    def __init__(self, api_client: client.ApiClient, *, coalesce: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self._lock = threading.Lock()
        self.items: dict[str, Pod] = {}
        self.resource_version = ""
        self.by_node: dict[str, set[str]] = {}
        # The notifier waits for an acknowledgement from a webhook that never answers.
        self._acknowledged = threading.Event()
        make = KeyQueue if coalesce else EventBuffer
        self.listeners = [
            Listener("node-index", make(), self._index_by_node),
            Listener("notifier", make(), self._notify_webhook),
        ]
        self._started = False

    # -- handlers ----------------------------------------------------------------------------
    def _index_by_node(self, kind: str, pod: Pod) -> None:
        key, node = _key(pod), (pod.get("spec") or {}).get("nodeName") or ""
        with self._lock:
            for keys in self.by_node.values():
                keys.discard(key)
            if kind != "delete":
                self.by_node.setdefault(node, set()).add(key)
            self.by_node = {n: keys for n, keys in self.by_node.items() if keys}

    def _notify_webhook(self, kind: str, pod: Pod) -> None:
        self._acknowledged.wait()  # stalled: nobody ever sets it

    # -- the informer ------------------------------------------------------------------------
    def _distribute(self, kind: str, pod: Pod) -> None:
        for listener in self.listeners:
            listener.buffer.add(kind, pod)

    def run(self) -> None:
        if not self._started:
            self._started = True
            for listener in self.listeners:
                threading.Thread(target=listener.run, name=listener.name, daemon=True).start()
        backoff = 1.0
        while True:
            try:
                listed = json.loads(
                    self.core.list_pod_for_all_namespaces(_preload_content=False).data
                )
            except (client.ApiException, ProtocolError):
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 1.0
            self._replace(listed["items"])
            self.resource_version = listed["metadata"]["resourceVersion"]
            while self._watch():
                pass

    def _replace(self, pods: list[Pod]) -> None:
        fresh = {_key(pod): pod for pod in pods}
        with self._lock:
            old, self.items = self.items, fresh
        for key, pod in old.items():
            if key not in fresh:
                self._distribute("delete", pod)
        for key, pod in fresh.items():
            self._distribute("update" if key in old else "add", pod)

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
            time.sleep(1)
            return error.status != 410
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                key = _key(obj)
                with self._lock:
                    existed = key in self.items
                    if kind == "DELETED":
                        self.items.pop(key, None)
                    else:
                        self.items[key] = obj
                if kind == "DELETED":
                    self._distribute("delete", obj)
                else:
                    self._distribute("update" if existed else "add", obj)
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    # -- the store contract ------------------------------------------------------------------
    def view(self) -> dict[str, Pod]:
        with self._lock:
            return dict(self.items)

    def history_dependent(self) -> tuple[str, ...]:
        # The stalled notifier's queue holds work it has not done yet, such as the delete of a
        # pod it was handed before it stalled: pending work depends on history by nature.
        return ("listeners",)

    def sizes(self) -> dict[str, int]:
        sizes = {"items": len(self.items)}
        for listener in self.listeners:
            sizes[f"pending[{listener.name}]"] = len(listener.buffer)
        return sizes


def unbounded_pending(api_client: client.ApiClient) -> SharedInformer:
    """Before: each listener buffers every notification; the stalled one's buffer grows."""
    return SharedInformer(api_client, coalesce=False)


def coalescing_queue(api_client: client.ApiClient) -> SharedInformer:
    """After: each listener holds a key once (workqueue semantics); bounded by the objects."""
    return SharedInformer(api_client, coalesce=True)
