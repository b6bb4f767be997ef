"""Accept negotiation: the first media range the server can produce decides the answer's form."""

from __future__ import annotations

import pytest

from kubesim.wire.negotiation import Conversion, negotiate

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (f"{TABLE},{METADATA}", Conversion("Table", "v1")),
        (f"{METADATA},{TABLE}", Conversion("PartialObjectMetadata", "v1")),
        # Protobuf ranges are skipped: kubesim answers JSON.
        (
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
            Conversion("PartialObjectMetadataList", "v1beta1"),
        ),
        # A conversion the server does not make is skipped; plain JSON ends the search.
        ("application/json;as=Scale;g=autoscaling;v=v1,application/json", None),
        (
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2," + TABLE,
            Conversion("Table", "v1"),
        ),
        (f"application/json,{METADATA}", None),
        ("*/*", None),
        ("", None),
    ],
)
def test_the_first_range_the_server_can_produce_wins(
    accept: str, expected: Conversion | None
) -> None:
    assert negotiate(accept) == expected
