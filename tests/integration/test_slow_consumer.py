"""A slow consumer under the official client: the server closes its watch, the client resumes.

apiserver ``cache_watcher.go`` closes a watcher whose client does not keep up ("Forcing watcher
close due to unresponsiveness"): the client sees a clean end of the stream, and a watch loop
(client-go's reflector, the Python client's ``watch.Watch().stream`` without
``timeout_seconds``) watches again from the last resourceVersion it saw, so the events it
missed are replayed from the server's history. In process: no sockets, virtual time.
"""

from __future__ import annotations

from kubernetes import client, watch

import kubesim
from kubesim import APIServer
from kubesim.apiserver.server import AutojumpWait
from kubesim.workload import make_pod


def test_the_official_watch_loop_resumes_after_the_server_closes_it_as_slow() -> None:
    server = APIServer(seed=1, watch_buffer=3, wait_policy=AutojumpWait())
    core = client.CoreV1Api(kubesim.kubernetes_client(server))
    start = str(server.resource_version)
    stream = watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=start)
    server.create("pods", make_pod("a", "default"))
    first = next(stream)
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "a")
    # The client stops reading while 4 more pods are created: one more than the buffer holds.
    for name in "bcde":
        server.create("pods", make_pod(name, "default"))
    closed = [entry for entry in server.trace if entry[0] == "watch-end"]
    assert closed == [("watch-end", 1, "closed")], "the server closed the slow watch"
    assert server.open_watches == 0
    # Reading again: no error reaches the caller; the loop watched again from "a"'s RV and
    # got every missed event once, in order, from a second watch.
    resumed = [next(stream) for _ in range(4)]
    assert [(e["type"], e["object"].metadata.name) for e in resumed] == [
        ("ADDED", name) for name in "bcde"
    ]
    watches = [entry for entry in server.trace if entry[0] == "watch"]
    assert [entry[4] for entry in watches] == [
        str(start),
        first["object"].metadata.resource_version,
    ]
    assert server.open_watches == 1
    assert server.clock.now() == 0, "no watch timed out: the server closed it"
