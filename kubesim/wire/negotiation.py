"""Which form of an object a request's Accept header asks for.

Besides the object as stored, kube-apiserver converts an answer when a JSON media range carries
``as=<Kind>;g=<group>;v=<version>`` (endpoints/handlers/negotiation, and
``RequestScope.AllowsMediaTypeTransform``, which allows exactly these): in the ``meta.k8s.io``
group, versions ``v1`` and ``v1beta1``, a ``Table`` (what kubectl prints), a
``PartialObjectMetadata`` or a ``PartialObjectMetadataList`` (what metadata-only clients read).
Ranges are taken in the client's order and the first one the server can produce wins; a range
asking for any other conversion is skipped, and a plain JSON range (or ``*/*``) means "as stored".
Protobuf ranges are skipped too: kubesim reads protobuf bodies but answers in JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
CONVERSIONS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")
_JSON_RANGES = ("application/json", "*/*", "application/*")


@dataclass(frozen=True)
class Conversion:
    """One ``as=`` target the server can produce: its kind and its ``meta.k8s.io`` version."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


def negotiate(accept: str) -> Conversion | None:
    """The conversion the Accept header asks for, or None for the object as stored."""
    for part in accept.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if pieces[0].lower() not in _JSON_RANGES:
            continue
        params = {}
        for piece in pieces[1:]:
            key, _, value = piece.partition("=")
            params[key.strip().lower()] = value.strip()
        if "as" not in params:
            return None
        if (
            params["as"] in CONVERSIONS
            and params.get("g") == META_GROUP
            and params.get("v") in META_VERSIONS
        ):
            return Conversion(params["as"], params["v"])
    return None


__all__ = ["CONVERSIONS", "META_GROUP", "META_VERSIONS", "Conversion", "negotiate"]
