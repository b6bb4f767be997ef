"""Cron schedules as a CronJob's ``spec.schedule`` spells them, parsed and stepped through.

Kubernetes parses schedules with robfig/cron's standard parser (``cron.ParseStandard``), and
validation quotes its errors. What it accepts, and so what :func:`parse` accepts:

- five fields, minute (0-59), hour (0-23), day of month (1-31), month (1-12 or ``JAN``-``DEC``)
  and day of week (0-6 or ``SUN``-``SAT``), names in any case; each a comma-separated list of
  ``*`` (``?`` too), ``n``, ``a-b``, each with an optional ``/step`` (``n/step`` runs to the
  field's maximum);
- the descriptors ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily``
  (``@midnight``) and ``@hourly``, and ``@every <duration>``.

A day of month and a day of week both restricted match when either does; when one is ``*``,
the other decides (robfig's ``dayMatches``). :meth:`Schedule.next` finds the first minute after a
given time that matches, in a time zone, as ``SpecSchedule.Next`` does, and gives up after five
years (a schedule such as ``0 0 30 2 *`` never fires). Errors read as robfig's
(``expected exactly 5 fields, found 4: [* * * *]``).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

# (minimum, maximum, names) of the five fields.
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (
        1,
        12,
        {
            m: i + 1
            for i, m in enumerate(
                ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
            )
        },
    ),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
# SpecSchedule.Next gives up after five years of candidates.
_HORIZON_YEARS = 5


class ScheduleError(ValueError):
    """A schedule robfig/cron refuses; the message is its error's."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the allowed values of each field, or a fixed interval (``@every``)."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    day_star: bool = False
    weekday_star: bool = False
    every: float | None = None

    def next(self, after: _dt.datetime) -> _dt.datetime | None:
        """The first time after ``after`` (an aware datetime, in the schedule's zone) that the
        schedule fires at; None when it never does within five years."""
        if self.every is not None:
            # ConstantDelaySchedule: whole seconds, from the instant given.
            step = max(1, int(self.every))  # Every: whole seconds, at least one
            return after.replace(microsecond=0) + _dt.timedelta(seconds=step)
        t = after.replace(second=0, microsecond=0) + _dt.timedelta(minutes=1)
        limit = t.year + _HORIZON_YEARS
        while t.year <= limit:
            if t.month not in self.months:
                t = _first_of_next_month(t)
                continue
            if not self._day_matches(t):
                t = (t + _dt.timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if t.hour not in self.hours:
                t = (t + _dt.timedelta(hours=1)).replace(minute=0)
                continue
            if t.minute not in self.minutes:
                t = t + _dt.timedelta(minutes=1)
                continue
            return t
        return None

    def _day_matches(self, t: _dt.datetime) -> bool:
        day = t.day in self.days
        weekday = (t.isoweekday() % 7) in self.weekdays  # Sunday is 0
        if self.day_star or self.weekday_star:
            return day and weekday
        return day or weekday


def _first_of_next_month(t: _dt.datetime) -> _dt.datetime:
    year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
    return t.replace(year=year, month=month, day=1, hour=0, minute=0)


def parse(spec: str) -> Schedule:
    """``cron.ParseStandard(spec)``; :class:`ScheduleError` with robfig's message."""
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        _, _, spec = spec.partition(" ")  # the zone is checked by validation, not here
    if spec.startswith("@"):
        if spec.startswith("@every "):
            return Schedule(every=_duration(spec[len("@every ") :], spec))
        if spec not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {spec}")
        spec = _DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    values = [_field(text, *_FIELDS[i]) for i, text in enumerate(fields)]
    return Schedule(
        minutes=values[0][0],
        hours=values[1][0],
        days=values[2][0],
        months=values[3][0],
        weekdays=values[4][0],
        day_star=values[2][1],
        weekday_star=values[4][1],
    )


def _field(text: str, low: int, high: int, names: dict[str, int]) -> tuple[frozenset[int], bool]:
    """The values a field allows, and whether it is a star (``*`` or ``?`` without a step
    over 1 in one of its parts: robfig's starBit, which day matching reads)."""
    allowed: set[int] = set()
    star = False
    for part in text.split(","):
        values, part_star = _range(part, low, high, names)
        allowed |= values
        star = star or part_star
    return frozenset(allowed), star


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """robfig's getRange: the values of one part, and its star bit."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = low_and_high[0] in ("*", "?")
    if star:
        start, end = low, high
    else:
        start = _value(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _value(low_and_high[1], names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _number(range_and_step[1])
        if len(low_and_high) == 1:
            end = high  # "n/step" means "n-max/step"
        if step > 1:
            star = False
    elif len(range_and_step) > 2:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ScheduleError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _value(text: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    return named if named is not None else _number(text)


def _number(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _duration(text: str, spec: str) -> float:
    """Go's ``time.ParseDuration`` for the unsigned durations ``@every`` takes (``spec``, the
    whole schedule, for the error)."""
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text) or not text:
        raise ScheduleError(f'failed to parse duration {spec}: time: invalid duration "{text}"')
    return total


__all__ = ["Schedule", "ScheduleError", "parse"]
