"""Initial events are a snapshot at the watch's start RV, even while the client lags behind.

k8s-wire.md §2.1-§2.2 and behaviours 5 and 8: a watch with RV unset (or a watch-list) "begins
with synthetic ADDED events of all resources instances that exist at the starting resource
version", then the annotated BOOKMARK at that RV, then live events. Writes that land while the
server is still sending the initial events must neither change them nor overtake them.

Made deterministic without timing: the server holds enough pods that their initial events
cannot fit in the socket buffers (the kernel's maximum send buffer plus the client's pinned
receive buffer, read from ``/proc``), and the client does not read until its writes are done.
However far the server got, it cannot have sent the last pods in key order, which the test then
modifies and deletes. This module runs its own server process (``kubesim serve --pods N``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import serve
from .objects import pod, pods
from .wire import Endpoint, is_named, query, rv_of, summary

NAMESPACE = "team-0"  # where ``kubesim serve --pods`` puts its pods
RECEIVE_BUFFER = 64 * 1024
MIN_LINE_BYTES = 1500  # a ``--pods`` pod's ADDED line is about 1.8 KB
CHUNK_LINES = 256  # lines the server may take for one chunk before writing it
MAX_PODS = 20_000  # keeps the module within a few seconds
TIMEOUT = 900
MERGE = "application/merge-patch+json"


def _max_send_buffer() -> int:
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem", encoding="ascii") as handle:
            return int(handle.read().split()[2])
    except (OSError, IndexError, ValueError):
        pytest.skip("needs Linux's /proc/sys/net/ipv4/tcp_wmem to size the backlog")


@pytest.fixture(scope="module")
def crowded() -> Iterator[tuple[Endpoint, int]]:
    unsendable = _max_send_buffer() + 2 * RECEIVE_BUFFER + 1024 * 1024
    count = math.ceil(unsendable / MIN_LINE_BYTES) + 2 * CHUNK_LINES
    if count > MAX_PODS:
        pytest.skip(f"socket buffers of {unsendable} bytes need {count} pods (> {MAX_PODS})")
    with serve("--pods", str(count)) as endpoint:
        yield endpoint, count


def _without_type(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


@pytest.mark.parametrize(
    "params",
    [
        {},
        {
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
        },
    ],
    ids=["rv-unset", "watch-list"],
)
def test_writes_during_initial_events_neither_change_nor_overtake_them(
    crowded: tuple[Endpoint, int], params: dict[str, str]
) -> None:
    api, count = crowded
    listing = api.ok("GET", pods(NAMESPACE))
    start = listing["metadata"]["resourceVersion"]
    assert len(listing["items"]) == count
    *_, second_last, last = (item["metadata"]["name"] for item in listing["items"])

    path = pods(NAMESPACE) + query(watch=1, timeoutSeconds=TIMEOUT, **params)
    with api.watch(path, receive_buffer=RECEIVE_BUFFER) as stream:
        stream.assert_watch_head()
        # The server now blocks on a full socket, long before the last pods in key order.
        modified = api.ok(
            "PATCH", pods(NAMESPACE, last), {"metadata": {"labels": {"x": "1"}}}, content_type=MERGE
        )
        deleted = api.ok("DELETE", pods(NAMESPACE, second_last))
        created = api.ok("POST", pods(NAMESPACE), pod("zzz-new"), expect=201)
        events = stream.read_until(is_named("zzz-new"))
        api.advance(TIMEOUT + 1)
        rest = stream.read_to_end()
        assert stream.end == "clean"

    # Restore the namespace for the other parametrization.
    api.ok("DELETE", pods(NAMESPACE, "zzz-new"))
    api.ok(
        "PATCH", pods(NAMESPACE, last), {"metadata": {"labels": {"x": None}}}, content_type=MERGE
    )
    restored = _without_type(
        dict(
            deleted,
            metadata={
                k: v
                for k, v in deleted["metadata"].items()
                if k not in ("uid", "resourceVersion", "creationTimestamp")
            },
        )
    )
    api.ok("POST", pods(NAMESPACE), restored, expect=201)

    assert all(e["type"] != "ERROR" for e in events + rest)
    initial, after = events[:count], events[count:]
    assert [e["type"] for e in initial] == ["ADDED"] * count
    assert [_without_type(e["object"]) for e in initial] == listing["items"]
    if params:
        marker, after = after[0], after[1:]
        assert marker == {
            "type": "BOOKMARK",
            "object": {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {
                    "resourceVersion": start,
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            },
        }
    live = [e for e in after if e["type"] != "BOOKMARK"]
    assert summary(live) == [
        ("MODIFIED", last, rv_of(modified)),
        ("DELETED", second_last, rv_of(deleted)),
        ("ADDED", "zzz-new", rv_of(created)),
    ]
