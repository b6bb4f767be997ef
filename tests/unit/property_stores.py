"""Small stores for the property layer's own tests: one correct reflector, one known leak.

Written the way people write them against the official client: a raw watch parsed line by
line, errors handled the way each design handles them.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError, ProtocolError


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class Reflector:
    """Correct: list, watch from the last RV, relist on 410, back off on errors (1 s, doubling
    to 30 s, as client-go's reflector); a dict cache."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[str, dict[str, Any]] = {}
        self.resource_version = ""
        self.backoff = 1.0

    def _back_off(self) -> None:
        time.sleep(self.backoff)
        self.backoff = min(self.backoff * 2, 30.0)

    def run(self) -> None:
        while True:
            try:
                response = self.core.list_pod_for_all_namespaces(_preload_content=False)
            except (client.ApiException, HTTPError):  # an error Status, or no answer at all
                self._back_off()
                continue
            self.backoff = 1.0
            listed = json.loads(response.data)
            self.cache = {_key(pod): pod for pod in listed["items"]}
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
        except client.ApiException as error:
            self._back_off()
            return error.status in (429, 500, 503)
        except HTTPError:  # reset or refused: the server restarts; watch again from the same RV
            self._back_off()  # (client-go's reflector does not relist on a refused watch)
            return True
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return False
                obj = event["object"]
                self.resource_version = obj["metadata"]["resourceVersion"]
                if event["type"] == "BOOKMARK":
                    continue
                if event["type"] == "DELETED":
                    self.cache.pop(_key(obj), None)
                else:
                    self.cache[_key(obj)] = obj
        except ProtocolError:
            return True  # the connection was cut: watch again
        return True

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.cache)

    def sizes(self) -> dict[str, int]:
        return {"cache": len(self.cache)}


class AppendingWatcher(Reflector):
    """The KubeArmor shape: a raw watch without RV, and every ADDED appends an endpoint."""

    def __init__(self, api_client: client.ApiClient) -> None:
        super().__init__(api_client)
        self.endpoints: list[str] = []

    def run(self) -> None:
        while True:
            try:
                response = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            except client.ApiException:
                time.sleep(1)
                continue
            try:
                for line in iter_resp_lines(response):
                    event = json.loads(line)
                    if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    obj, key = event["object"], _key(event["object"])
                    if event["type"] == "DELETED":
                        self.cache.pop(key, None)
                        self.endpoints = [e for e in self.endpoints if e != key]
                    else:
                        self.cache[key] = obj
                        if event["type"] == "ADDED":
                            self.endpoints.append(key)
            except ProtocolError:
                pass

    def sizes(self) -> dict[str, int]:
        return {"cache": len(self.cache), "endpoints": len(self.endpoints)}


class ListOnce(Reflector):
    """Lists once and returns: not a store (it stops watching)."""

    def run(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        self.cache = {_key(pod): pod for pod in listed["items"]}


class NoBackoff(Reflector):
    """Re-watches at once, from the same RV, after any error opening a watch (no backoff).

    Against a watch cache that lags behind (kubernetes#91073), every watch from the RV a fresh
    list returned answers 504 "Too large resource version": a hot loop.
    """

    def _watch(self) -> bool:
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True, resource_version=self.resource_version, _preload_content=False
            )
        except client.ApiException:
            return True  # the bug: no sleep, no relist
        for line in iter_resp_lines(response):
            event = json.loads(line)
            if event["type"] == "ERROR":
                return False
            obj = event["object"]
            self.resource_version = obj["metadata"]["resourceVersion"]
            if event["type"] == "DELETED":
                self.cache.pop(_key(obj), None)
            else:
                self.cache[_key(obj)] = obj
        return True


def reflector(api_client: client.ApiClient) -> Reflector:
    return Reflector(api_client)


def appending_watcher(api_client: client.ApiClient) -> AppendingWatcher:
    return AppendingWatcher(api_client)


