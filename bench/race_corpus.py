"""The race corpus of ``bench/races.py``: four racy store shapes, each with correct twins.

Every case has one shape that both tools can drive without adapters that change its meaning:

- ``setup()`` builds fresh shared state (called once per schedule);
- ``workers`` are callables taking that state, each run in its own thread;
- ``invariant(state)`` is checked after every worker finished (a bool, as frontrun wants; the
  kubesim scenario asserts it in thread 0, so a violation is an ``AssertionError`` there).

A worker that raises (``RuntimeError: dictionary changed size during iteration``) is a failure
for both tools as well. This whole module is traced at opcode granularity by both tools, so keep
it free of anything but the code under test: no harness logic, no timing, no set iteration
(dicts iterate in insertion order, so every schedule replays under any ``PYTHONHASHSEED``).

Racy cases (``racy=True``) and the failure each one must produce:

1. ``labels-iter``: a reader iterates a label map (``for k, v in labels.items()``) while a
   writer adds and deletes keys in place -> ``RuntimeError`` in the reader.
2. ``relist-snapshot``: a relist clears then refills the cache dict in place while a reader
   snapshots it with ``list(cache.values())`` -> a snapshot misses objects that existed before
   and after the relist (invariant).
3. ``check-then-act``: two threads run ``if k not in d: d[k] = ...; started.append(k)`` ->
   the informer is started twice (invariant ``len(started) == 1``).
4. ``window``: the relist first processes 40 events (local work, 40 loop iterations) and then
   clears and immediately refills; the handler reads once, at its start. Failing needs the
   reflector to run ~160 opcodes ahead uninterrupted, then exactly one preemption inside a
   window of a few opcodes: the "atomicity window" shape, where PCT is expected to win
   (docs/explanation/scheduler.md, "Why a portfolio").

Correct twins (``racy=False``) must never fail: copy-on-write publish (one reference store),
the same code under one ``threading.Lock`` (created in ``setup``, so each tool's patched lock is
used), and for check-then-act the atomic ``dict.setdefault``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Worker = Callable[[Any], None]

# -- 1. label map iterated during in-place writes ---------------------------------------------


class LabelState:
    """One object's label map, and what the reader saw."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {"app": "web", "tier": "frontend", "gen": "0"}
        self.snapshots: list[dict[str, str]] = []
        self.lock = threading.Lock()


def labels_write_in_place(s: LabelState) -> None:
    """Add a label, bump ``gen``, drop the previous extra label: in place."""
    for n in range(1, 4):
        s.labels[f"extra{n}"] = "y"
        s.labels["gen"] = str(n)
        s.labels.pop(f"extra{n - 1}", None)


def labels_write_cow(s: LabelState) -> None:
    """The same updates on a private copy, published with one reference store."""
    for n in range(1, 4):
        fresh = dict(s.labels)
        fresh[f"extra{n}"] = "y"
        fresh["gen"] = str(n)
        fresh.pop(f"extra{n - 1}", None)
        s.labels = fresh


def labels_write_locked(s: LabelState) -> None:
    """The in-place updates, each under the state's lock."""
    for n in range(1, 4):
        with s.lock:
            s.labels[f"extra{n}"] = "y"
            s.labels["gen"] = str(n)
            s.labels.pop(f"extra{n - 1}", None)


def labels_read(s: LabelState) -> None:
    """Copy the label map three times by iterating it."""
    for _ in range(3):
        snap = {}
        for key, value in s.labels.items():
            snap[key] = value
        s.snapshots.append(snap)


def labels_read_locked(s: LabelState) -> None:
    """The same iteration under the state's lock."""
    for _ in range(3):
        snap = {}
        with s.lock:
            for key, value in s.labels.items():
                snap[key] = value
        s.snapshots.append(snap)


def labels_ok(s: LabelState) -> bool:
    """Every snapshot kept the labels that are never removed."""
    return all("app" in snap and "tier" in snap for snap in s.snapshots)


