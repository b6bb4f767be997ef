"""An agent that interns the label keys and values of the pods it caches: forever, or ref-counted.

No single upstream report names this defect in a Kubernetes cache; the model is built on the
closest real code. ``cilium/cilium`` issue #36166 ("Intern Label and Labels to reduce memory
usage": label strings are among the largest heap consumers of the agent, and highly repetitive
across pods) led to PR #36294, which deduplicates the labels and annotations of every object
entering a ``Resource[T]`` store, and to the interned ``labels`` v2 of PR #38664;
``projectcalico/calico`` PR #10272 interns label keys and values in Felix's calculation graph as
``unique.Handle[string]``. Both avoid the trap on purpose: Cilium's cache is fixed-size and lossy,
Go's ``unique`` handles are weak and collected once unused. The trap itself is recorded in
``prometheus/prometheus`` PR #5316 (issue #5364), string interning of label names and values on the
remote-write path, whose first version said "Currently no way to "forget" a string once it has
been interned" and which was merged with reference counting instead (``intern`` takes a
reference, ``release`` drops one and deletes the string at zero); grafana/prometheus PR #21 fixed
the same interner leaking strings when the scrape cache and the references got out of step, and
cortexproject/cortex PR #6057 interns series labels with the same counts.

How the store works: a reflector lists and watches pods; on the way into the cache every label
key and value is replaced by the pool's canonical copy of that string, so a thousand pods with
``app=web`` hold one ``"app"`` and one ``"web"``. Policy selectors and metrics then read the
cached labels. The bug: the pool is a plain map that adds every string it has not seen and never
removes one, so it holds every label key and value any pod ever had. Values that churn (a
``pod-template-hash`` per rollout, a ``version`` or build label rewritten on each deploy, a
per-run id on Job pods) make the pool grow for the life of the agent while the cluster stays the
same size: the memory the interning was meant to save leaks back, slowly, until the agent is
OOM-killed. The fix counts references: a pod entering the cache (or a new version replacing the
old one) takes one per string, the old version's labels and a deleted pod's labels (a DELETED
event or a delete found by a relist) release theirs, and a string whose count reaches zero leaves
the pool.

The model: a reflector (list, watch from the last resourceVersion, re-watch after a clean end or
a cut, relist after a 410, back off after API errors) feeding a cache under a lock, with the
labels interned through the pool, which has its own lock as a shared interner would. ``view()`` is
the cache; ``sizes()`` counts the cached pods and the pool's strings.
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


class NaiveInterner:
    """A map of canonical strings: every fresh string is added, none is ever removed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pool: dict[str, str] = {}

    def intern(self, value: str) -> str:
        with self._lock:
            return self.pool.setdefault(value, value)

    def release(self, value: str) -> None:
        pass  # "no way to forget a string once it has been interned"

    def __len__(self) -> int:
        return len(self.pool)


class CountingInterner:
    """Reference-counted interning (prometheus PR #5316 as merged)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pool: dict[str, str] = {}  # the canonical copy of each string
        self.references: dict[str, int] = {}

    def intern(self, value: str) -> str:
        with self._lock:
            canonical = self.pool.setdefault(value, value)
            self.references[value] = self.references.get(value, 0) + 1
            return canonical

    def release(self, value: str) -> None:
        with self._lock:
            left = self.references.get(value, 0) - 1
            if left > 0:
                self.references[value] = left
                return
            self.references.pop(value, None)
            self.pool.pop(value, None)  # the last reference is gone

    def __len__(self) -> int:
        return len(self.pool)


class InterningPodCache:
    """A pod cache whose label keys and values come from a shared string pool."""

    def __init__(self, api_client: client.ApiClient, *, counted: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.interner: NaiveInterner | CountingInterner = (
            CountingInterner() if counted else NaiveInterner()
        )
        self._lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version = ""

    # -- the transform on the way into the cache ---------------------------------------------
    def _interned(self, pod: Pod) -> Pod:
        labels = pod["metadata"].get("labels")
        if not labels:
            return pod
        metadata = dict(pod["metadata"])
        metadata["labels"] = {
            self.interner.intern(name): self.interner.intern(value)
            for name, value in labels.items()
        }
        return {**pod, "metadata": metadata}

    def _release(self, pod: Pod | None) -> None:
        if pod is None:
            return
        for name, value in (pod["metadata"].get("labels") or {}).items():
            self.interner.release(name)
            self.interner.release(value)

    def upsert(self, pod: Pod) -> None:
        stored = self._interned(pod)  # new references first, so shared strings stay pooled
        with self._lock:
            old = self.pods.get(_key(pod))
            self.pods[_key(pod)] = stored
        self._release(old)

    def delete(self, key: str) -> None:
        with self._lock:
            old = self.pods.pop(key, None)
        self._release(old)

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
        with self._lock:
            vanished = [key for key in self.pods if key not in fresh]
        for key in vanished:  # deleted while we were away
            self.delete(key)
        for pod in fresh.values():
            self.upsert(pod)
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
                    self.delete(_key(obj))
                else:
                    self.upsert(obj)
        except ProtocolError:
            pass  # the connection was cut: watch again from the last RV
        finally:
            response.release_conn()
        return True

    # -- hooks -------------------------------------------------------------------------------
    def view(self) -> dict[str, Pod]:
        with self._lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods), "interned": len(self.interner)}


def interns_forever(api_client: client.ApiClient) -> InterningPodCache:
    """Before: a plain map interner; every label key and value ever seen stays in the pool."""
    return InterningPodCache(api_client, counted=False)


def releases_unused_strings(api_client: client.ApiClient) -> InterningPodCache:
    """After: references are counted and released with the pod version that held them."""
    return InterningPodCache(api_client, counted=True)
