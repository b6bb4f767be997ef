"""Same seed, same bytes, across kubesim versions.

The digest below covers what a fixed workload makes a server emit: the objects ``create``
returns, every watch line (ADDED, MODIFIED after a patch, DELETED) and the list bodies of two
kinds. It was computed with the write path as it was before creates stopped deep-copying their
bodies (commit 33421c0), and the rewrite had to reproduce it exactly. Replay lines and bug
reports name seeds: if this digest changes, what every recorded seed means changes with it, so
change it only on purpose and say so in the changelog.

Changed once on purpose since: a created object's ``resourceVersion`` moved from the end of its
metadata to its place after ``uid`` (the same content, checked key for key, in Go's order).
"""

from __future__ import annotations

import hashlib

from kubesim import APIServer
from kubesim.wire.routes import Request, handle
from kubesim.workload.pods import make_pod

PINNED = "e6272faf27364aff88bbbf808776526047ac40f0dfb3d113fca76c0d2825b6ce"


def test_a_seeded_workload_emits_the_same_bytes_as_before_the_write_path_rewrite() -> None:
    server = APIServer(seed=7)
    stream = server.watch(server.resource("pods"), resource_version="0")
    digest = hashlib.sha256()
    for i in range(50):
        pod = make_pod(
            f"web-{i:03d}",
            "default",
            labels={"app": f"a{i % 3}"},
            node=f"n{i % 2}",
            pod_ip=f"10.0.0.{i}",
        )
        created = server.create("pods", pod, namespace="default")
        digest.update(repr(sorted(created.items())).encode())
    config = {"metadata": {"name": "c", "labels": {"b": "2", "a": "1"}}, "data": {"k": "v"}}
    server.create("configmaps", config, namespace="default")
    server.patch("pods", "web-001", {"metadata": {"labels": {"x": "y"}}}, namespace="default")
    server.delete("pods", "web-002", namespace="default")
    while chunk := stream.poll():
        digest.update(chunk)
    for plural in ("pods", "configmaps"):
        body = handle(server, Request.from_target("GET", f"/api/v1/namespaces/default/{plural}"))
        assert isinstance(body.body, bytes)
        digest.update(body.body.rstrip(b"\n"))  # JSON answers gained Go's newline since
    assert digest.hexdigest() == PINNED
