"""fuzz_test: a store as a plain Hypothesis test (for HypoFuzz and fleets), and the databases
a URL names."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase

from kubesim.testing import StoreViolation, example_database, fuzz_test


def test_a_fuzz_target_fails_on_a_leak_with_the_replay_line() -> None:
    test = fuzz_test("models.kubearmor:before_pr1553", kinds=["create"], max_examples=5)
    assert hasattr(test, "hypothesis")  # what HypoFuzz and pytest look for
    with pytest.raises(StoreViolation) as failed:
        test()
    message = str(failed.value)
    assert message.startswith("bounded:")
    assert message.splitlines()[-1].startswith("replay: kubesim replay ks1.")


def test_a_correct_store_passes_its_fuzz_target() -> None:
    fuzz_test("models.ksm_relist:build_then_swap", max_examples=10)()


def test_database_urls(tmp_path: Path) -> None:
    assert example_database(":memory:") is None
    directory = example_database(str(tmp_path / "db"))
    assert isinstance(directory, DirectoryBasedExampleDatabase)
    assert example_database(str(tmp_path / "db")) is directory  # one instance per URL
