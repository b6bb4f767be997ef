"""Races inside one line, for the scheduling-point tests (traced whole: keep harness out).

Each scenario runs two increments that are one line each (``self.count += 1``,
``box["n"] += 1``): a read, an add and a write. Only a point *between* those opcodes can lose
an update, so line granularity never fails these and opcode granularity must.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def bump(self) -> None:
        self.count += 1


def _both(first: Callable[[], Any], second: Callable[[], Any]) -> None:
    a = threading.Thread(target=first, name="a")
    b = threading.Thread(target=second, name="b")
    a.start()
    b.start()
    a.join()
    b.join()


def attribute_scenario() -> None:
    """``self.count += 1`` in two threads."""
    counter = Counter()
    _both(counter.bump, counter.bump)
    assert counter.count == 2, f"lost update: count={counter.count} after 2 increments"


def closure_scenario() -> None:
    """``box["n"] += 1`` in a function and a lambda created during the run."""
    box = {"n": 0}

    def bump() -> None:
        box["n"] += 1

    _both(bump, lambda: box.__setitem__("n", box["n"] + 1))
    assert box["n"] == 2, f"lost update: n={box['n']} after 2 increments"


def incrementer(box: dict[str, int]) -> Iterator[None]:
    while True:
        box["n"] += 1
        yield


def generator_scenario_factory() -> Callable[[], None]:
    """Generators started *before* the run, resumed in it (found by their resume event)."""
    box = {"n": 0}
    gens = [incrementer(box), incrementer(box)]
    for gen in gens:
        next(gen)

    def scenario() -> None:
        before = box["n"]
        _both(lambda: next(gens[0]), lambda: next(gens[1]))
        assert box["n"] == before + 2, f"lost update: n={box['n']} after {before} + 2 increments"

    return scenario
