"""The one source of nondeterminism.

Everything in a run that could differ between two executions (uids, server-side watch
timeouts, which pod a workload touches, where a fault lands) is *drawn* from a
:class:`ChoiceSource`. Nothing below the simulation layer calls ``random``, ``uuid4`` or the
wall clock. That is what makes a run replayable from a seed and, later, shrinkable by
Hypothesis: a Hypothesis-backed source or a recorded list of draws can stand in for the
seeded one because every consumer goes through this small protocol.

Sources are split by *name* (``fork("server")``) so that adding a draw in one subsystem does
not reshuffle every other subsystem's stream (TigerBeetle's per-subsystem PRNGs).
"""

from __future__ import annotations

import hashlib
import itertools
import random
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


class ReplayExhausted(LookupError):
    """A replayed run asked for more choices than the recording holds."""


@runtime_checkable
class ChoiceSource(Protocol):
    """Where every nondeterministic decision comes from.

    Contract: ``integer(lo, hi)`` returns an int in ``[lo, hi]`` (both inclusive), and the
    *shrink target* is ``lo``: a Hypothesis-backed source shrinks towards it, so callers should
    orient their choices so that ``lo`` means "the boring option" (no fault, no preemption).
    """

    def integer(self, lo: int, hi: int) -> int: ...

    def fork(self, name: str) -> ChoiceSource: ...


def _seed_bytes(seed: int | str, name: str) -> bytes:
    # sha256 is stable across processes and Python versions, unlike hash().
    return hashlib.sha256(f"{seed}/{name}".encode()).digest()


class SeededChoices:
    """A :class:`ChoiceSource` driven by a seeded PRNG, one independent stream per name."""

    def __init__(self, seed: int | str, *, name: str = "root") -> None:
        if not isinstance(seed, int | str) or isinstance(seed, bool):
            raise TypeError(
                f"seed must be an int or a str, got seed={seed!r} ({type(seed).__name__})"
            )
        self.seed = seed
        self.name = name
        self._rng = random.Random(_seed_bytes(seed, name))
        self._getrandbits = self._rng.getrandbits
        self.draws = 0
        self._uuid_bytes = b""  # accepted draws read ahead by uuid4_block, big-endian

    def integer(self, lo: int, hi: int) -> int:
        if lo > hi:
            raise ValueError(f"integer() needs lo <= hi, got lo={lo}, hi={hi}")
        self.draws += 1
        # random.Random.randrange(n) inlined (its _randbelow_with_getrandbits, the same on
        # 3.10 to 3.13): the same stream of values, without two Python calls per draw. Every
        # write draws a uid from here, so this is on the server's hot path.
        n = hi - lo + 1
        k = n.bit_length()
        r = self._getrandbits(k)
        while r >= n:
            r = self._getrandbits(k)
        return lo + r

    def integers(self, lo: int, hi: int, count: int) -> list[int]:
        """``count`` draws of :meth:`integer` in one call: the same values, in the same order.

        For the server's hot path (a uid is four draws on every write); see :func:`integers`.
        """
        if lo > hi:
            raise ValueError(f"integers() needs lo <= hi, got lo={lo}, hi={hi}")
        self.draws += count
        n = hi - lo + 1
        k = n.bit_length()
        getrandbits = self._getrandbits
        values = []
        for _ in range(count):
            r = getrandbits(k)
            while r >= n:
                r = getrandbits(k)
            values.append(lo + r)
        return values

    def uuid4_block(self) -> list[str]:
        """The uuids that the next :data:`UUID_BLOCK_ATTEMPTS` attempts at
        ``integer(0, 0xFFFFFFFF)`` make, four draws to a uuid as :func:`format_uuid4` formats
        them: the same uuids, in the same order, as drawing one at a time. The last accepted
        draws (fewer than four) open the next block.

        ``integer(0, 0xFFFFFFFF)`` asks ``getrandbits`` for 33 bits and rejects the upper half:
        each attempt is two 32-bit words of the generator, the first the value, kept when the
        second's top bit is clear. One ``getrandbits`` call reads the block's words in the same
        order (least significant first), and the attempts are sorted out, laid out as a uuid's
        16 big-endian bytes and formatted with byte-string operations, never a Python step per
        attempt: a uid is drawn on every create.
        """
        raw = self._getrandbits(64 * UUID_BLOCK_ATTEMPTS).to_bytes(
            8 * UUID_BLOCK_ATTEMPTS, "little"
        )
        attempts = array("Q")
        attempts.frombytes(raw)
        if sys.byteorder == "big":
            attempts.byteswap()  # attempts as little-endian 64-bit numbers: value | second << 32
        # raw[7::8] is each attempt's top byte: below 0x80, its second word's top bit is clear.
        accepted = array("Q", itertools.compress(attempts, raw[7::8].translate(_KEPT)))
        words = array("I")
        words.frombytes(accepted.tobytes())
        if sys.byteorder == "little":
            values = words[0::2]
            values.byteswap()  # big-endian, as each of a uuid's four words is laid out
        else:
            values = words[1::2]
        laid_out = self._uuid_bytes + values.tobytes()
        whole = len(laid_out) - len(laid_out) % 16
        self._uuid_bytes = laid_out[whole:]
        self.draws += whole // 4
        return format_uuid4_bytes(laid_out[:whole])

    def fork(self, name: str) -> SeededChoices:
        return SeededChoices(self.seed, name=f"{self.name}/{name}")

    def __repr__(self) -> str:
        return f"SeededChoices(seed={self.seed!r}, name={self.name!r})"


