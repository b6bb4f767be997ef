"""How Go prints decoded JSON values, in the error messages kube-apiserver writes.

kube-apiserver's errors quote the value that was refused in Go's own spelling: its JSON kind
(``cannot unmarshal string into ...``), its Go type (``map[string]interface {}``), ``%v``
(``map[a:1 b:[x y]]``), ``%q``, or ``json.Marshal``. One place for all of them, so every
message spells a value the same way.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any, Final


def json_kind(value: Any) -> str:
    """The JSON kind Go's encoding/json names in an UnmarshalTypeError."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"


def go_type(value: Any) -> str:
    """The Go type a decoded JSON value has upstream (ints are kept as int64 by the apiserver)."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "<nil>"


def go_value(value: Any) -> str:
    """``fmt.Sprintf("%v", value)`` for decoded JSON, as upstream error messages print values."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def go_syntax(value: Any) -> str:
    """``fmt.Sprintf("%#v", value)`` for decoded JSON (Go syntax), as a field error prints a
    bad value that is a list or a map."""
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_syntax(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_syntax(item) for item in value) + "}"
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, float):
        return go_float(value)
    return go_value(value)


_GO_ESCAPES: Final = {
    "\a": r"\a",
    "\b": r"\b",
    "\f": r"\f",
    "\n": r"\n",
    "\r": r"\r",
    "\t": r"\t",
    "\v": r"\v",
}


def go_quote(s: str) -> str:
    """Go's ``%q`` (``strconv.Quote``), which field errors use to show the bad value."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():  # same classes as Go's unicode.IsPrint
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


# What Go's encoding/json escapes in strings that Python's does not.
_GO_HTML_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded JSON value (``map[string]interface{}``), as Go writes it
    where kube-apiserver prints one: compact, map keys sorted, ``<``, ``>`` and ``&`` escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_HTML_ESCAPES:
        text = text.replace(char, escaped)
    return text


def go_float(value: float) -> str:
    """``fmt.Sprintf("%v", float64(value))``: the shortest digits, in exponent form from 1e+06
    and below 1e-04, as Go prints the schema's limits."""
    if isinstance(value, int):
        value = float(value)
    if value == 0:
        return "0"
    if math.isinf(value) or math.isnan(value):
        return {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, "NaN")
    _, digits, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    assert isinstance(exponent, int)
    decimal_exponent = len(text) - 1 + exponent
    prefix = "-" if value < 0 else ""
    if decimal_exponent < -4 or decimal_exponent >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        mark = "+" if decimal_exponent >= 0 else "-"
        return f"{prefix}{mantissa}e{mark}{abs(decimal_exponent):02d}"
    if exponent >= 0:
        return prefix + text + "0" * exponent
    point = len(text) + exponent
    if point > 0:
        return f"{prefix}{text[:point]}.{text[point:]}"
    return f"{prefix}0.{'0' * -point}{text}"


__all__ = ["go_float", "go_json", "go_quote", "go_syntax", "go_type", "go_value", "json_kind"]
