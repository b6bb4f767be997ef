"""Request bodies in Kubernetes' protobuf encoding, decoded into the JSON objects they stand for.

kube-apiserver accepts ``application/vnd.kubernetes.protobuf`` for every built-in kind, and
kubectl 1.32+ sends its creates that way. A body is the 4-byte magic ``k8s\\x00`` followed by a
``runtime.Unknown`` message (k8s.io/apimachinery/pkg/runtime/types_proto.go): ``typeMeta``
(apiVersion, kind), ``raw`` (the object, itself protobuf), ``contentEncoding`` and
``contentType``. The object's message is found from its apiVersion and kind, and decoded with the
field table in ``protobuf_schema.json`` (generated from the ``generated.proto`` files of
k8s.io/api and k8s.io/apimachinery by ``tools/gen_protobuf_schema.py``).

The JSON it produces is what the same object looks like on the JSON wire: field names are the
JSON names, ``Time`` is RFC 3339, ``Quantity`` and ``IntOrString`` are their string or number,
``RawExtension`` is the embedded JSON, ``bytes`` are base64, and unset or empty fields are left
out (Go's ``omitempty``). A number or boolean that Go holds as a value with ``omitempty``
(``stdin``, ``hostIPC``, a template's ``generation``) is written by Go's protobuf encoder even
at zero, and left out of the JSON: the table marks those fields ``omitempty`` and their zeros
are dropped; a pointer field at zero (a Deployment's ``replicas: 0``) is kept. Only decoding is
needed: responses are JSON (kubectl asks for
``application/vnd.kubernetes.protobuf,application/json``).
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
import struct
from collections.abc import Iterator
from typing import Any

from kubesim.apiserver.schemas import generated_messages

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_TIME = {f"{_META}.Time", f"{_META}.MicroTime"}
_DURATION = f"{_META}.Duration"
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
_UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
_FIELDS_V1 = f"{_META}.FieldsV1"

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class ProtobufError(ValueError):
    """The body is not a Kubernetes protobuf object kubesim can read (the message says why)."""


class UnknownKind(ProtobufError):
    """The body is well formed but names a kind with no protobuf encoding (a custom resource)."""


@functools.cache
def _fields(message: str) -> dict[int, tuple[str, str, str]]:
    return {
        number: (name, kind, label) for number, name, kind, label in generated_messages()[message]
    }


def message_for(api_version: str, kind: str) -> str | None:
    """The protobuf message of a built-in kind (``apps/v1``, ``Deployment`` ->
    ``k8s.io.api.apps.v1.Deployment``), or None when there is none."""
    group, _, version = api_version.rpartition("/")
    package = (group.split(".")[0] if group else "core") or "core"
    name = f"k8s.io.api.{package}.{version}.{kind}"
    return name if name in generated_messages() else None


def decode_object(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries, as its JSON form (with apiVersion and kind)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the k8s\\x00 magic prefix")
    unknown = _message(memoryview(body)[len(MAGIC) :], _UNKNOWN)
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {unknown['contentEncoding']!r}")
    message = message_for(api_version, kind)
    if message is None:
        raise UnknownKind(f"no protobuf encoding for {kind or '?'} in {api_version or '?'}")
    raw = base64.b64decode(unknown.get("raw", ""))
    obj = _message(memoryview(raw), message)
    return {"apiVersion": api_version, "kind": kind, **obj}


def _message(data: memoryview, message: str) -> dict[str, Any]:
    fields = _fields(message)
    out: dict[str, Any] = {}
    for number, wire, value in _records(data):
        spec = fields.get(number)
        if spec is None:
            continue  # a field newer than the table: skipped, as proto2 parsers do
        name, kind, label = spec
        if label == "map":
            key_kind, value_kind = kind.split(",")
            entry = {
                n: _value(w, v, key_kind if n == 1 else value_kind)
                for n, w, v in _records(_bytes(wire, value))
            }
            out.setdefault(name, {})[entry.get(1, "")] = entry.get(2, _empty(value_kind))
        elif label == "repeated":
            if wire == _LENGTH and kind in _PACKABLE:
                out.setdefault(name, []).extend(_packed(value, kind))
            else:
                out.setdefault(name, []).append(_value(wire, value, kind))
        else:
            out[name] = _value(wire, value, kind)
            if label == "omitempty" and out[name] in (0, False):
                del out[name]  # a Go value field at zero: on the protobuf wire, not in JSON
    return {k: v for k, v in out.items() if not _omitted(v)}


def _omitted(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == []


def _empty(kind: str) -> Any:
    return "" if kind in ("string", "bytes") else 0 if kind in _PACKABLE else {}


def _value(wire: int, value: Any, kind: str) -> Any:
    if kind == "string":
        return bytes(_bytes(wire, value)).decode("utf-8")
    if kind == "bytes":
        return base64.b64encode(bytes(_bytes(wire, value))).decode("ascii")
    if kind == "bool":
        return bool(value)
    if kind in ("int32", "int64"):
        return _signed(value, 32 if kind == "int32" else 64)
    if kind in ("uint32", "uint64"):
        return int(value)
    if kind == "double":
        return struct.unpack("<d", bytes(value))[0]
    if kind == "float":
        return struct.unpack("<f", bytes(value))[0]
    inner = _message(_bytes(wire, value), kind)
    if kind in _TIME:
        return _time(inner, micro=kind.endswith("MicroTime"))
    if kind == _DURATION:
        return _duration(int(inner.get("duration", 0)))
    if kind == _QUANTITY:
        return inner.get("string", "")
    if kind == _INT_OR_STRING:
        return inner.get("strVal", "") if inner.get("type") == 1 else inner.get("intVal", 0)
    if kind in (_RAW_EXTENSION, _FIELDS_V1):
        # Embedded JSON, carried as bytes (RawExtension.raw, FieldsV1.Raw).
        raw = inner.get("raw") or inner.get("Raw")
        return json.loads(base64.b64decode(raw)) if raw else None
    return inner


_PACKABLE = {"bool", "int32", "int64", "uint32", "uint64", "double", "float"}


def _packed(value: Any, kind: str) -> list[Any]:
    data = bytes(value)
    if kind == "double":
        return [v for (v,) in struct.iter_unpack("<d", data)]
    if kind == "float":
        return [v for (v,) in struct.iter_unpack("<f", data)]
    out = []
    position = 0
    while position < len(data):
        number, position = _varint(data, position)
        out.append(_value(_VARINT, number, kind))
    return out


def _bytes(wire: int, value: Any) -> memoryview:
    if wire != _LENGTH:
        raise ProtobufError("a length-delimited field was expected")
    return value  # type: ignore[no-any-return]


def _records(data: memoryview) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field of a message, in order."""
    raw = bytes(data)
    position = 0
    while position < len(raw):
        key, position = _varint(raw, position)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == _VARINT:
            value, position = _varint(raw, position)
        elif wire == _LENGTH:
            length, position = _varint(raw, position)
            if position + length > len(raw):
                raise ProtobufError("a field runs past the end of the body (truncated?)")
            value = memoryview(raw)[position : position + length]
            position += length
        elif wire == _FIXED64:
            value, position = memoryview(raw)[position : position + 8], position + 8
        elif wire == _FIXED32:
            value, position = memoryview(raw)[position : position + 4], position + 4
        else:
            raise ProtobufError(f"unsupported protobuf wire type {wire}")
        if position > len(raw):
            raise ProtobufError("the body ends inside a field (truncated?)")
        yield number, wire, value


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise ProtobufError("a malformed varint (truncated body?)")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _signed(value: int, bits: int) -> int:
    value &= (1 << 64) - 1  # negative int32s are sign-extended to ten bytes on the wire
    if value >= 1 << 63:
        value -= 1 << 64
    return value if bits == 64 else ((value + (1 << 31)) % (1 << 32)) - (1 << 31)


def _time(fields: dict[str, Any], *, micro: bool) -> str | None:
    seconds, nanos = int(fields.get("seconds", 0)), int(fields.get("nanos", 0))
    if seconds == 0 and nanos == 0:
        return None  # the zero Time: null on the JSON wire, so left out
    when = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    if micro:
        return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(nanoseconds: int) -> str:
    """Go's time.Duration.String() for the common cases (``1m30s``, ``500ms``, ``0s``)."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    ns = abs(nanoseconds)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return f"{sign}{ns / size:g}{unit}"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = rest / 1_000_000_000
    text = f"{seconds:g}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text
