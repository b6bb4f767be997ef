"""A worker behind an unbounded queue: the report names the backlog, not just "history".

A slow worker's derived state trails the server by what still waits in its queue; the history
oracle saw entries at older resourceVersions than a fresh store's and said nothing of the queue.
"""

from __future__ import annotations

import queue
import time
from typing import Any

import property_stores as stores

from kubesim.checks.backlog import backlog
from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import PatchLabels


class _SlowWorker(stores.Reflector):
    """The reflector's cache feeds a queue; a worker copies each pod into ``handled``, 20 s an
    item (an expensive handler), and nothing bounds the queue."""

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.handled: dict[str, dict[str, Any]] = {}

    def _watch(self) -> bool:
        before = dict(self.cache)
        again = super()._watch()
        for key, pod in self.cache.items():
            if before.get(key) is not pod:
                self.events.put(pod)
        return again

    def workers(self) -> list[Any]:
        return [self._work]

    def _work(self) -> None:
        while True:
            pod = self.events.get()
            time.sleep(20)
            self.handled[stores._key(pod)] = pod


def test_a_history_difference_names_the_queue_still_holding_items() -> None:
    recording = run_scenario(_SlowWorker, [PatchLabels(6, unique=True)], seed=0).recording
    verdict = judge(recording)
    history = [v for v in verdict.violations if v.property == "history"]
    assert history, verdict
    first = history[0].details[0]
    assert first.startswith("a backlog when the fresh store was compared: store.events holds ")
    assert " items not yet handled (a worker behind its queue" in first


def test_the_backlog_is_read_from_queues_only() -> None:
    class Store:
        def __init__(self) -> None:
            self.pending: queue.Queue[int] = queue.Queue()
            self.simple: queue.SimpleQueue[int] = queue.SimpleQueue()
            self.history = [1, 2, 3]  # a list may be a history: not counted
            self.inner = type("Inner", (), {})()
            self.inner.q = queue.Queue()

    store = Store()
    for item in range(3):
        store.pending.put(item)
    store.simple.put(1)
    store.inner.q.put(1)
    assert backlog(store) == (
        ("store.pending", 3),
        ("store.simple", 1),
        ("store.inner.q", 1),
    )
