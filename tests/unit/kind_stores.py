"""Stores of kinds other than pods, for the workload's own tests: one reflector, many lists.

:class:`Reflector` is the correct list-then-watch loop of property_stores.Reflector over any
list call of the official client (jobs, services, a custom resource, one namespace's pods
under a selector); several of them run side by side in :class:`Several` (a service registry
over services and pods). ``forget_deletes`` plants the bug a job watcher of a workflow engine
had: it never drops a finished Job that is deleted, so its table of jobs grows.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

Lister = Callable[..., Any]


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


class Reflector:
    """List, watch from the last RV, relist on 410, back off on errors; a dict cache."""

    def __init__(self, lister: Lister, *, forget_deletes: bool = False) -> None:
        self.lister = lister
        self.forget_deletes = forget_deletes
        self.cache: dict[str, dict[str, Any]] = {}
        self.resource_version = ""
        self.backoff = 1.0

    def _back_off(self) -> None:
        time.sleep(self.backoff)
        self.backoff = min(self.backoff * 2, 30.0)

    def run(self) -> None:
        while True:
            try:
                response = self.lister(_preload_content=False)
            except client.ApiException:
                self._back_off()
                continue
            self.backoff = 1.0
            listed = json.loads(response.data)
            fresh = {_key(obj): obj for obj in listed["items"]}
            if self.forget_deletes:
                fresh = {**self.cache, **fresh}  # the bug: what went away stays
            self.cache = fresh
            self.resource_version = listed["metadata"]["resourceVersion"]
            while self._watch():
                pass

    def _watch(self) -> bool:
        try:
            response = self.lister(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                _preload_content=False,
            )
        except client.ApiException as error:
            self._back_off()
            return error.status in (429, 500, 503)
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
                    if not self.forget_deletes:
                        self.cache.pop(_key(obj), None)
                else:
                    self.cache[_key(obj)] = obj
        except ProtocolError:
            return True
        return True

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.cache)


class Several:
    """Reflectors side by side, one thread each; the view is their union."""

    def __init__(self, *reflectors: Reflector) -> None:
        self.reflectors = reflectors

    def run(self) -> None:
        threads = [
            threading.Thread(target=r.run, name=f"reflector-{i}", daemon=True)
            for i, r in enumerate(self.reflectors)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def view(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for reflector in self.reflectors:
            out.update(reflector.view())
        return out


class Read:
    """A ``read()`` hook: the whole cache, as a lister hands it to a reader thread."""

    def read(self) -> dict[str, dict[str, Any]]:
        return self.view()  # type: ignore[attr-defined, no-any-return]


class ReadReflector(Read, Reflector):
    pass


class ReadSeveral(Read, Several):
    pass


def read_jobs(api_client: client.ApiClient) -> ReadReflector:
    return ReadReflector(client.BatchV1Api(api_client).list_job_for_all_namespaces)


def read_leaky_jobs(api_client: client.ApiClient) -> ReadReflector:
    lister = client.BatchV1Api(api_client).list_job_for_all_namespaces
    return ReadReflector(lister, forget_deletes=True)


def read_service_registry(api_client: client.ApiClient) -> ReadSeveral:
    core = client.CoreV1Api(api_client)
    return ReadSeveral(
        Reflector(core.list_service_for_all_namespaces),
        Reflector(core.list_pod_for_all_namespaces),
    )


def jobs(api_client: client.ApiClient) -> Reflector:
    return Reflector(client.BatchV1Api(api_client).list_job_for_all_namespaces)


def leaky_jobs(api_client: client.ApiClient) -> Reflector:
    return Reflector(client.BatchV1Api(api_client).list_job_for_all_namespaces, forget_deletes=True)


def shop_pods(api_client: client.ApiClient) -> Reflector:
    """Pods of one app in one namespace: ``shop``, ``app=myapp``."""
    core = client.CoreV1Api(api_client)
    return Reflector(
        functools.partial(core.list_namespaced_pod, "shop", label_selector="app=myapp")
    )


def service_registry(api_client: client.ApiClient) -> Several:
    core = client.CoreV1Api(api_client)
    return Several(
        Reflector(core.list_service_for_all_namespaces),
        Reflector(core.list_pod_for_all_namespaces),
    )


def widgets(api_client: client.ApiClient) -> Reflector:
    """A custom resource's objects (the CRD comes with the starting world)."""
    custom = client.CustomObjectsApi(api_client)
    return Reflector(
        functools.partial(custom.list_cluster_custom_object, "example.com", "v1", "widgets")
    )


class ConfigPoller:
    """Lists the ConfigMaps of ``settings`` labelled ``role=config`` every 10 s, as a store
    that polls instead of watching does."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[str, dict[str, Any]] = {}

    def run(self) -> None:
        while True:
            try:
                response = self.core.list_namespaced_config_map(
                    "settings", label_selector="role=config", _preload_content=False
                )
                self.cache = {_key(obj): obj for obj in json.loads(response.data)["items"]}
                self.polled()
            except client.ApiException:
                pass  # polled again in 10 s
            time.sleep(10)

    def polled(self) -> None:
        """After each list: what a poller does with what it found (nothing here)."""

    def view(self) -> dict[str, dict[str, Any]]:
        return dict(self.cache)


class ConfigReloader(ConfigPoller):
    """A poller that reloads each ConfigMap version it lists, once: its effects are the
    reloads, and it owes one for the last version of every ConfigMap in its scope."""

    def __init__(self, api_client: client.ApiClient) -> None:
        super().__init__(api_client)
        self.done: dict[str, str] = {}  # uid -> the resourceVersion reloaded last
        self.reloads: list[tuple[str, str]] = []

    def polled(self) -> None:
        listed = {
            obj["metadata"]["uid"]: obj["metadata"]["resourceVersion"]
            for obj in self.cache.values()
        }
        for uid, rv in listed.items():
            if self.done.get(uid) != rv:
                self.reloads.append((uid, rv))
        self.done = listed  # what is gone is forgotten

    def effects(self) -> list[tuple[str, str]]:
        done, self.reloads = self.reloads, []
        return done

    def expects(self, event: dict[str, Any]) -> tuple[str, str] | None:
        if event["type"] == "DELETED":
            return None
        meta = event["object"]["metadata"]
        return (meta["uid"], meta["resourceVersion"])
