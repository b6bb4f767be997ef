"""A kopf operator runs against kubesim over loopback HTTP and handles each real change once.

kopf runs in a thread with its own event loop (``kopf.operator(standalone=True,
clusterwide=True)``), logging in through a kubeconfig written by ``write_kubeconfig``. Virtual
time does not move by itself under ``HTTPTransport``: the test drives it with
``server.advance(...)`` and injects faults (watch expiries, a compacted history that forces a
410 and a relist, bookmarks). kopf writes back annotations and a finalizer after every change;
the handlers must still fire exactly once per real change.

Synchronisation is by polling with generous deadlines (hang guards); no sleep is a synchroniser.
Event posting is disabled (kubesim serves no ``events`` resource).
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesim import APIServer, HTTPTransport
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.watch import WatchStream
from kubesim.transport.http import write_kubeconfig
from kubesim.workload import make_pod

kopf = pytest.importorskip(
    "kopf", minversion="1.45", reason="kopf 1.45+ (Python 3.11+) is not installed"
)

pytestmark = pytest.mark.timeout(120)

DEADLINE = 30.0  # seconds of wall time any single wait may take before the test fails
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"


def wait_until(what: str, condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until true; fail after DEADLINE (a hang guard, not a synchroniser)."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Operator:
    """A kopf operator for pods in a background thread; counts handler calls per change."""

    def __init__(self) -> None:
        self.calls: collections.Counter[tuple[str, ...]] = collections.Counter()
        self.lock = threading.Lock()
        self.registry = kopf.OperatorRegistry()
        self.settings = kopf.OperatorSettings()
        self.settings.posting.enabled = False
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="kopf-operator", daemon=True)
        registry = self.registry

        @kopf.on.login(registry=registry)  # type: ignore[misc]
        def login(**kwargs: Any) -> Any:
            return kopf.login_with_kubeconfig(**kwargs)

        @kopf.on.create("v1", "pods", registry=registry)  # type: ignore[misc]
        def created(uid: str, **_: Any) -> None:
            self._count("create", uid)

        @kopf.on.update("v1", "pods", registry=registry)  # type: ignore[misc]
        def updated(uid: str, labels: Any, **_: Any) -> None:
            self._count("update", uid, labels.get("step", ""))

        @kopf.on.delete("v1", "pods", registry=registry)  # type: ignore[misc]
        def deleted(uid: str, **_: Any) -> None:
            self._count("delete", uid)

    def _count(self, *key: str) -> None:
        with self.lock:
            self.calls[key] += 1

    def snapshot(self) -> dict[tuple[str, ...], int]:
        with self.lock:
            return dict(self.calls)

    def _run(self) -> None:
        try:
            asyncio.run(
                kopf.operator(
                    registry=self.registry,
                    settings=self.settings,
                    standalone=True,
                    clusterwide=True,
                    stop_flag=self.stop_flag,
                    ready_flag=self.ready_flag,
                )
            )
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc

    def start(self) -> None:
        self.thread.start()
        wait_until("kopf to start", lambda: self.ready_flag.is_set() or self.error is not None)
        assert self.error is None, self.error

    def stop(self) -> None:
        self.stop_flag.set()
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "kopf did not stop"


class WatchLog:
    """Records every watch kopf opens on pods: (resourceVersion, allowWatchBookmarks)."""

    def __init__(self, server: APIServer) -> None:
        self.requests: list[tuple[str | None, bool]] = []
        self._watch = server.watch

    def wait_for_more_than(self, count: int) -> None:
        wait_until(f"watch number {count + 1}", lambda: len(self.requests) > count)

    def __call__(self, resource: ResourceType, **kwargs: Any) -> WatchStream:
        if resource.plural == "pods":
            self.requests.append((kwargs.get("resource_version"), kwargs["allow_bookmarks"]))
        return self._watch(resource, **kwargs)


@pytest.fixture
def watch_log(server: APIServer, monkeypatch: pytest.MonkeyPatch) -> WatchLog:
    log = WatchLog(server)
    monkeypatch.setattr(server, "watch", log)
    return log


@pytest.fixture
def operator(
    server: APIServer, watch_log: WatchLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Operator]:
    with HTTPTransport(server, host="127.0.0.1", port=0) as transport:
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(str(kubeconfig), transport.url)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        running = Operator()
        running.start()
        try:
            yield running
        finally:
            running.stop()
    assert running.error is None, running.error


def pod(server: APIServer, name: str) -> dict[str, Any]:
    return server.get("pods", name, namespace="default")


def handled(server: APIServer, name: str) -> Callable[[], bool]:
    """kopf has finished with the pod's current state (its diff-base matches the labels)."""

    def check() -> bool:
        meta = pod(server, name)["metadata"]
        base = meta.get("annotations", {}).get("kopf.zalando.org/last-handled-configuration")
        step = meta.get("labels", {}).get("step")
        return base is not None and (step is None or f'"step":"{step}"' in base)

    return check


