"""A lock-free metrics store whose relist prunes, then updates in place, under a scrape.

Upstream: ``kubernetes/kube-state-metrics`` ``pkg/metrics_store/metrics_store.go`` and
``pkg/metrics_store/metrics_writer.go`` (``WriteAll``, what a ``/metrics`` scrape runs). The first
``MetricsStore`` emptied its map and re-added the listed objects under a mutex (the
``models/ksm_relist`` family). Scrapes then contended with writes on that mutex (issue #995:
Prometheus timeouts while hundreds of pods were created; PR #1028 proposed a ``sync.Map``, read
without any lock, to end it). The store in the file's current version is such a ``sync.Map``, and
its ``Replace`` no longer empties it: it upserts every listed object, then deletes the ones the list
lacks ("The store is read concurrently by WriteAll, so it is never emptied"). A scrape no longer
sees an empty store, but it still ranges over a map that ``Replace`` is rewriting one key at a time.

This model takes the other order of the same two passes, the one a hand-written store reaches first
when it keeps its entries in place across a relist: prune the keys the new list no longer has, then
store the listed objects one by one. Either order has the same window. A scrape that runs between
the passes, or in the middle of the second, sees the objects deleted while the store was
disconnected already gone and the ones changed meanwhile still at their old versions (or half of
them updated), with those created meanwhile still missing: a set of pods the cluster never held at
any resourceVersion. Prometheus records it as series that vanish and return, and counts that are
wrong for one scrape. It shows on every relist (after a 410, a restart of the watch cache, an
apiserver upgrade) of a type that changes while the store is disconnected, the more so the larger
the list. The fix: build the new map aside and swap it in with one assignment, so a scrape sees the
old set or the new one.

Apart from that, both versions are the same reflector: list, watch from the list's resourceVersion
with bookmarks, apply events in place (one key per event, each a state the server had), watch again
after a clean end or a cut, relist after a 410 or a refused watch.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Pod = dict[str, Any]


def _render(pod: Pod) -> bytes:
    """generateMetricsFunc for a pod: a few kube_pod_* families, rendered as text."""
    meta = pod["metadata"]
    who = f'namespace="{meta.get("namespace", "")}",pod="{meta["name"]}",uid="{meta["uid"]}"'
    phase = (pod.get("status") or {}).get("phase") or "Unknown"
    lines = [f"kube_pod_info{{{who}}} 1", f'kube_pod_status_phase{{{who},phase="{phase}"}} 1']
    for name, value in sorted((meta.get("labels") or {}).items()):
        lines.append(f'kube_pod_labels{{{who},label_{name}="{value}"}} 1')
    return ("\n".join(lines) + "\n").encode()


class MetricsStore:
    """``cache.Store`` over a map read without a lock (a ``sync.Map``); ``replace`` is the subject.

    Every single operation on the dict is atomic (as each ``sync.Map`` call is), so there is no
    lock at all: writers store or delete one key at a time, a scrape copies the entries in one
    go. What a scrape can see is whatever state the sequence of single writes passes through.
    """

    def __init__(self, api_client: client.ApiClient, *, swap_on_replace: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.swap_on_replace = swap_on_replace
        self.metrics: dict[str, tuple[bytes, Pod]] = {}  # uid -> (rendered families, object)
        self.resource_version = ""

    # -- cache.Store -------------------------------------------------------------------------
    def add(self, pod: Pod) -> None:
        self.metrics[pod["metadata"]["uid"]] = (_render(pod), pod)

    update = add

    def delete(self, pod: Pod) -> None:
        self.metrics.pop(pod["metadata"]["uid"], None)

    def replace(self, pods: list[Pod]) -> None:
        if self.swap_on_replace:
            fresh = {pod["metadata"]["uid"]: (_render(pod), pod) for pod in pods}
            self.metrics = fresh  # the fix: one assignment; a scrape sees old or new
            return
        listed = {pod["metadata"]["uid"] for pod in pods}
        for uid in list(self.metrics):  # before the fix: prune what the list no longer has...
            if uid not in listed:
                self.metrics.pop(uid, None)
        for pod in pods:  # ...then update the rest in place, one object at a time
            self.add(pod)

    # -- the reflector -----------------------------------------------------------------------
    def run(self) -> None:
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
            self.replace(listed["items"])
            self.resource_version = listed["metadata"]["resourceVersion"]
            while self._watch():
                pass

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
            time.sleep(1)  # 410, or refused (504, 5xx): back off, then relist
            return False
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return False  # 410 Expired: relist
                self.resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self.delete(obj)
                else:
                    self.update(obj)
        except ProtocolError:
            return True  # the connection was cut: watch again
        finally:
            response.release_conn()
        return True

    # -- what a scrape does (MetricsWriter.WriteAll, sync.Map.Range) -------------------------
    def write_all(self) -> tuple[bytes, list[Pod]]:
        entries = list(self.metrics.values())  # no lock: the map as it is right now
        return b"".join(rendered for rendered, _ in entries), [pod for _, pod in entries]

    def read(self) -> list[Pod]:
        """One scrape: the objects whose metric families it wrote."""
        return self.write_all()[1]

    def view(self) -> dict[str, Pod]:
        pods = [pod for _, pod in list(self.metrics.values())]
        return {f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}": p for p in pods}

    def sizes(self) -> dict[str, int]:
        return {"metrics": len(self.metrics)}


def prune_then_update(api_client: client.ApiClient) -> MetricsStore:
    """Before the fix: a relist deletes the unlisted keys, then stores each listed one."""
    return MetricsStore(api_client, swap_on_replace=False)


def build_then_swap(api_client: client.ApiClient) -> MetricsStore:
    """After the fix: a relist builds the new map, then swaps it in with one assignment."""
    return MetricsStore(api_client, swap_on_replace=True)
