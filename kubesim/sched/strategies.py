"""Scheduling strategies: who runs next at each scheduling point.

Every decision is drawn from the run's :class:`~kubesim._core.ChoiceSource`, oriented so that the
shrink target (``lo``) means "keep running the current thread": a Hypothesis-backed source then
shrinks a failing schedule towards fewer preemptions.

- :class:`RandomWalk`: at each point, preempt with probability ``p`` to a uniformly drawn
  other runnable thread. Good at bugs that need many fine alternations.
- :class:`PCT`: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010; the
  Shuttle/Coyote variant): random distinct thread priorities, ``depth - 1`` change points drawn
  over the estimated number of steps ``k``, always run the highest-priority runnable thread. Finds
  a depth-d bug with probability >= 1/(n k^(d-1)) per run, however long the atomicity window.
  ``k`` adapts: :func:`kubesim.sched.explore` feeds back the largest step count seen.
- :class:`Preemptions`: an explicit, sorted list of steps at which to switch to the next runnable
  thread in round-robin order. Hypothesis draws and shrinks this list directly
  (CHESS-style preemption bounding); it is the best-shrinking encoding we measured.

:func:`describe_strategy` writes one of these as the text a person reads and a replay carries
(``PCT(2, steps=1000)``); :func:`parse_strategy` reads that text back, without ``eval``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesim._core import ChoiceSource


class Strategy(Protocol):
    """Picks the next thread. ``runnable`` is in creation order and never empty."""

    name: str

    def start(self, choices: ChoiceSource) -> None:
        """Called once at the start of a run."""

    def on_spawn(self, thread_id: int) -> None:
        """A new controlled thread exists (ids count up from 0 in creation order)."""

    def at_point(self, step: int, current: int, runnable: Sequence[int]) -> int:
        """At a scheduling point of ``current`` (which is runnable): who runs next."""
        ...

    def after_block(self, step: int, previous: int, runnable: Sequence[int]) -> int:
        """``previous`` blocked or finished: who runs next among ``runnable``."""
        ...


def _round_robin_after(previous: int, runnable: Sequence[int]) -> int:
    later = [t for t in runnable if t > previous]
    return later[0] if later else runnable[0]


@dataclass
class RandomWalk:
    """Preempt with probability ``p`` at each point (``p`` in [0, 1])."""

    p: float
    name: str = ""
    _choices: ChoiceSource | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"RandomWalk needs 0 <= p <= 1, got p={self.p!r}")
        self.name = self.name or f"random(p={self.p:g})"
        self._threshold = round((1.0 - self.p) * 10_000)

    def start(self, choices: ChoiceSource) -> None:
        self._choices = choices

    def on_spawn(self, thread_id: int) -> None:
        pass

    def _pick(self, runnable: Sequence[int]) -> int:
        assert self._choices is not None
        return runnable[self._choices.integer(0, len(runnable) - 1)]

    def at_point(self, step: int, current: int, runnable: Sequence[int]) -> int:
        if len(runnable) < 2 or self.p == 0.0:
            return current
        assert self._choices is not None
        # Drawing 0..threshold-1 (the shrink target side) means "no preemption".
        if self._choices.integer(0, 9_999) < self._threshold:
            return current
        return self._pick([t for t in runnable if t != current])

    def after_block(self, step: int, previous: int, runnable: Sequence[int]) -> int:
        return self._pick(runnable) if len(runnable) > 1 else runnable[0]


@dataclass
class PCT:
    """Priority-based probabilistic scheduling with ``depth - 1`` priority change points."""

    depth: int
    steps: int = 1000
    name: str = ""
    _priorities: dict[int, int] = field(default_factory=dict, repr=False)
    _change_points: list[int] = field(default_factory=list, repr=False)
    _choices: ChoiceSource | None = field(default=None, repr=False)
    _lowered: int = 0

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"PCT needs depth >= 1, got depth={self.depth!r}")
        if self.steps < 1:
            raise ValueError(f"PCT needs an estimate steps >= 1, got steps={self.steps!r}")
        self.name = self.name or f"pct(depth={self.depth})"

    def start(self, choices: ChoiceSource) -> None:
        self._choices = choices
        self._priorities = {}
        self._lowered = 0
        self._change_points = sorted(choices.integer(1, self.steps) for _ in range(self.depth - 1))

    def on_spawn(self, thread_id: int) -> None:
        assert self._choices is not None
        # Initial priorities are large and distinct; change points lower a thread below them all.
        base = self.depth + 1
        taken = set(self._priorities.values())
        priority = base + self._choices.integer(0, 10_000)
        while priority in taken:
            priority += 1
        self._priorities[thread_id] = priority

    def _highest(self, runnable: Sequence[int]) -> int:
        return max(runnable, key=lambda t: (self._priorities.get(t, 0), -t))

    def at_point(self, step: int, current: int, runnable: Sequence[int]) -> int:
        while self._change_points and self._change_points[0] <= step:
            self._change_points.pop(0)
            self._lowered += 1
            self._priorities[current] = self.depth - self._lowered
        return self._highest(runnable)

    def after_block(self, step: int, previous: int, runnable: Sequence[int]) -> int:
        return self._highest(runnable)


# A hot preemption -(k + 1) with k below this is at the k-th hot point; from it on, at the
# fraction (k - HOT_FRACTION) / 1000 of the longest hot region seen so far in the run.
HOT_FRACTION = 1_000
# Reads a sampler takes over one relist as long as the longest seen so far: one every
# 1/SAMPLED_READS of it (and every point of a relist shorter than SAMPLED_READS points).
SAMPLED_READS = 16


@dataclass
class Preemptions:
    """Switch to the next runnable thread (round-robin) at exactly these steps.

    A negative entry is a *hot* preemption, at a point a *hot* thread reaches (one the harness
    marked with :meth:`heat`: a reader inside ``read()``, a store thread applying a list it
    just got). Hot points are few and are where races live (a reader iterating the cache, a
    relist pruning then refilling it), so a short list of hot offsets lands inside those windows
    far more often than offsets among all points do. ``-(k + 1)`` with ``k <`` :data:`HOT_FRACTION`
    is the ``k``-th hot point of a step's reaction; with ``k >=`` it, the point at the fraction
    ``(k - HOT_FRACTION) / 1000`` of the longest hot region seen so far in the run (a relist as
    long as the last one: its middle is where a half-applied relist shows).

    *Samplers* (:meth:`sample`: a reader released by the store's list) also get a turn at
    evenly spaced points of a *listing* thread's hot region, :data:`SAMPLED_READS` of them over
    a region as long as the longest seen: a relist that prunes, then refills one object at a
    time is half applied only over a few of its points, which one drawn preemption rarely
    hits and a reader sampling the whole relist cannot miss. A sampler gives the turn back
    with :meth:`kubesim.sched.scheduler.Scheduler.yield_to`.
    """

    points: Sequence[int]
    name: str = ""
    _pending: list[int] = field(default_factory=list, repr=False)
    _hot_pending: list[int] = field(default_factory=list, repr=False)
    _hot: dict[int, int] = field(default_factory=dict, repr=False)  # thread -> region start
    _hot_points: int = 0
    _longest: int = 0
    _first: list[int] = field(default_factory=list, repr=False)
    # Threads hot because they listed -> their own points so far in that region (the
    # samplers' reads between them are not the relist's length).
    _listing: dict[int, int] = field(default_factory=dict, repr=False)
    _longest_list: int = 0
    _samplers: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if any(not isinstance(p, int) or isinstance(p, bool) for p in self.points):
            raise ValueError(f"Preemptions needs int steps, got points={list(self.points)!r}")
        self.name = self.name or f"preemptions({sorted(self.points)})"

    def start(self, choices: ChoiceSource) -> None:
        self._longest = 0
        self._longest_list = 0
        self.rebase(0)

    def on_spawn(self, thread_id: int) -> None:
        pass

    def go_first(self, thread_ids: Sequence[int]) -> None:
        """The next choice after a block (the start of a settle) picks the first of these that
        is runnable: a reader released with a step reads before the store reacts to it, so
        that a preemption inside the read lets the store change what it iterates."""
        self._first = list(thread_ids)

    def heat(self, thread_id: int, *, listing: bool = False) -> None:
        """``thread_id`` enters a region whose points count as hot; ``listing``: it is a store
        thread applying a list it asked for, whose region samplers read during."""
        self._hot.setdefault(thread_id, self._hot_points)
        if listing:
            self._listing.setdefault(thread_id, 0)

    def cool(self, thread_id: int) -> None:
        start = self._hot.pop(thread_id, None)
        listed = self._listing.pop(thread_id, None)
        if listed is not None:
            self._longest_list = max(self._longest_list, listed)
        if start is not None:
            self._longest = max(self._longest, self._hot_points - start)

    def listing(self, thread_id: int) -> bool:
        """Whether ``thread_id`` is in the hot region of a list it asked for."""
        return thread_id in self._listing

    def sample(self, thread_id: int) -> None:
        """``thread_id`` takes a turn at the sampled points of listing threads' regions,
        whenever it is runnable there."""
        if thread_id not in self._samplers:
            self._samplers.append(thread_id)

    def at_point(self, step: int, current: int, runnable: Sequence[int]) -> int:
        switch = False
        if self._pending and step >= self._pending[0]:
            while self._pending and self._pending[0] <= step:
                self._pending.pop(0)
            switch = True
        if current in self._hot:
            hot = self._hot_points
            self._hot_points += 1
            if self._hot_pending and hot >= self._hot_pending[0]:
                while self._hot_pending and self._hot_pending[0] <= hot:
                    self._hot_pending.pop(0)
                switch = True
            own = self._listing.get(current)
            if own is not None:
                self._listing[current] = own = own + 1
            stride = max(1, self._longest_list // SAMPLED_READS)
            if own is not None and self._samplers and own % stride == 0:
                sampler = next((t for t in self._samplers if t in runnable), None)
                if sampler is not None:
                    return sampler
        if not switch:
            return current
        others = [t for t in runnable if t != current]
        return _round_robin_after(current, others) if others else current

    def after_block(self, step: int, previous: int, runnable: Sequence[int]) -> int:
        first, self._first = self._first, []
        for thread in first:
            if thread in runnable:
                return thread
        return _round_robin_after(previous, runnable)

    def rebase(self, origin: int) -> None:
        """Count ``points`` from ``origin`` from now on (the same preemptions again), and hot
        points from zero.

        A driven simulation calls this before each settle, so one short list of offsets
        preempts at the same places of *every* step's reaction: a window a few points wide
        (a relist that clears, then refills) is hit whichever step triggers it.
        """
        self._pending = sorted({origin + p for p in self.points if p >= 0})
        span = max(self._longest, 50)
        hot = set()
        for point in self.points:
            if point < 0:
                k = -point - 1
                hot.add(k if k < HOT_FRACTION else (k - HOT_FRACTION) * span // 1000)
        self._hot_pending = sorted(hot)
        # Regions open across the rebase start again at zero.
        self._hot = dict.fromkeys(self._hot, 0)
        self._hot_points = 0


def portfolio(choices: ChoiceSource, *, steps: int = 1000) -> Strategy:
    """One strategy per run, drawn from the portfolio (swarm testing, as Shuttle and Fray do)."""
    options: list[Strategy] = [
        RandomWalk(0.01),
        RandomWalk(0.05),
        RandomWalk(0.2),
        PCT(2, steps),
        PCT(3, steps),
    ]
    return options[choices.integer(0, len(options) - 1)]


class InvalidStrategy(ValueError):
    """Strategy text that :func:`parse_strategy` cannot read; the message says what it expects."""


_EXPECTED = "RandomWalk(p), PCT(depth, steps=k) or Preemptions([step, ...])"


def _default_name(strategy: Strategy) -> str | None:
    if isinstance(strategy, RandomWalk):
        return f"random(p={strategy.p:g})"
    if isinstance(strategy, PCT):
        return f"pct(depth={strategy.depth})"
    if isinstance(strategy, Preemptions):
        return f"preemptions({sorted(strategy.points)})"
    return None


def describe_strategy(strategy: Strategy) -> str | None:
    """The constructor call that builds ``strategy`` afresh (``PCT(2, steps=1000)``).

    None for a strategy that is not one of the three built-in ones: it cannot be written as
    text. A custom ``name`` is kept, because the name goes into the run's trace.
    """
    if isinstance(strategy, RandomWalk):
        text = f"RandomWalk({strategy.p!r}"
    elif isinstance(strategy, PCT):
        text = f"PCT({strategy.depth}, steps={strategy.steps}"
    elif isinstance(strategy, Preemptions):
        text = f"Preemptions({sorted(strategy.points)!r}"
    else:
        return None
    if strategy.name != _default_name(strategy):
        text += f", name={strategy.name!r}"
    return text + ")"


_PARAMETERS: dict[str, tuple[Callable[..., Strategy], tuple[str, ...]]] = {
    "RandomWalk": (RandomWalk, ("p", "name")),
    "PCT": (PCT, ("depth", "steps", "name")),
    "Preemptions": (Preemptions, ("points", "name")),
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_ARGUMENT_TYPES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "p": ("a number", lambda v: _is_int(v) or isinstance(v, float)),
    "depth": ("an int", _is_int),
    "steps": ("an int", _is_int),
    "points": (
        "a list of ints",
        lambda v: isinstance(v, list | tuple) and all(_is_int(x) for x in v),
    ),
    "name": ("a str", lambda v: isinstance(v, str)),
}


def parse_strategy(text: str) -> Strategy:
    """Build a strategy from the text :func:`describe_strategy` writes.

    Accepts ``RandomWalk(p)``, ``PCT(depth, steps=k)`` and ``Preemptions([step, ...])`` (an
    optional ``kubesim.sched.`` prefix, arguments by position or keyword, literals only, plus
    ``name=``). Nothing is evaluated. Raises :class:`InvalidStrategy` saying what was wrong.
    """
    try:
        return _parse(text)
    except InvalidStrategy as exc:
        raise InvalidStrategy(f"strategy={text!r}: {exc}") from None


def _parse(text: str) -> Strategy:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise InvalidStrategy(f"expected {_EXPECTED}") from None
    if not isinstance(tree, ast.Call):
        raise InvalidStrategy(f"expected {_EXPECTED}")
    func = ast.unparse(tree.func).removeprefix("kubesim.sched.")
    if func not in _PARAMETERS:
        raise InvalidStrategy(f"unknown strategy {func!r}; expected {_EXPECTED}")
    build, names = _PARAMETERS[func]
    if len(tree.args) > len(names):
        raise InvalidStrategy(f"{func} takes at most {len(names)} arguments ({', '.join(names)})")
    kwargs: dict[str, Any] = {}
    given = [(names[i], node) for i, node in enumerate(tree.args)]
    given += [(kw.arg or "**", kw.value) for kw in tree.keywords]
    for key, node in given:
        if key not in names:
            raise InvalidStrategy(f"{func} has no argument {key!r}; it takes {', '.join(names)}")
        if key in kwargs:
            raise InvalidStrategy(f"{func} got argument {key!r} twice")
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError):
            raise InvalidStrategy(
                f"{func} argument {key!r} must be a literal, got {ast.unparse(node)!r}"
            ) from None
        kind, check = _ARGUMENT_TYPES[key]
        if not check(value):
            raise InvalidStrategy(f"{func} argument {key!r} must be {kind}, got {value!r}")
        kwargs[key] = value
    try:
        return build(**kwargs)
    except (TypeError, ValueError) as exc:
        raise InvalidStrategy(str(exc)) from None
