"""check_memory_bounded is a pure oracle: verdicts from samples, with the numbers."""

from __future__ import annotations

import pytest

from kubesim import MemorySample, MemorySampler, check_memory_bounded


def samples(*sizes: int) -> list[MemorySample]:
    return [MemorySample(round_, size, size // 64) for round_, size in enumerate(sizes)]


def test_a_flat_store_passes() -> None:
    assert check_memory_bounded(samples(900_000, 100_000, 100_400, 99_800, 100_100)) is None


def test_steady_growth_fails_with_the_slope_and_the_endpoints() -> None:
    violation = check_memory_bounded(samples(0, 100_000, 150_000, 200_000, 250_000))
    assert violation is not None
    assert violation.growth_per_round == pytest.approx(50_000)
    text = str(violation)
    assert "grows by 50,000 bytes per round" in text
    assert "100,000 bytes after round 1" in text
    assert "250,000 after round 4" in text


def test_the_warmup_sample_is_left_out() -> None:
    # A large first round (caches, first copies) is not growth.
    assert check_memory_bounded(samples(10, 500_000, 500_000, 500_000)) is None
    assert check_memory_bounded(samples(10, 500_000, 500_000, 500_000), warmup=0) is not None


def test_tolerance_is_respected_and_bad_arguments_are_named() -> None:
    growing = samples(0, 1000, 2000, 3000)
    assert check_memory_bounded(growing, tolerance_per_round=1000) is None
    assert check_memory_bounded(growing, tolerance_per_round=999) is not None
    with pytest.raises(ValueError, match="warmup=-1"):
        check_memory_bounded(growing, warmup=-1)
    with pytest.raises(ValueError, match="at least 2 samples"):
        check_memory_bounded(samples(1, 2))


def test_the_sampler_sees_what_a_store_retains_and_not_what_it_frees() -> None:
    kept: list[bytes] = []
    with MemorySampler() as sampler:
        sampler.sample(0)
        kept.extend(bytes(1000) + bytes([i % 256]) for i in range(200))
        _garbage = [bytes(5000) for _ in range(200)]
        del _garbage
        grown = sampler.sample(1)
    delta = grown.retained_bytes - sampler.samples[0].retained_bytes
    assert 200 * 1000 <= delta < 200 * 1000 + 50_000
    assert any("test_memory_oracle.py" in site for site, _ in grown.top_sites)
