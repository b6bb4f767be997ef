"""The deterministic core: one choice source, one virtual clock, a trace with a stable hash."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim._core import (
    RecordingChoices,
    ReplayChoices,
    ReplayExhausted,
    SeededChoices,
    Trace,
    VirtualClock,
    choose,
    integers,
    uuid4_drawer,
)
from kubesim._core.choices import format_uuid4, format_uuid4_bytes


def draws(source: SeededChoices | RecordingChoices | ReplayChoices, n: int = 20) -> list[int]:
    return [source.integer(0, 1000) for _ in range(n)]


def test_the_same_seed_gives_the_same_draws() -> None:
    assert draws(SeededChoices(7)) == draws(SeededChoices(7))
    assert draws(SeededChoices(7)) != draws(SeededChoices(8))


def test_forked_streams_are_independent_of_each_other() -> None:
    a = SeededChoices(3)
    b = SeededChoices(3)
    # Drawing from one fork must not shift another fork's stream.
    a.fork("server").integer(0, 10)
    assert draws(a.fork("workload")) == draws(b.fork("workload"))
    assert draws(a.fork("x")) != draws(a.fork("y"))


@given(st.integers(), st.integers(-50, 50), st.integers(0, 50))
def test_integer_stays_within_its_inclusive_bounds(seed: int, lo: int, width: int) -> None:
    value = SeededChoices(seed).integer(lo, lo + width)
    assert lo <= value <= lo + width


@given(st.integers(0, 2**31), st.lists(st.tuples(st.integers(-9, 9), st.integers(0, 2**70))))
def test_draws_are_the_stream_random_randrange_gives_for_the_same_seed(
    seed: int, ranges: list[tuple[int, int]]
) -> None:
    # SeededChoices inlines randrange for speed; seeds recorded in replay lines and bug
    # reports must keep meaning the same run, so the stream is pinned to the stdlib's.
    import random

    from kubesim._core.choices import _seed_bytes

    source = SeededChoices(seed).fork("server")
    reference = random.Random(_seed_bytes(seed, "root/server"))
    for lo, width in ranges:
        assert source.integer(lo, lo + width) == lo + reference.randrange(width + 1)


@given(st.integers(0, 2**31), st.integers(-9, 9), st.integers(0, 2**40), st.integers(0, 9))
def test_a_batch_of_draws_is_the_same_stream_as_one_draw_at_a_time(
    seed: int, lo: int, width: int, count: int
) -> None:
    batched, single = SeededChoices(seed), SeededChoices(seed)
    values = integers(batched, lo, lo + width, count)
    assert values == [single.integer(lo, lo + width) for _ in range(count)]
    assert batched.draws == single.draws == count
    # The next draw after a batch is where a one-at-a-time stream would be too.
    assert batched.integer(0, 2**32) == single.integer(0, 2**32)
    # Any other source is asked one draw at a time (so a recording sees each one).
    recorder = RecordingChoices(SeededChoices(seed))
    assert integers(recorder, lo, lo + width, count) == values
    assert len(recorder.log) == count


@settings(max_examples=25)
@given(st.integers(0, 2**31), st.integers(1, 400))
def test_a_uuid_is_four_draws_and_the_seeded_source_reads_them_ahead_in_blocks(
    seed: int, count: int
) -> None:
    import uuid

    fast, single = SeededChoices(seed), SeededChoices(seed)
    drawer = uuid4_drawer(fast)
    drawn = [drawer() for _ in range(count)]  # up to about three blocks of 128
    for uid in drawn:
        a, b, c, d = (single.integer(0, 0xFFFFFFFF) for _ in range(4))
        assert uid == str(uuid.UUID(int=a << 96 | b << 64 | c << 32 | d, version=4))
    # Read ahead: the source has drawn at least what the uuids took, in whole blocks.
    assert fast.draws >= single.draws == 4 * count
    # Any other source is asked draw by draw, when a uuid is asked for, and gives the same ones.
    recorder = RecordingChoices(SeededChoices(seed))
    recorded = uuid4_drawer(recorder)
    assert recorder.log == []
    assert [recorded() for _ in range(count)] == drawn
    assert len(recorder.log) == 4 * count


def test_uuid_blocks_continue_one_stream() -> None:
    """A block's leftover draws open the next one: blocks end anywhere inside a uuid."""
    import uuid

    source, single = SeededChoices("blocks"), SeededChoices("blocks")
    blocks = [source.uuid4_block() for _ in range(20)]
    assert all(100 <= len(block) <= 156 for block in blocks)  # about 1,024 / 2 / 4 each
    for uid in [uid for block in blocks for uid in block]:
        a, b, c, d = (single.integer(0, 0xFFFFFFFF) for _ in range(4))
        assert uid == str(uuid.UUID(int=a << 96 | b << 64 | c << 32 | d, version=4))