def drained(server: APIServer) -> bool:
    """Every open watch has handed its queued lines to the transport."""
    with server.lock:
        return not any(w.has_ready() for w in server.watchers())


def label(server: APIServer, name: str, step: str) -> None:
    server.patch(
        "pods",
        name,
        {"metadata": {"labels": {"step": step}}},
        namespace="default",
        patch_type="application/merge-patch+json",
    )


def test_kopf_handlers_fire_once_per_change_across_expiries_relists_and_bookmarks(
    server: APIServer, operator: Operator, watch_log: WatchLog
) -> None:
    uid = server.create("pods", make_pod("web-1", "default"), namespace="default")["metadata"][
        "uid"
    ]
    wait_until("the create handler", handled(server, "web-1"))
    assert FINALIZER in pod(server, "web-1")["metadata"]["finalizers"]
    assert all(bookmarks for _, bookmarks in watch_log.requests)

    # A change, then a server-side expiry: kopf re-watches from its last RV and sees no change.
    label(server, "web-1", "1")
    wait_until("update 1", handled(server, "web-1"))
    watches = len(watch_log.requests)
    server.expire_watches()
    wait_until("a re-watch after the expiry", lambda: len(watch_log.requests) > watches)
    label(server, "web-1", "2")
    wait_until("update 2", handled(server, "web-1"))

    # Bookmarks: a write of another resource makes the current RV one no pod event carries;
    # a bookmark announces it, and the expiry's clean end follows it on the same connection.
    # kopf must re-watch from the bookmark's RV, or from a newer one: a late write of kopf's
    # own (an annotation it patches after a handler) may come after the bookmark, and moves its
    # RV further. Never from an older one: that is what ignoring bookmarks looks like.
    wait_until("kopf's writes to reach it", lambda: drained(server))
    server.create("configmaps", {"metadata": {"name": "bookmark"}}, namespace="default")
    bookmark_rv = server.resource_version
    assert server.send_bookmarks() >= 1
    wait_until("the bookmark to be written", lambda: drained(server))
    watches = len(watch_log.requests)
    server.expire_watches()
    watch_log.wait_for_more_than(watches)
    rewatch = watch_log.requests[watches][0]
    assert rewatch is not None, "kopf re-watched without a resourceVersion"
    assert int(rewatch) >= bookmark_rv, (
        f"kopf re-watched from {rewatch}, older than the bookmark's {bookmark_rv}"
    )
    label(server, "web-1", "3")
    wait_until("update 3", handled(server, "web-1"))

    # 410: a write kopf does not watch moves the RV, the history is compacted, and the watch
    # expires. Whichever RV kopf re-watches from, it must end up watching from one the server
    # still has: directly (its RV was already at the floor, after a late write of its own), or
    # after an ERROR 410, a relist and a watch from the list's RV.
    wait_until("kopf's writes to reach it", lambda: drained(server))
    server.create("configmaps", {"metadata": {"name": "compacted"}}, namespace="default")
    floor = server.compact()
    watches = len(watch_log.requests)
    server.expire_watches()
    watch_log.wait_for_more_than(watches)
    stale = watch_log.requests[watches][0]
    assert stale is not None
    if int(stale) >= floor:
        pass  # nothing was compacted away from under kopf: no relist needed
    else:
        wait_until(
            "a relist and a watch from the new RV",
            lambda: any(
                rv is not None and int(rv) >= floor for rv, _ in watch_log.requests[watches + 1 :]
            ),
        )
    label(server, "web-1", "4")
    wait_until("update 4", handled(server, "web-1"))

    # Delete: the finalizer holds the pod until the delete handler ran.
    server.delete("pods", "web-1", namespace="default")
    wait_until(
        "the delete handler and the finalizer's removal",
        lambda: not any(p["metadata"]["name"] == "web-1" for p in server.list("pods")),
    )
    # A sentinel pod handled end to end: kopf has processed every earlier event.
    server.create("pods", make_pod("web-2", "default"), namespace="default")
    wait_until("the sentinel's create handler", handled(server, "web-2"))

    calls = operator.snapshot()
    sentinel = {key: n for key, n in calls.items() if key[1] != uid}
    assert list(sentinel.values()) == [1]
    assert {key: n for key, n in calls.items() if key[1] == uid} == {
        ("create", uid): 1,
        ("update", uid, "1"): 1,
        ("update", uid, "2"): 1,
        ("update", uid, "3"): 1,
        ("update", uid, "4"): 1,
        ("delete", uid): 1,
    }
