"""A campaign leaves what was alive before it to the collector's permanent generation.

Full collections walk every tracked object; without the freeze, each example of a campaign
paid for the whole process's heap (kubesim/_core/heap.py says how much).
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from kubesim._core.heap import frozen_heap
from kubesim.testing.check import check_store
from tests.unit.property_stores import reflector


@pytest.fixture
def no_freeze() -> Any:
    if gc.get_freeze_count():
        pytest.skip("something in this process froze objects already")
    yield
    assert gc.get_freeze_count() == 0


def test_objects_alive_before_are_frozen_during_and_given_back_after(no_freeze: None) -> None:
    before = object.__new__(type("Before", (), {}))
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        during = type("During", (), {})()
        # What the block allocates is the collector's as usual: a cycle made here is collected.
        cycle: list[Any] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
        assert gc.is_tracked(during)
    assert gc.get_freeze_count() == 0
    assert gc.is_tracked(before)


def test_a_callers_freeze_is_left_to_the_caller(no_freeze: None) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with frozen_heap():
            pass
        assert gc.get_freeze_count() == frozen  # not unfrozen by us
    finally:
        gc.unfreeze()


def test_a_disabled_collector_is_left_alone(no_freeze: None) -> None:
    gc.disable()
    try:
        with frozen_heap():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_check_store_runs_its_examples_with_the_heap_frozen(no_freeze: None) -> None:
    seen: list[int] = []

    def factory(api_client: Any) -> Any:
        seen.append(gc.get_freeze_count())
        return reflector(api_client)

    report = check_store(factory, spec="tests.unit.property_stores:reflector", examples=3)
    assert report.found is None
    assert seen
    assert all(count > 0 for count in seen)
    assert gc.get_freeze_count() == 0
