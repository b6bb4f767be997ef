"""``PartialObjectMetadata``: objects reduced to their metadata, for metadata-only clients.

client-go's metadata client (metadata informers, the garbage collector, controller-runtime's
metadata-only watches) and kube-rs' ``get_metadata``/``list_metadata``/``watch_metadata`` send
``Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`` on gets, writes and
watches, and ``as=PartialObjectMetadataList`` on lists. kube-apiserver
(endpoints/handlers/response.go, ``asPartialObjectMetadata`` and ``asPartialObjectMetadataList``)
answers with:

* for an object, ``{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
  "metadata": ...}`` with the whole ObjectMeta; for a list, a ``PartialObjectMetadataList`` with
  the list's resourceVersion, continue and remainingItemCount, and one such item per object
  (``items`` is null when there are none: the Go list is built by appending);
* for the other one of the two (a list asked for as PartialObjectMetadata, an object as
  PartialObjectMetadataList), 406 NotAcceptable, after the request was carried out: the
  conversion runs on the answer, so a write asked for so is stored all the same;
* for watch events, each object converted; an object that cannot be (PartialObjectMetadataList
  asked on a watch) is sent as it is, as the watch encoder logs the failure and sends the
  object. A ``Status`` (an ERROR event, an error answer) is never converted.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import dumps, loads
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.watch import WatchStream
from kubesim.wire.negotiation import Conversion

JSON = dict[str, Any]

OBJECT = "PartialObjectMetadata"
LIST = "PartialObjectMetadataList"


def is_metadata(conversion: Conversion) -> bool:
    return conversion.kind in (OBJECT, LIST)


def _is_list(obj: JSON) -> bool:
    return str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list)


def _go_type(resource: ResourceType, obj: JSON) -> str:
    """The Go type the apiserver names in its refusal (``%T`` of the storage's object): the
    internal type of a built-in kind (``*core.Pod``), unstructured for custom resources."""
    kind = str(obj.get("kind", ""))
    if resource.list_items_have_type:
        return "*unstructured.UnstructuredList" if _is_list(obj) else "*unstructured.Unstructured"
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    # events.k8s.io has no internal types of its own: its Events are core's.
    package = "core" if group in ("", "events.k8s.io") else group.split(".")[0]
    return f"*{package}.{kind}"


def _partial(metadata: Any, conversion: Conversion) -> JSON:
    return {
        "kind": OBJECT,
        "apiVersion": conversion.api_version,
        "metadata": metadata if isinstance(metadata, dict) else {},
    }


def convert(obj: JSON, resource: ResourceType, conversion: Conversion) -> JSON:
    """``obj`` (an object or a list, never a Status) as ``conversion`` asks for it; raises 406
    NotAcceptable when it is the wrong shape for the conversion."""
    if conversion.kind == OBJECT:
        if _is_list(obj):
            raise st.not_acceptable_conversion(
                f"you requested {OBJECT}, but the requested object is a list "
                f"({_go_type(resource, obj)})"
            )
        return _partial(obj.get("metadata"), conversion)
    if not _is_list(obj):
        raise st.not_acceptable_conversion(
            f"you requested {LIST}, but the requested object is not a list "
            f"({_go_type(resource, obj)})"
        )
    list_meta: JSON = obj.get("metadata") or {}
    metadata = {
        key: list_meta[key]
        for key in ("resourceVersion", "continue", "remainingItemCount")
        if list_meta.get(key) not in (None, "")
    }
    # The Go list starts with no items and appends each: an empty one is encoded as null.
    items = [_partial(item.get("metadata"), conversion) for item in obj["items"]] or None
    return {
        "kind": LIST,
        "apiVersion": conversion.api_version,
        "metadata": metadata,
        "items": items,
    }


def convert_body(body: bytes, resource: ResourceType, conversion: Conversion) -> bytes:
    """A JSON answer converted; a Status, or anything that is not an object, as it is."""
    obj = loads(body)
    if not isinstance(obj, dict) or obj.get("kind") == "Status":
        return body
    return dumps(convert(obj, resource, conversion))


class PartialMetadataWatchStream(WatchStream):
    """A watch whose events carry PartialObjectMetadata (ERROR events keep their Status)."""

    def __init__(self, stream: WatchStream, conversion: Conversion) -> None:
        super().__init__(stream.server, stream.watcher, max_lines_per_chunk=stream.max_lines)
        self._stream = stream  # read through: it may convert versions first
        self.conversion = conversion

    def poll(self) -> bytes | None:
        chunk = self._stream.poll()
        if not chunk:
            return chunk
        return b"".join(self._convert(line) for line in chunk.split(b"\n") if line)

    def close(self) -> None:
        self._stream.close()

    def _convert(self, line: bytes) -> bytes:
        event = loads(line)
        obj = event.get("object")
        if event.get("type") == "ERROR" or not isinstance(obj, dict):
            return line + b"\n"
        event["object"] = _partial(obj.get("metadata"), self.conversion)
        return dumps(event) + b"\n"


__all__ = ["LIST", "OBJECT", "PartialMetadataWatchStream", "convert", "convert_body", "is_metadata"]