class RecordingChoices:
    """Wraps a source and records every draw, so the run can be replayed from the record."""

    def __init__(self, inner: ChoiceSource, *, log: list[tuple[str, int]] | None = None) -> None:
        self._inner = inner
        self.log: list[tuple[str, int]] = [] if log is None else log
        self._name = getattr(inner, "name", "root")

    def integer(self, lo: int, hi: int) -> int:
        value = self._inner.integer(lo, hi)
        self.log.append((self._name, value))
        return value

    def fork(self, name: str) -> RecordingChoices:
        return RecordingChoices(self._inner.fork(name), log=self.log)


class ReplayChoices:
    """Replays recorded draws per stream name; a stand-in proving the seam is narrow."""

    def __init__(self, log: Sequence[tuple[str, int]], *, name: str = "root") -> None:
        self._streams: dict[str, list[int]] = {}
        for stream, value in log:
            self._streams.setdefault(stream, []).append(value)
        self._positions: dict[str, int] = {}
        self.name = name

    def integer(self, lo: int, hi: int) -> int:
        values = self._streams.get(self.name, [])
        position = self._positions.get(self.name, 0)
        if position >= len(values):
            raise ReplayExhausted(f"stream {self.name!r} has only {len(values)} recorded draws")
        self._positions[self.name] = position + 1
        value = values[position]
        if not lo <= value <= hi:
            raise ReplayExhausted(
                f"stream {self.name!r} draw {position} recorded {value}, outside [{lo}, {hi}] now: "
                "the code asking for choices changed since the recording"
            )
        return value

    def fork(self, name: str) -> ReplayChoices:
        child = ReplayChoices([], name=f"{self.name}/{name}")
        child._streams = self._streams
        child._positions = self._positions
        return child


def integers(source: ChoiceSource, lo: int, hi: int, count: int) -> list[int]:
    """``count`` draws of ``source.integer(lo, hi)``, in order. A source with an ``integers``
    method of its own (:class:`SeededChoices`) makes them in one call; any other source is
    asked one draw at a time, so recording, replaying and Hypothesis see every draw."""
    batch = getattr(source, "integers", None)
    if batch is not None:
        values: list[int] = batch(lo, hi, count)
        return values
    return [source.integer(lo, hi) for _ in range(count)]


# uuid4_block: attempts read from the generator per block (two 32-bit words each, about half
# of them kept: a block makes about 128 uuids).
UUID_BLOCK_ATTEMPTS = 1024
_KEPT = bytes(int(top < 0x80) for top in range(256))  # an attempt's top byte -> kept
_VERSION_4 = bytes(byte & 0x0F | 0x40 for byte in range(256))  # byte 6: version nibble 4
_VARIANT_RFC_4122 = bytes(byte & 0x3F | 0x80 for byte in range(256))  # byte 8: variant 10
# Where each of a uuid's 32 hex digits goes in its 36 characters and a separator.
_HEX_PLACES = [place for place in range(36) if place not in (8, 13, 18, 23)]
# printf-style: one pass over six integers, a third cheaper than six format() calls.
_UUID4_FORMAT = "%08x-%04x-%04x-%04x-%04x%08x"


def format_uuid4_bytes(data: bytes) -> list[str]:
    """:func:`format_uuid4` of each 16 bytes of ``data`` (four big-endian 32-bit words), all
    at once: the version and variant bits set by translation tables, the hex digits placed
    around the dashes by strided slices."""
    count = len(data) // 16
    laid_out = bytearray(data)
    laid_out[6::16] = laid_out[6::16].translate(_VERSION_4)
    laid_out[8::16] = laid_out[8::16].translate(_VARIANT_RFC_4122)
    digits = laid_out.hex().encode("ascii")
    text = bytearray(b"-" * (37 * count))
    for digit, place in enumerate(_HEX_PLACES):
        text[place::37] = digits[digit::32]
    text[36::37] = b" " * count
    return text.decode("ascii").split()


def format_uuid4(a: int, b: int, c: int, d: int) -> str:
    """``str(uuid.UUID(int=a << 96 | b << 64 | c << 32 | d, version=4))`` for four 32-bit
    words, formatted word by word without building the object: the version nibble is b's bits
    12-15, the variant c's top two bits."""
    return _UUID4_FORMAT % (
        a,
        b >> 16,
        b & 0x0FFF | 0x4000,
        c >> 16 & 0x3FFF | 0x8000,
        c & 0xFFFF,
        d,
    )


def uuid4_drawer(source: ChoiceSource) -> Callable[[], str]:
    """A function that draws a random (version 4) UUID string from ``source`` per call.

    A UUID is four draws of ``integer(0, 0xFFFFFFFF)`` (:func:`format_uuid4`). The drawer owns
    ``source``: give it a fork of its own. From a :class:`SeededChoices` it reads ahead, a
    block at a time (:meth:`SeededChoices.uuid4_block`), the same uuids in the same order, and
    each call is one step of an iterator in C; any other source is asked draw by draw, when
    a uuid is asked for, so a recording or a replay sees each draw where it happens.
    """
    if isinstance(source, SeededChoices):
        blocks: Iterator[list[str]] = iter(source.uuid4_block, None)  # never None: endless
    else:
        blocks = iter(lambda: [format_uuid4(*integers(source, 0, 0xFFFFFFFF, 4))], None)
    return itertools.chain.from_iterable(blocks).__next__


def choose(source: ChoiceSource, options: Sequence[T]) -> T:
    """Pick one of ``options``; the first one is the shrink target."""
    if not options:
        raise ValueError("choose() needs at least one option")
    return options[source.integer(0, len(options) - 1)]


def uniform(source: ChoiceSource, lo: float, hi: float, *, resolution: int = 1_000_000) -> float:
    """A float in ``[lo, hi)`` with ``resolution`` steps; integer draws keep replays exact."""
    return lo + (hi - lo) * source.integer(0, resolution - 1) / resolution
