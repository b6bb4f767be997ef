"""Table cells that need no server: kubectl's HumanDuration ages and Accept negotiation."""

from __future__ import annotations

import pytest

from kubesim.wire.tables import human_duration, negotiate

KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


@pytest.mark.parametrize(
    ("seconds", "printed"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (185, "3m5s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (7 * 3600 + 59 * 60, "7h59m"),
        (8 * 3600, "8h"),
        (48 * 3600, "2d"),
        (49 * 3600, "2d1h"),
        (8 * 86400, "8d"),
        (731 * 86400, "2y1d"),
        (3000 * 86400, "8y"),
    ],
)
def test_human_duration_prints_ages_as_kubectl_does(seconds: int, printed: str) -> None:
    assert human_duration(seconds) == printed


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        (KUBECTL_ACCEPT, "v1"),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", "v1beta1"),
        ("application/json;as=Table;v=v9;g=meta.k8s.io,application/json", None),
        ("application/json", None),
        ("", None),
        ("application/json, */*", None),
    ],
)
def test_negotiate_picks_the_first_table_version_the_client_prefers(
    accept: str, version: str | None
) -> None:
    assert negotiate(accept) == version