_WORD = st.one_of(
    st.sampled_from([0, 1, 0xFFFF, 0x10000, 0x7FFFFFFF, 0xFFFFFFFF]), st.integers(0, 2**32 - 1)
)


@given(_WORD, _WORD, _WORD, _WORD)
def test_a_uuid_formats_its_four_words_as_the_standard_library(
    a: int, b: int, c: int, d: int
) -> None:
    import uuid

    expected = str(uuid.UUID(int=a << 96 | b << 64 | c << 32 | d, version=4))
    assert format_uuid4(a, b, c, d) == expected
    laid_out = b"".join(word.to_bytes(4, "big") for word in (a, b, c, d))
    assert format_uuid4_bytes(laid_out * 3) == [expected] * 3  # the block formatter agrees


def test_bad_arguments_are_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="lo=5, hi=1"):
        SeededChoices(0).integer(5, 1)
    with pytest.raises(ValueError, match="lo=5, hi=1"):
        SeededChoices(0).integers(5, 1, 3)
    with pytest.raises(TypeError, match=r"seed=1\.5"):
        SeededChoices(1.5)  # type: ignore[arg-type]


def test_a_recording_replays_exactly() -> None:
    recorder = RecordingChoices(SeededChoices(11))
    original = draws(recorder) + draws(recorder.fork("sub"))
    replay = ReplayChoices(recorder.log)
    assert draws(replay) + draws(replay.fork("sub")) == original
    with pytest.raises(ReplayExhausted):
        replay.integer(0, 1000)


def test_choose_uses_the_first_option_as_the_shrink_target() -> None:
    assert choose(ReplayChoices([("root", 0)]), ["boring", "fault"]) == "boring"


def test_timers_fire_in_deadline_then_scheduling_order() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    clock.call_at(5, lambda: fired.append("b"))
    clock.call_at(2, lambda: fired.append("a"))
    clock.call_at(5, lambda: fired.append("c"))
    cancelled = clock.call_at(3, lambda: fired.append("never"))
    cancelled.cancel()
    assert clock.next_deadline() == 2
    clock.advance(10)
    assert fired == ["a", "b", "c"]
    assert clock.now() == 10


def test_autojump_moves_to_the_next_deadline_only() -> None:
    clock = VirtualClock()
    clock.call_later(1800, lambda: None)
    assert clock.jump_to_next_deadline()
    assert clock.now() == 1800
    assert not clock.jump_to_next_deadline()
    with pytest.raises(ValueError, match="seconds=-1"):
        clock.advance(-1)


def test_timestamps_come_from_virtual_time() -> None:
    clock = VirtualClock()
    assert clock.timestamp() == "2024-01-01T00:00:00Z"
    clock.advance(3661.5)
    assert clock.timestamp() == "2024-01-01T01:01:01Z"
    clock.advance(0.4)  # the same second: the formatted string is reused
    assert clock.timestamp() == "2024-01-01T01:01:01Z"
    clock.advance(0.1)
    assert clock.timestamp() == "2024-01-01T01:01:02Z"


def test_trace_hash_depends_on_every_record_and_its_order() -> None:
    def trace(*records: tuple[str, int]) -> str:
        t = Trace()
        for kind, value in records:
            t.record(kind, value)
        return t.hexdigest()

    assert trace(("a", 1), ("b", 2)) == trace(("a", 1), ("b", 2))
    assert trace(("a", 1), ("b", 2)) != trace(("b", 2), ("a", 1))
    assert trace(("a", 1)) != trace(("a", 2))


@given(st.lists(st.tuples(st.text(max_size=5), st.integers() | st.none()), max_size=700))
def test_trace_hash_is_each_records_repr_and_newline_whenever_it_is_read(
    records: list[tuple[str, int | None]],
) -> None:
    # Records are hashed in batches; the digest must not depend on where batches end or on
    # when it is read, and stays sha256 over "repr(record)\n" per record (recorded hashes in
    # bug reports keep their meaning).
    import hashlib

    t = Trace()
    reference = hashlib.sha256()
    for index, (kind, value) in enumerate(records):
        t.record(kind, value)
        reference.update(f"{(kind, value)!r}\n".encode())
        if index % 97 == 0:
            assert t.hexdigest() == reference.hexdigest()
    assert t.hexdigest() == reference.hexdigest()
    assert t.count == len(records)
