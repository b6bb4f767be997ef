"""An informer that stop() reaches during its list: it opens a watch and never ends; and the fix.

Upstream: the official Python client's ``kubernetes.informer.SharedInformer`` (kubernetes 37,
``kubernetes/informer/informer.py``): ``stop()`` sets ``_stop_event``, calls ``stop()`` on the
``Watch`` in ``self._watch`` if there is one, and joins the thread; ``_run_loop`` checks the event
at the top of its ``while`` and, inside a watch, only after an event has arrived. client-go had the
same holes and closed them one by one: ``kubernetes/kubernetes`` PR #73137 ("Fix reflector List
cancellation": "When closing stopCh informer could hang on List call indefinitely"), PR #120980
("reflector: close an established watcher when the StopCh was closed"), PR #131266 (call the
watcher's ``Stop`` on every exit path); ``fabric8io/kubernetes-client`` #2941 is the Java twin (the
reflector's ``stop()`` only cleared a flag and the watch ran on).

A store's ``stop()`` may come at any moment: a leader losing its lease, a test tearing down, a
process handling SIGTERM. When it comes while the informer thread is inside its list there is no
watch to stop yet, so ``stop()`` stops nothing; the list returns, and the loop goes straight on to
open a watch without looking at the flag again. Nobody will stop that watch: on a quiet type no
event arrives to reach the in-stream check, and ``Watch.stream`` (no ``timeout_seconds``) reconnects
by itself each time the server ends the watch, so the thread, its connection and its cache outlive a
``stop()`` that returns (this model's waits 5 s), and ``SharedInformer.stop()``, which joins without
a limit, does not return until some event happens to arrive. It shows in every short-lived informer
(tests, CLIs, leader election) and in shutdowns that wait for their threads. The fix: look at the
flag after every request (after the list, and after the watch is opened, under the lock ``stop()``
takes), keep the response in flight where ``stop()`` can find it, and close it there, as kubernetes
37's ``Watch.stop()`` does, by shutting its socket down so that the blocked read wakes.

Both versions list, watch from the list's resourceVersion (without bookmarks, as ``SharedInformer``
asks for none), watch again after a clean end or a cut, relist after a 410, and wait 1 s after
another API error (5 s after a failed list, as ``SharedInformer`` does). ``run()`` starts the
informer thread and waits for ``stop()``; ``stop()`` waits at most 5 s for the thread, where
``SharedInformer.stop()`` would join for ever.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any

from kubernetes import client, watch
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError, ProtocolError

Pod = dict[str, Any]
STOP_GRACE = 5.0  # how long stop() waits for the informer thread to end


def _key(pod: Pod) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _shut_down(response: Any) -> None:
    """Wake a read blocked on ``response`` from another thread (kubernetes 37's ``Watch.stop``)."""
    shutdown = getattr(response, "shutdown", None)  # urllib3 >= 2.3
    if callable(shutdown):
        shutdown()
        return
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class PodInformer:
    """A pod informer with its own thread; how ``stop()`` reaches it is the subject."""

    def __init__(self, api_client: client.ApiClient, *, checks_every_request: bool) -> None:
        self.core = client.CoreV1Api(api_client)
        self.checks_every_request = checks_every_request
        self._cache_lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.resource_version: str | None = None  # None: list first
        self._lock = threading.Lock()  # start/stop against the loop
        self._stop_event = threading.Event()
        self._exited = threading.Event()
        self._done = threading.Event()
        self._started = False  # the informer thread was started (stop() waits for it)
        self._watch: watch.Watch | None = None  # before the fix: the Watch in use
        self._response: Any = None  # after the fix: the watch response in flight

    # -- lifecycle ---------------------------------------------------------------------------
    def run(self) -> None:
        with self._lock:
            if self._stop_event.is_set():
                return
            loop = self._loop_checked if self.checks_every_request else self._loop_unchecked
            threading.Thread(target=loop, name="pod-informer", daemon=True).start()
            self._started = True
        self._done.wait()

    def stop(self) -> None:
        with self._lock:
            self._stop_event.set()
            started = self._started
            in_flight = self._response
        if self.checks_every_request:
            if in_flight is not None:
                _shut_down(in_flight)
        elif self._watch is not None:
            # SharedInformer.stop(): the Watch, if one is open. During the list there is none.
            self._watch.stop()
        if started:
            self._exited.wait(STOP_GRACE)
        self._done.set()

    # -- before the fix: SharedInformer._run_loop's shape ------------------------------------
    def _loop_unchecked(self) -> None:
        try:
            while not self._stop_event.is_set():  # the only check before a request
                if self.resource_version is None:
                    try:
                        self._list()
                    except (client.ApiException, HTTPError):
                        self._stop_event.wait(5)
                        continue
                # No check here: stop() may have come while the list was in flight.
                self._watch = watch.Watch()
                try:
                    for event in self._watch.stream(
                        self.core.list_pod_for_all_namespaces,
                        resource_version=self.resource_version,
                    ):
                        if self._stop_event.is_set():
                            break  # reached only when an event arrives
                        self._handle(event["type"], event["raw_object"])
                except client.ApiException as error:
                    if error.status == 410:
                        self.resource_version = None
                    else:
                        self._stop_event.wait(1)
                except HTTPError:
                    pass  # cut (or stopped): reconnect from the last RV
                finally:
                    self._watch = None
        finally:
            self._exited.set()

    # -- after the fix: a flag check after every request, the response where stop() finds it -
    def _loop_checked(self) -> None:
        try:
            while not self._stop_event.is_set():
                if self.resource_version is None:
                    try:
                        self._list()
                    except (client.ApiException, HTTPError):
                        self._stop_event.wait(5)
                        continue
                    if self._stop_event.is_set():
                        break  # stop() came during the list
                try:
                    response = self.core.list_pod_for_all_namespaces(
                        watch=True,
                        resource_version=self.resource_version,
                        _preload_content=False,
                    )
                except client.ApiException as error:
                    if error.status == 410:
                        self.resource_version = None
                    else:
                        self._stop_event.wait(1)
                    continue
                except HTTPError:
                    continue
                with self._lock:
                    if self._stop_event.is_set():  # stop() came while the watch was opened
                        response.release_conn()
                        break
                    self._response = response
                try:
                    self._stream(response)
                except ProtocolError:
                    pass  # cut, or shut down by stop(): the loop's check decides
                finally:
                    with self._lock:
                        self._response = None
                    response.release_conn()
        finally:
            self._exited.set()

    def _stream(self, response: Any) -> None:
        for line in iter_resp_lines(response):
            if self._stop_event.is_set():
                return
            event = json.loads(line)
            if event["type"] == "ERROR":
                if event["object"].get("code") == 410:
                    self.resource_version = None
                else:
                    self._stop_event.wait(1)
                return
            self._handle(event["type"], event["object"])

    # -- the cache ---------------------------------------------------------------------------
    def _list(self) -> None:
        listed = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)
        with self._cache_lock:
            self.pods = {_key(pod): pod for pod in listed["items"]}
        self.resource_version = listed["metadata"]["resourceVersion"]

    def _handle(self, kind: str, obj: Pod) -> None:
        self.resource_version = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            return
        with self._cache_lock:
            if kind == "DELETED":
                self.pods.pop(_key(obj), None)
            elif kind in ("ADDED", "MODIFIED"):
                self.pods[_key(obj)] = obj

    def view(self) -> dict[str, Pod]:
        with self._cache_lock:
            return dict(self.pods)

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.pods)}


def checks_before_watch_loop(api_client: client.ApiClient) -> PodInformer:
    """Before the fix: stop() during the list stops nothing; the loop opens a watch and stays."""
    return PodInformer(api_client, checks_every_request=False)


def checks_after_every_request(api_client: client.ApiClient) -> PodInformer:
    """After: the flag is checked after the list and the watch open; stop() closes the watch."""
    return PodInformer(api_client, checks_every_request=True)