def own_client(api_client: client.ApiClient) -> Reflector:
    """A store that ignores the client it is given and loads its own configuration."""
    from kubernetes import config

    config.load_kube_config()
    return Reflector(client.ApiClient())


def incluster_client(api_client: client.ApiClient) -> Reflector:
    from kubernetes import config

    config.load_incluster_config()
    return Reflector(client.ApiClient())


class LockedCache:
    """A reflector whose cache sits behind a lock and a condition created in ``__init__``;
    ``read()`` hands out a copy of the cache (a consumer's whole-cache read)."""

    def __init__(self, api_client: client.ApiClient, *, clear_then_add: bool) -> None:
        import threading

        self.core = client.CoreV1Api(api_client)
        self.lock = threading.Lock()
        self.synced = threading.Condition(self.lock)
        self.cache: dict[str, dict[str, Any]] = {}
        self.resource_version = ""
        self.clear_then_add = clear_then_add

    def run(self) -> None:
        while True:
            try:
                response = self.core.list_pod_for_all_namespaces(_preload_content=False)
            except client.ApiException:
                time.sleep(1)
                continue
            listed = json.loads(response.data)
            self._replace(listed["items"])
            self.resource_version = listed["metadata"]["resourceVersion"]
            while self._watch():
                pass

    def _replace(self, items: list[dict[str, Any]]) -> None:
        if self.clear_then_add:
            # kube-state-metrics' MetricsStore.Replace before the fix: clear, then add one by
            # one, each under the lock, so a scrape between two adds sees part of the list.
            with self.lock:
                self.cache.clear()
            for pod in items:
                with self.lock:
                    self.cache[_key(pod)] = pod
        else:
            fresh = {_key(pod): pod for pod in items}
            with self.lock:
                self.cache = fresh
        with self.lock:
            self.synced.notify_all()

    def _watch(self) -> bool:
        try:
            response = self.core.list_pod_for_all_namespaces(
                watch=True, resource_version=self.resource_version, _preload_content=False
            )
        except client.ApiException:
            time.sleep(1)
            return False
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return False
                obj = event["object"]
                self.resource_version = obj["metadata"]["resourceVersion"]
                with self.lock:
                    if event["type"] == "DELETED":
                        self.cache.pop(_key(obj), None)
                    else:
                        self.cache[_key(obj)] = obj
        except ProtocolError:
            return True
        return True

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.cache)

    def read(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.cache.values())


def locked_cache(api_client: client.ApiClient) -> LockedCache:
    return LockedCache(api_client, clear_then_add=False)


def clear_then_add(api_client: client.ApiClient) -> LockedCache:
    return LockedCache(api_client, clear_then_add=True)


class TwoLocks:
    """A store whose watch thread and worker take two locks in opposite orders."""

    def __init__(self, api_client: client.ApiClient) -> None:
        import threading

        self.inner = Reflector(api_client)
        self.a = threading.Lock()
        self.b = threading.Lock()

    def run(self) -> None:
        import threading

        def other() -> None:
            with self.b:
                time.sleep(1)
                with self.a:
                    pass

        threading.Thread(target=other, name="other", daemon=True).start()
        with self.a:
            time.sleep(1)
            with self.b:
                pass
        self.inner.run()


class Stoppable(Reflector):
    """A reflector with a worker thread and a stop(); ``leaves_worker`` forgets the worker."""

    def __init__(self, api_client: client.ApiClient, *, leaves_worker: bool) -> None:
        import threading

        super().__init__(api_client)
        self.leaves_worker = leaves_worker
        self.stopping = threading.Event()
        self.worker_stop = threading.Event()
        self._watch_handle: Any = None

    def run(self) -> None:
        import threading

        from kubernetes import watch

        threading.Thread(target=self.worker_stop.wait, name="worker").start()
        while not self.stopping.is_set():
            self._watch_handle = watch.Watch()
            try:
                for event in self._watch_handle.stream(
                    self.core.list_pod_for_all_namespaces, timeout_seconds=60
                ):
                    obj = event["raw_object"]
                    self.cache[_key(obj)] = obj
            except (client.ApiException, ProtocolError):
                time.sleep(1)

    def stop(self) -> None:
        self.stopping.set()
        if self._watch_handle is not None:
            self._watch_handle.stop()
        if not self.leaves_worker:
            self.worker_stop.set()