# -- 2. relist clears and refills while a reader snapshots ------------------------------------

PODS = ("pod-a", "pod-b", "pod-c", "pod-d", "pod-e")


class CacheState:
    """A store's cache keyed by name; every pod exists before and after the relist."""

    def __init__(self) -> None:
        self.cache: dict[str, dict[str, Any]] = {name: {"name": name, "rv": 1} for name in PODS}
        self.snapshots: list[list[str]] = []
        self.lock = threading.Lock()


def _relisted() -> dict[str, dict[str, Any]]:
    return {name: {"name": name, "rv": 2} for name in PODS}


def relist_in_place(s: CacheState) -> None:
    """Replace the cache contents in place: clear, then put every listed object back."""
    fresh = _relisted()
    s.cache.clear()
    for name, obj in fresh.items():
        s.cache[name] = obj


def relist_swap(s: CacheState) -> None:
    """Build the new cache aside and publish it with one reference store."""
    s.cache = _relisted()


def relist_locked(s: CacheState) -> None:
    """The in-place relist under the state's lock."""
    fresh = _relisted()
    with s.lock:
        s.cache.clear()
        for name, obj in fresh.items():
            s.cache[name] = obj


def snapshot_read(s: CacheState) -> None:
    """Take two snapshots of the cache's objects."""
    for _ in range(2):
        objs = list(s.cache.values())
        s.snapshots.append([obj["name"] for obj in objs])


def snapshot_read_locked(s: CacheState) -> None:
    """The same snapshots under the state's lock."""
    for _ in range(2):
        with s.lock:
            objs = list(s.cache.values())
        s.snapshots.append([obj["name"] for obj in objs])


def snapshots_complete(s: CacheState) -> bool:
    """No snapshot missed a pod that existed before and after the relist."""
    return all(len(names) == len(PODS) for names in s.snapshots)


# -- 3. check-then-act on a shared dict ---------------------------------------------------------


class RegistryState:
    """Informers by resource; ``started`` records each start (the side effect)."""

    def __init__(self) -> None:
        self.informers: dict[str, object] = {}
        self.started: list[str] = []
        self.lock = threading.Lock()


def ensure_informer(s: RegistryState) -> None:
    """Start the pods informer unless one exists: check, then act."""
    if "pods" not in s.informers:
        s.informers["pods"] = object()
        s.started.append("pods")


def ensure_informer_locked(s: RegistryState) -> None:
    """The same check-then-act under the registry lock."""
    with s.lock:
        if "pods" not in s.informers:
            s.informers["pods"] = object()
            s.started.append("pods")


def ensure_informer_setdefault(s: RegistryState) -> None:
    """Claim the slot atomically with ``dict.setdefault``; only the winner starts."""
    mine = object()
    if s.informers.setdefault("pods", mine) is mine:
        s.started.append("pods")


def started_once(s: RegistryState) -> bool:
    """The informer was started exactly once."""
    return len(s.started) == 1


# -- 4. atomicity window: run far ahead, then one precise preemption -----------------------------

WINDOW_PADDING = 40


class WindowState:
    """A cache that a relist replaces after processing a batch of events."""

    def __init__(self) -> None:
        self.cache: dict[str, dict[str, Any]] = {name: {"name": name, "rv": 1} for name in PODS}
        self.fresh = _relisted()
        self.observed: list[int] = []
        self.lock = threading.Lock()


def window_relist_in_place(s: WindowState) -> None:
    """Process ``WINDOW_PADDING`` events (local work), then clear and refill at once."""
    applied = 0
    for rv in range(WINDOW_PADDING):
        applied += rv & 1
    s.cache.clear()
    s.cache.update(s.fresh)


def window_relist_swap(s: WindowState) -> None:
    """The same work, then publish a new dict with one reference store."""
    applied = 0
    for rv in range(WINDOW_PADDING):
        applied += rv & 1
    s.cache = dict(s.fresh)


