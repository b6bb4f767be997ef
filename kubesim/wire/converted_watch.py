"""Watches of a resource served in another version: each event converted on its way out.

A watch on a view (``autoscaling/v1`` HorizontalPodAutoscalers, a CRD's other versions:
:mod:`kubesim.apiserver.conversion`) is a watch on the stored resource whose lines are
rewritten as they are read, as kube-apiserver converts each event to the version the request
names.
"""

from __future__ import annotations

from kubesim.apiserver.conversion import served_object
from kubesim.apiserver.encoding import dumps, loads
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.watch import WatchStream


class ConvertedWatchStream(WatchStream):
    """A watch on the stored resource whose events carry the view's version."""

    def __init__(self, stream: WatchStream, view: ResourceType) -> None:
        super().__init__(stream.server, stream.watcher, max_lines_per_chunk=stream.max_lines)
        self.view = view

    def poll(self) -> bytes | None:
        chunk = super().poll()
        if not chunk:
            return chunk
        return b"".join(self._convert(line) for line in chunk.split(b"\n") if line)

    def _convert(self, line: bytes) -> bytes:
        event = loads(line)
        obj = event.get("object")
        if not isinstance(obj, dict) or obj.get("kind") != self.view.kind:
            return line + b"\n"  # an ERROR's Status
        if event.get("type") == "BOOKMARK":
            event["object"] = {**obj, "apiVersion": self.view.api_version}
        else:
            event["object"] = served_object(self.view, obj)
        return dumps(event) + b"\n"
