"""The queues a store holds and how many items wait in each: a worker's backlog, named.

A store that hands watch events to a worker through an unbounded queue, and whose worker is
slower than the events, is behind, not wrong about history: at the end of a run its derived
state trails the server by what still waits in the queue. The history oracle compares it with a
fresh store and sees entries at older resourceVersions; this module lets the report say why
("store.queue holds 7 items not yet handled").

Only objects that are queues by type are counted (``queue.Queue`` and its kinds, ``SimpleQueue``,
``asyncio.Queue``): a ``deque`` or a list may be a queue or a history, and a report must not
guess. They are read without their locks, at a quiescent point, when no thread of the store
runs.
"""

from __future__ import annotations

import asyncio
import queue
from typing import Any

# How deep below the store the walk looks for queues: store.queue, store.worker.queue.
DEPTH = 2


def _waiting(obj: object) -> int | None:
    """How many items wait in ``obj`` if it is a queue, else None."""
    if isinstance(obj, queue.Queue):
        return len(obj.queue)  # the deque under its mutex: nothing runs at a quiescent point
    if isinstance(obj, queue._PySimpleQueue):  # type: ignore[attr-defined]
        return len(obj._queue)
    if isinstance(obj, (queue.SimpleQueue, asyncio.Queue)):
        return obj.qsize()
    return None


def backlog(store: object, *, name: str = "store") -> tuple[tuple[str, int], ...]:
    """``(path, items waiting)`` for each non-empty queue within :data:`DEPTH` attribute steps
    of ``store``, in attribute order."""
    found: list[tuple[str, int]] = []
    seen: set[int] = set()

    def visit(obj: Any, path: str, depth: int) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        waiting = _waiting(obj)
        if waiting is not None:
            if waiting:
                found.append((path, waiting))
            return
        if depth == DEPTH:
            return
        try:
            # Not getattr: a class's own __getattr__ (a proxy, a lazy client) is not run.
            attributes = object.__getattribute__(obj, "__dict__")
        except (AttributeError, TypeError):
            return  # no instance dict (a builtin, a slotted object): nothing below to visit
        if not isinstance(attributes, dict):
            return
        for attribute, value in list(attributes.items()):
            visit(value, f"{path}.{attribute}", depth + 1)

    visit(store, name, 0)
    return tuple(found)