def window_relist_locked(s: WindowState) -> None:
    """The same work, then clear and refill under the lock."""
    applied = 0
    for rv in range(WINDOW_PADDING):
        applied += rv & 1
    with s.lock:
        s.cache.clear()
        s.cache.update(s.fresh)


def window_handle(s: WindowState) -> None:
    """An event handler that counts the cached pods once, as soon as it runs."""
    s.observed.append(len(s.cache))


def window_handle_locked(s: WindowState) -> None:
    """The same read under the lock."""
    with s.lock:
        s.observed.append(len(s.cache))


def window_never_empty(s: WindowState) -> bool:
    """The handler never saw an empty cache (every pod exists before and after)."""
    return all(n == len(PODS) for n in s.observed)


# -- the corpus --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One scenario: fresh state, the worker threads, the invariant checked after them."""

    name: str
    family: str
    racy: bool
    description: str
    setup: Callable[[], Any]
    workers: tuple[Worker, ...]
    invariant: Callable[[Any], bool]


CASES: tuple[Case, ...] = (
    Case(
        "labels-iter",
        "labels-iter",
        True,
        "reader iterates labels.items() while a writer adds/deletes keys in place",
        LabelState,
        (labels_write_in_place, labels_read),
        labels_ok,
    ),
    Case(
        "labels-iter/cow",
        "labels-iter",
        False,
        "writer publishes a fresh label dict with one reference store",
        LabelState,
        (labels_write_cow, labels_read),
        labels_ok,
    ),
    Case(
        "labels-iter/locked",
        "labels-iter",
        False,
        "writer and reader hold one threading.Lock",
        LabelState,
        (labels_write_locked, labels_read_locked),
        labels_ok,
    ),
    Case(
        "relist-snapshot",
        "relist-snapshot",
        True,
        "relist clears then refills the cache in place; reader takes list(cache.values())",
        CacheState,
        (relist_in_place, snapshot_read),
        snapshots_complete,
    ),
    Case(
        "relist-snapshot/swap",
        "relist-snapshot",
        False,
        "relist builds the new cache aside and swaps the reference",
        CacheState,
        (relist_swap, snapshot_read),
        snapshots_complete,
    ),
    Case(
        "relist-snapshot/locked",
        "relist-snapshot",
        False,
        "relist and snapshot hold one threading.Lock",
        CacheState,
        (relist_locked, snapshot_read_locked),
        snapshots_complete,
    ),
    Case(
        "check-then-act",
        "check-then-act",
        True,
        "two threads: if k not in d: d[k] = ...; started.append(k)",
        RegistryState,
        (ensure_informer, ensure_informer),
        started_once,
    ),
    Case(
        "check-then-act/locked",
        "check-then-act",
        False,
        "the check and the act under one threading.Lock",
        RegistryState,
        (ensure_informer_locked, ensure_informer_locked),
        started_once,
    ),
    Case(
        "check-then-act/setdefault",
        "check-then-act",
        False,
        "the slot is claimed atomically with dict.setdefault",
        RegistryState,
        (ensure_informer_setdefault, ensure_informer_setdefault),
        started_once,
    ),
    Case(
        "window",
        "window",
        True,
        f"relist runs {WINDOW_PADDING} iterations, then clear(); update(); handler reads once",
        WindowState,
        (window_relist_in_place, window_handle),
        window_never_empty,
    ),
    Case(
        "window/swap",
        "window",
        False,
        "the relist publishes a new dict with one reference store",
        WindowState,
        (window_relist_swap, window_handle),
        window_never_empty,
    ),
    Case(
        "window/locked",
        "window",
        False,
        "clear and refill, and the handler's read, under one threading.Lock",
        WindowState,
        (window_relist_locked, window_handle_locked),
        window_never_empty,
    ),
)


def by_name(name: str) -> Case:
    """The case called ``name``."""
    for case in CASES:
        if case.name == name:
            return case
    raise KeyError(f"no race case named {name!r}; known: {[c.name for c in CASES]}")
