"""Stores whose stop() meets a watch event being handled: ``join_under_lock`` marks itself
stopped, closes its watch and joins its thread while holding the lock its event handler takes
(stopped while an event is handled, the handler waits for the lock and stop() for the
handler: neither returns); ``join_after_lock`` lets the lock go before it joins."""

from __future__ import annotations

import json
import threading
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines


class Cache:
    def __init__(self, api_client: client.ApiClient, *, join_under_lock: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.join_under_lock = join_under_lock
        self.lock = threading.Lock()
        self.pods: dict[str, Any] = {}
        self.stopped = False
        self.response: Any = None
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        self.thread = threading.Thread(target=self._loop, name="pod-watch", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
            with self.lock:
                if self.stopped:
                    return
                self.pods = {self._key(p): p for p in listed["items"]}
            response = self.core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=listed["metadata"]["resourceVersion"],
                _preload_content=False,
            )
            with self.lock:
                if self.stopped:
                    response.close()
                    return
                self.response = response
            try:
                for line in iter_resp_lines(response):
                    self.handle(json.loads(line))
            except Exception:  # a closed or cut watch: list again, unless stopped
                pass
            if self.stopped:
                return

    def handle(self, event: dict[str, Any]) -> None:
        pod = event["object"]
        if event["type"] in ("BOOKMARK", "ERROR"):
            return
        with self.lock:
            if event["type"] == "DELETED":
                self.pods.pop(self._key(pod), None)
            else:
                self.pods[self._key(pod)] = pod

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            response = self.response
            if self.join_under_lock:
                if response is not None:
                    response.close()
                if self.thread is not None:
                    self.thread.join()
                return
        if response is not None:
            response.close()
        if self.thread is not None:
            self.thread.join()

    def view(self) -> dict[str, Any]:
        with self.lock:
            return dict(self.pods)

    @staticmethod
    def _key(pod: dict[str, Any]) -> str:
        return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def join_under_lock(api_client: client.ApiClient) -> Cache:
    return Cache(api_client, join_under_lock=True)


def join_after_lock(api_client: client.ApiClient) -> Cache:
    return Cache(api_client, join_under_lock=False)
