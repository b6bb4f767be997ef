"""What differs on the list/watch path between kube-apiserver releases: version profiles.

Stores meet servers of many ages. Three differences decide whether a store written against one
works against another, and each is a knob of :class:`~kubesim.apiserver.server.APIServer`:

- **the in-stream expiry's reason**: a watch from a resourceVersion the watch cache no longer
  has gets a 410 ``ERROR`` event whose reason is ``Expired`` since 1.18; servers up to 1.17
  sent ``Gone`` (client-go's ``reflector.go`` ``isExpiredError`` accepts both). A store that
  matches ``reason == "Expired"`` loops against an older server;
- **bookmarks**: ``allowWatchBookmarks`` is honoured from 1.15 (beta, GA in 1.17); an older
  server sends none, so a quiet watch is silent until it times out (and a client read timeout
  shorter than that fires);
- **watch-list** (``sendInitialEvents``, KEP-3157): refused with 422 while the ``WatchList``
  feature gate is off, before it went on by default;
- **consistent reads from cache** (``ConsistentListFromCache``, KEP-2340, on from 1.31): a list
  with no resourceVersion is served by the watch cache once it has caught up with etcd, after
  up to 3 s of waiting for one behind, then by etcd; before, straight from etcd. A store meets
  the difference as a consistent list that takes 3 s while the watch cache lags.

:data:`SERVER_VERSIONS` names one profile per behaviour worth telling apart. A scenario switches
the server to one with the ``server-version`` step (a cluster upgraded or rolled back under the
store); ``kubesim check --server-version`` sets one for the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServerVersion:
    """One release's list/watch behaviour, as the knobs of the API server set it."""

    name: str
    expired_reason: str  # the 410's reason in a watch's ERROR event: "Expired" or "Gone"
    bookmarks: bool  # allowWatchBookmarks honoured
    watch_list: bool  # sendInitialEvents served (the WatchList gate on)
    consistent_list_from_cache: bool  # the ConsistentListFromCache gate on
    summary: str

    def apply(self, server: Any) -> None:
        """Make ``server`` behave as this release does from now on."""
        with server.lock:
            server.expired_reason = self.expired_reason
            server.bookmarks = self.bookmarks
            server.watch_list = self.watch_list
            server.consistent_list_from_cache = self.consistent_list_from_cache
            server.trace.record("fault", "server_version", self.name)


SERVER_VERSIONS: dict[str, ServerVersion] = {
    version.name: version
    for version in (
        ServerVersion("1.14", "Gone", False, False, False, "410 Gone, no bookmarks, no watch-list"),
        ServerVersion("1.17", "Gone", True, False, False, "410 Gone, bookmarks, no watch-list"),
        ServerVersion(
            "1.27", "Expired", True, False, False, "410 Expired, bookmarks, no watch-list"
        ),
        ServerVersion(
            "1.33",
            "Expired",
            True,
            True,
            True,
            "410 Expired, bookmarks, watch-list, consistent lists from the watch cache",
        ),
    )
}
"""The profiles, oldest first. The default server behaves as the newest."""

NEWEST = "1.33"


def server_version(name: str) -> ServerVersion:
    """The profile called ``name``; a ValueError lists the known ones."""
    try:
        return SERVER_VERSIONS[name]
    except KeyError:
        raise ValueError(
            f"server version must be one of {list(SERVER_VERSIONS)}, got {name!r}"
        ) from None
