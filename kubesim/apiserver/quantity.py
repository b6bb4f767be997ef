"""Resource quantities (``500m``, ``1.5Gi``, ``2e3``) parsed, compared and printed as
apimachinery's ``resource.Quantity`` does.

A quantity is a number and a suffix: binary (``Ki`` ... ``Ei``, powers of 1024), decimal SI
(``n``, ``u``, ``m``, none, ``k``, ``M``, ``G``, ``T``, ``P``, ``E``) or a decimal exponent
(``e3``, ``E-2``). The suffix decides the format the quantity prints in, and it prints in
canonical form (``String()``): decimal SI as the integer before the largest suffix that keeps it
an integer (``1.5`` is ``1500m``, ``2000`` is ``2k``, ``1500`` stays ``1500``); binary SI the
same in powers of 1024 (``1536Mi``), falling back to decimal SI below 1024 or for a fraction.
Values are kept exact (fractions), and anything finer than a nano is rounded up, as Go's
``Quantity`` rounds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_SYNTAX = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))([a-zA-Z]*|[eE][+-]?\d+)$")
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """A string that is not a quantity; the message is apimachinery's."""


@dataclass(frozen=True, order=False)
class Quantity:
    value: Fraction
    format: str = DECIMAL_SI

    def __add__(self, other: Quantity) -> Quantity:
        """The sum, in this quantity's format (``Quantity.Add`` keeps the receiver's)."""
        return Quantity(self.value + other.value, self.format)

    def __str__(self) -> str:
        return canonical(self)


def parse(text: str) -> Quantity:
    """``resource.ParseQuantity``; :class:`QuantityError` with its message."""
    match = _SYNTAX.match(text.strip()) if isinstance(text, str) else None
    if not text or match is None:
        raise QuantityError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    number, suffix = match.groups()
    base = Fraction(number)
    if suffix in _BINARY:
        value, kind = base * 1024 ** _BINARY[suffix], BINARY_SI
    elif suffix in _DECIMAL:
        value, kind = base * Fraction(10) ** _DECIMAL[suffix], DECIMAL_SI
    elif suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():
        value, kind = base * Fraction(10) ** int(suffix[1:]), DECIMAL_EXPONENT
    else:
        raise QuantityError("unable to parse quantity's suffix")
    # Go keeps nano precision at most, rounding away from zero.
    nanos = value / _NANO
    if nanos.denominator != 1:
        nanos = Fraction(math.ceil(nanos) if nanos > 0 else math.floor(nanos))
    return Quantity(nanos * _NANO, kind)


def parse_or_none(value: object) -> Quantity | None:
    """A resource list's value as a quantity (a string, or a bare JSON number), or None when
    it is absent or not one: what a check skips rather than refuses."""
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return parse(str(value))
    except QuantityError:
        return None


def canonical(quantity: Quantity) -> str:
    """``Quantity.String()``."""
    value, kind = quantity.value, quantity.format
    if value == 0:
        return "0"
    if kind == BINARY_SI:
        if -1024 < value < 1024 or value.denominator != 1:
            kind = DECIMAL_SI
        else:
            number, power = int(value), 0
            while power < 6 and number % 1024 == 0:
                number //= 1024
                power += 1
            return f"{number}{_BINARY_SUFFIX.get(power, '')}"
    # The largest multiple-of-three exponent that leaves an integer mantissa.
    exponent = -9
    while exponent < 18 and (value / Fraction(10) ** (exponent + 3)).denominator == 1:
        exponent += 3
    mantissa = value / Fraction(10) ** exponent
    if kind == DECIMAL_EXPONENT:
        return f"{int(mantissa)}" + (f"e{exponent}" if exponent else "")
    return f"{int(mantissa)}{_DECIMAL_SUFFIX[exponent]}"


__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Quantity",
    "QuantityError",
    "canonical",
    "parse",
]
