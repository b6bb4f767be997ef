"""A followed container log (``GET pods/{name}/log?follow=true``) as the server streams it.

kube-apiserver proxies the kubelet's stream: the body stays open while the container runs and
ends, cleanly, when the container stops or the pod is gone (kuberuntime ``ReadLogs`` stops
following a container that no longer runs). It is a long-running request like a watch, and the
same things happen to it on the way: the connection is cut (a restarting API server or node,
:meth:`~kubesim.apiserver.watch_cache.WatchCache.drop_watches`), goes silent until it is cut
(:meth:`~kubesim.apiserver.watch_cache.WatchCache.silence_watches`), or is closed cleanly while
the container still runs (an API server shutting down gracefully,
:meth:`~kubesim.apiserver.watch_cache.WatchCache.expire_watches`). So a client that takes the
end of the stream for the end of the container (a waiter that reports a job done when its log
stream ends) is judged on each of those.

A :class:`LogFollower` is a :class:`~kubesim.apiserver.watch.Watcher` to everything that ends,
cuts or silences watchers, and to the transports, which read it through a
:class:`~kubesim.apiserver.watch.WatchStream` as they read a watch. It sends no events and no
bookmarks: it only looks at the writes of its own pod, to end when the container stops. Those
writes reach it even while the watch cache is stalled, since a log is no watch-cache read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.selectors import FieldSelector, LabelSelector
from kubesim.apiserver.storage import DELETED, Event, Key
from kubesim.apiserver.watch import WatchEnd, Watcher

JSON = dict[str, Any]


def container_running(pod: JSON, container: str) -> bool:
    """Whether ``container`` runs now: what keeps a followed log open (the kubelet ends the
    stream when the container exits: kuberuntime ``ReadLogs`` stops following once the
    container is no longer running)."""
    status = _dict(pod.get("status"))
    for key in ("containerStatuses", "initContainerStatuses"):
        for entry in status.get(key) or []:
            if _dict(entry).get("name") == container:
                return "running" in _dict(_dict(entry).get("state"))
    return False


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


class LogFollower(Watcher):
    """The server's side of one followed log: open until ``container`` of the pod at ``key``
    stops running or the pod is deleted."""

    def __init__(
        self,
        *,
        ident: int,
        resource: ResourceType,
        key: Key,
        container: str,
        on_close: Callable[[Watcher], None],
    ) -> None:
        super().__init__(
            ident=ident,
            resource=resource,
            namespace=key[0] or None,
            label_selector=LabelSelector.parse(""),
            field_selector=FieldSelector.parse(""),
            allow_bookmarks=False,
            buffer_limit=None,
            on_close=on_close,
        )
        self.key = key
        self.container = container

    def offer(self, event: Event) -> None:
        """End cleanly once a write shows the container stopped, or the pod deleted. A silent
        connection hears nothing: the client sees only the cut that comes later."""
        if self.ended is not None or self.silent:
            return
        if event.resource is not self.resource or event.key != self.key:
            return
        if event.type == DELETED or not container_running(event.new.obj, self.container):
            self.end(WatchEnd.CLOSED)

    def push_line(self, line: bytes) -> None:
        """A watch's in-stream ``ERROR`` event is no line of a container's log: dropped."""

    def close_when_drained(self) -> None:
        """Nothing is queued behind a log's end: it ends now."""
        self.end(WatchEnd.CLOSED)

    def bookmark(self, rv: int) -> None:
        """A log stream carries no bookmarks."""
