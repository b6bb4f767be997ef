"""The string ``format``s a CRD's schema may name, checked as kube-openapi's strfmt checks them.

apiextensions-apiserver keeps a fixed set of formats and strips any other from the schema
before validating (``StripUnsupportedFormatsPostProcessor``: ``int32``, ``int64`` and unknown
names are not checked), the name compared with its dashes removed (``date-time`` is
``datetime``). A string that fails its format is refused as kube-openapi's format validator
refuses it: ``spec.at in body must be of type date-time: "yesterday"``.

The checks, as strfmt's: ``datetime`` (a date, ``T``, then ``hh:mm:ss``, optional fraction and
``Z`` or an offset; empty is valid), ``date`` (``2006-01-02``, a real day), ``uuid`` (and
``uuid3``/``uuid4``/``uuid5``, dashes optional, any case), ``byte`` (padded standard base64),
``ipv4`` and ``ipv6`` (Go's ``net.ParseIP``, with a dot or a colon), ``cidr``, ``mac``,
``hostname``, ``hexcolor``, ``rgbcolor``, ``ssn``, ``bsonobjectid`` (24 hex digits),
``duration`` (Go's ``time.ParseDuration``, or ``<n> <unit>`` pairs), ``uri`` (an absolute URI
or an absolute path), ``email`` (``local@domain``) and ``password`` (anything). ``isbn``,
``isbn10``, ``isbn13`` and ``creditcard`` are accepted unchecked.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import ipaddress
import re
from collections.abc import Callable

_DATE_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = {
    "uuid": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": re.compile(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    ),
    "uuid5": re.compile(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    ),
}
_BASE64 = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
)
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_BYTE = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGB_COLOR = re.compile(rf"^rgb\({_BYTE},{_BYTE},{_BYTE}\)$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")
_MAC = re.compile(
    r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}"
    r"|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2}"
    r"|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){9})$"
)
_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$")
_UNIT_DURATION = re.compile(r"^(\s*\d+\s*[A-Za-zµ]+\s*)+$")
_DURATION_UNITS = frozenset(
    {"ns", "us", "µs", "ms", "s", "sec", "secs", "second", "seconds", "m", "min", "mins"}
    | {"minute", "minutes", "h", "hr", "hrs", "hour", "hours", "d", "day", "days"}
    | {"w", "wk", "wks", "week", "weeks"}
)
_EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+$")
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")


def _date(value: str) -> bool:
    if not _DATE.match(value):
        return False
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _date_time(value: str) -> bool:
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not _date(parts[0]):
        return False
    match = _DATE_TIME.match(parts[1])
    return match is not None and match[1] <= "23" and match[2] <= "59" and match[3] <= "59"


def _base64(value: str) -> bool:
    if not _BASE64.match(value):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _ip(value: str, version: int) -> bool:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    return address.version == version or (version == 4 and "." in value)


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _hostname(value: str) -> bool:
    if not value or len(value) > 255:
        return False
    labels = value.split(".")
    if any(not label or len(label) > 63 for label in labels):
        return False
    if any(label.startswith("-") or label.endswith("-") for label in labels):
        return False
    allowed = all(ch.isalnum() or ch == "-" for label in labels for ch in label)
    # A name of several labels ends in a top-level domain of letters.
    return allowed and (len(labels) == 1 or labels[-1].isalpha())


def _duration(value: str) -> bool:
    if _GO_DURATION.match(value):
        return True
    if not _UNIT_DURATION.match(value):
        return False
    units = re.findall(r"\d+\s*([A-Za-zµ]+)", value)
    return all(unit.lower() in _DURATION_UNITS for unit in units)


def _matcher(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.match(value) is not None


def _uri(value: str) -> bool:
    return value.startswith("/") or _URI_SCHEME.match(value) is not None


CHECKS: dict[str, Callable[[str], bool]] = {
    "datetime": _date_time,
    "date": _date,
    **{name: _matcher(rx) for name, rx in _UUID.items()},
    "byte": _base64,
    "ipv4": lambda v: _ip(v, 4),
    "ipv6": lambda v: _ip(v, 6),
    "cidr": _cidr,
    "mac": _matcher(_MAC),
    "hostname": _hostname,
    "hexcolor": _matcher(_HEX_COLOR),
    "rgbcolor": _matcher(_RGB_COLOR),
    "ssn": _matcher(_SSN),
    "bsonobjectid": _matcher(_OBJECT_ID),
    "duration": _duration,
    "uri": _uri,
    "email": _matcher(_EMAIL),
    "password": lambda v: True,
    "isbn": lambda v: True,
    "isbn10": lambda v: True,
    "isbn13": lambda v: True,
    "creditcard": lambda v: True,
}


def fails(format_name: str, value: str) -> bool:
    """``value`` fails the schema's ``format``; an unsupported format (stripped by the API
    server) never fails."""
    check = CHECKS.get(format_name.replace("-", ""))
    return check is not None and not check(value)


__all__ = ["CHECKS", "fails"]