def stops_cleanly(api_client: client.ApiClient) -> Stoppable:
    return Stoppable(api_client, leaves_worker=False)


def leaves_a_worker(api_client: client.ApiClient) -> Stoppable:
    return Stoppable(api_client, leaves_worker=True)


class StartsAndReturns(Reflector):
    """run() starts the reflector in a thread of its own and returns (the shape of an
    informer's ``start()``): the store runs in that thread."""

    def run(self) -> None:
        import threading

        threading.Thread(target=super().run, name="reflector", daemon=True).start()


def starts_and_returns(api_client: client.ApiClient) -> StartsAndReturns:
    return StartsAndReturns(api_client)


class RunningOnly(Reflector):
    """Correct, with a filtered read: consumers get the running pods that have an IP."""

    def read(self) -> list[dict[str, Any]]:
        return [
            pod
            for pod in list(self.cache.values())
            if (pod.get("status") or {}).get("phase") == "Running"
            and (pod.get("status") or {}).get("podIP")
        ]


def running_only(api_client: client.ApiClient) -> RunningOnly:
    return RunningOnly(api_client)


class FastRetry(Reflector):
    """Retries a refused list or watch after a tenth of a second, however long the errors
    last: not a hot loop (it waits), but no backoff either."""

    def _back_off(self) -> None:
        time.sleep(0.1)


def fast_retry(api_client: client.ApiClient) -> FastRetry:
    return FastRetry(api_client)


class PruneThenRefill:
    """The writers hold the store's lock over a relist's two passes (prune what the list
    lacks, then store each listed pod), and ``view()`` takes it too; ``read()`` copies the
    values without it (``locked``: with it, the correct twin). Watches with the official
    client's ``Watch``, whose requests say ``watch=True``."""

    def __init__(self, api_client: client.ApiClient, *, locked: bool) -> None:
        import threading

        self.core = client.CoreV1Api(api_client)
        self.lock = threading.Lock()
        self.cache: dict[str, dict[str, Any]] = {}
        self.locked = locked

    def _relist(self) -> str:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        fresh = {_key(pod): pod for pod in listed["items"]}
        with self.lock:
            for key in [key for key in self.cache if key not in fresh]:
                del self.cache[key]
            for key, pod in fresh.items():
                self.cache[key] = pod
        return str(listed["metadata"]["resourceVersion"])

    def run(self) -> None:
        from kubernetes import watch

        while True:
            try:
                rv = self._relist()
                while True:
                    for event in watch.Watch().stream(
                        self.core.list_pod_for_all_namespaces,
                        resource_version=rv,
                        allow_watch_bookmarks=True,
                        timeout_seconds=240,
                    ):
                        pod = event["raw_object"]
                        rv = pod["metadata"]["resourceVersion"]
                        if event["type"] == "BOOKMARK":
                            continue
                        with self.lock:
                            if event["type"] == "DELETED":
                                self.cache.pop(_key(pod), None)
                            else:
                                self.cache[_key(pod)] = pod
            except (client.ApiException, HTTPError):
                time.sleep(1)

    def view(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return dict(self.cache)

    def read(self) -> list[dict[str, Any]]:
        if self.locked:
            with self.lock:
                return list(self.cache.values())
        return list(self.cache.values())


def prune_then_refill(api_client: client.ApiClient) -> PruneThenRefill:
    return PruneThenRefill(api_client, locked=False)


def prune_then_refill_locked(api_client: client.ApiClient) -> PruneThenRefill:
    return PruneThenRefill(api_client, locked=True)
