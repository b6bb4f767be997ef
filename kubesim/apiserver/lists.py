"""LIST: pages at a resourceVersion, and the selectors a list or watch is filtered by.

:func:`list_page` serves one page of a list the way kube-apiserver picks its source: the
latest state (a consistent read of storage) when no resourceVersion is given, the watch cache
for ``resourceVersion=0`` and for NotOlderThan, a snapshot of history for an exact
resourceVersion (410 Expired once compacted, 504 when not reached yet). The selector parsers
answer a ``Status`` 400 for what kube-apiserver refuses.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesim.apiserver import status as st
from kubesim.apiserver.continuation import encode_continue
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    escape_field_value,
)
from kubesim.apiserver.storage import Key, Stored
from kubesim.apiserver.watch_cache import TOO_LARGE_WAIT, too_large_resource_version

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

# Set while a request is answered for a transport that, given an answer that took time
# (``ListResult.took``), waits that long on the virtual clock and asks again
# (kubesim.wire.routes.handle's ``asks_again``): that first answer never reaches the client.
ASKS_AGAIN: ContextVar[bool] = ContextVar("ASKS_AGAIN", default=False)


@dataclass(frozen=True)
class ListResult:
    """One page of a list: the items (as stored) and the list metadata."""

    resource: ResourceType
    items: list[Stored]
    resource_version: int
    continue_token: str | None
    remaining: int | None
    # Seconds the answer took: a consistent list that waited for a watch cache behind storage
    # before it fell back to storage (ConsistentListFromCache; see list_page).
    took: float = 0.0


def list_page(
    server: APIServer,
    resource: ResourceType,
    *,
    namespace: str | None,
    labels: LabelSelector,
    fields: FieldSelector,
    rv: int | None,
    exact: bool,
    limit: int | None,
    start: Key | None,
) -> ListResult:
    """One page of a list at ``rv``, from key ``start``.

    ``rv`` None is "most recent" (a consistent read of storage); 0 ("any") and any RV that is
    not ``exact`` (NotOlderThan) are served from the watch cache, which is storage itself
    unless :meth:`~kubesim.apiserver.server.APIServer.stall_watch_cache` stopped it at an older
    RV, or the request went to a lagging replica's
    (:meth:`~kubesim.apiserver.server.APIServer.lag_replica`). With
    ``server.consistent_list_from_cache`` (1.31+), a consistent list's first page goes to the
    watch cache too: one behind storage is waited for (``TOO_LARGE_WAIT``), then the list falls
    back to storage, current, with :attr:`ListResult.took` saying how long it took.
    """
    with server.lock:
        storage = server.storage
        consistent = rv is None and start is None and server.consistent_list_from_cache
        behind = consistent and server.serving_cache().stalled_at is not None
        took = TOO_LARGE_WAIT if behind else 0.0
        from_cache = rv is not None and (rv == 0 or not exact)
        stalled_at = (server.serving_cache() if from_cache else server.watch_cache).stalled_at
        if stalled_at is not None and rv is not None and (rv == 0 or not exact):
            if rv > stalled_at:
                raise too_large_resource_version(rv, stalled_at)
            list_rv = stalled_at
            source = storage.snapshot(resource, stalled_at, namespace=namespace, start=start)
        elif rv is None or rv == 0 or (not exact and rv <= storage.rv):
            list_rv = storage.rv
            source = storage.items(resource, namespace=namespace, start=start)
        else:
            if rv > storage.rv:
                raise too_large_resource_version(rv, storage.rv)
            if rv < storage.compacted_rv:
                raise st.expired("The resourceVersion for the provided list is too old.")
            list_rv = rv
            source = storage.snapshot(resource, rv, namespace=namespace, start=start)
        items: list[Stored] = []
        next_key: Key | None = None
        remaining = 0
        for key, stored in source:
            if not selected(resource, stored, labels, fields):
                continue
            if limit is not None and len(items) >= limit:
                next_key = key
                if labels.empty() and fields.empty():
                    # remainingItemCount: with no selector every later item counts. Count
                    # them without the per-item checks, which used to run over the whole
                    # rest of the list on every page (bench/README.md: 1.4-1.6x faster).
                    remaining = 1 + sum(1 for _ in source)
                break  # with selectors remainingItemCount is not reported
            items.append(stored)
        token = None
        remaining_count: int | None = None
        if next_key is not None:
            token = encode_continue(list_rv, next_key)
            if labels.empty() and fields.empty():
                remaining_count = remaining
        # An answer the client will not get (it waits and asks again, see ASKS_AGAIN) is not
        # a completed list, and shows the client nothing.
        delivered = not (took and ASKS_AGAIN.get())
        if next_key is None and delivered:
            server.lists_completed += 1
        if server.delivery_listeners and delivered:
            for stored in items:
                for listener in server.delivery_listeners:
                    listener(stored)
        return ListResult(resource, items, list_rv, token, remaining_count, took)


def parse_label_selector(text: str) -> LabelSelector:
    try:
        return LabelSelector.parse(text)
    except SelectorError as exc:
        raise st.bad_request(str(exc)) from exc


def parse_field_selector(resource: ResourceType, text: str) -> FieldSelector:
    try:
        selector = FieldSelector.parse(text)
    except SelectorError as exc:
        raise st.bad_request(str(exc)) from exc
    for field_name, _, _ in selector.requirements():
        name = resource.field_aliases.get(field_name, field_name)
        if name not in resource.selectable_fields:
            raise st.bad_request(f"field label not supported: {field_name}")
    if resource.field_aliases and any(
        f in resource.field_aliases for f, _, _ in selector.requirements()
    ):
        selector = FieldSelector.parse(
            ",".join(
                f"{resource.field_aliases.get(f, f)}{'=' if op == '=' else '!='}"
                f"{escape_field_value(v)}"
                for f, op, v in selector.requirements()
            )
        )
    return selector


def selected(
    resource: ResourceType, stored: Stored, labels: LabelSelector, fields: FieldSelector
) -> bool:
    if not labels.empty() and not labels.matches(stored.obj["metadata"].get("labels")):
        return False
    return fields.empty() or fields.matches(resource.fields_of(stored.obj))
