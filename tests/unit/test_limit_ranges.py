"""LimitRanges and the LimitRanger admission plugin (kubesim.admission.limit_ranges), and the
quantities they compare and print (kubesim.apiserver.quantity)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.apiserver import quantity
from kubesim.apiserver import status as st
from kubesim.cluster import Cluster

NS = "default"


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("0", "0"),
        ("1", "1"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("100m", "100m"),
        ("1000m", "1"),
        ("2000", "2k"),
        ("1500", "1500"),
        ("1e3", "1e3"),
        ("5n", "5n"),
        ("0.0000000001", "1n"),  # finer than a nano rounds up
        ("1Gi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("512Ki", "512Ki"),
        ("100Ki", "100Ki"),
        ("1000Mi", "1000Mi"),
        ("0.5Ki", "512"),  # below 1024 a binary quantity prints as decimal
        ("12M", "12M"),
    ],
)
def test_a_quantity_prints_in_canonical_form(text: str, printed: str) -> None:
    assert str(quantity.parse(text)) == printed


def test_quantities_compare_by_value_and_a_sum_keeps_the_first_format() -> None:
    assert quantity.parse("1Gi").value > quantity.parse("1G").value
    assert quantity.parse("0.5").value == quantity.parse("500m").value
    total = quantity.parse("512Mi") + quantity.parse("0.5Gi")
    assert str(total) == "1Gi"
    for bad in ("", "abc", "1.2.3", "5Q"):
        with pytest.raises(quantity.QuantityError):
            quantity.parse(bad)


def limit_range(**item: Any) -> dict[str, Any]:
    return {"metadata": {"name": "limits"}, "spec": {"limits": [{"type": "Container", **item}]}}


def pod(name: str = "web", **resources: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "nginx"}
    if resources:
        container["resources"] = resources
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def test_a_limit_range_item_is_defaulted_from_its_max_and_min() -> None:
    server = Cluster()
    made = server.create(
        "limitranges",
        limit_range(max={"memory": "1Gi", "cpu": "2"}, min={"cpu": "100m"}, default={"cpu": "1"}),
        namespace=NS,
    )
    item = made["spec"]["limits"][0]
    assert list(item) == ["type", "max", "min", "default", "defaultRequest"]
    assert item["default"] == {"cpu": "1", "memory": "1Gi"}  # max where default is unset
    assert item["defaultRequest"] == {"cpu": "1", "memory": "1Gi"}  # default, then min


def test_a_pod_gets_the_defaults_it_lacks_and_says_so_in_an_annotation() -> None:
    server = Cluster()
    server.create(
        "limitranges",
        limit_range(default={"cpu": "500m", "memory": "256Mi"}, defaultRequest={"cpu": "100m"}),
        namespace=NS,
    )
    sent = pod(limits={"memory": "128Mi"})
    before = repr(sent)
    made = server.create("pods", sent, namespace=NS)
    assert repr(sent) == before  # the caller's pod is not written into
    resources = made["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"memory": "128Mi", "cpu": "500m"}
    assert resources["requests"]["cpu"] == "100m"
    assert made["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu limit for container app"
    )
    # Another namespace has no LimitRange: its pods are left alone.
    other = server.create("pods", pod("free"), namespace="kube-system")
    assert "resources" not in other["spec"]["containers"][0]
    assert "annotations" not in other["metadata"]


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"limits": {"cpu": "2"}}, "maximum cpu usage per Container is 1, but limit is 2"),
        (
            # The limit defaults to the max (1): the ratio fails too.
            {"requests": {"cpu": "0.05"}},
            "[minimum cpu usage per Container is 100m, but request is 50m, cpu max limit to "
            "request ratio per Container is 4, but provided ratio is 20.000000]",
        ),
        (
            {"limits": {"cpu": "2", "memory": "2Gi"}},
            "[maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per "
            "Container is 1Gi, but limit is 2Gi]",
        ),
        (
            {"requests": {"cpu": "200m"}, "limits": {"cpu": "1"}},
            "cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000",
        ),
    ],
)
def test_a_pod_outside_the_bounds_is_forbidden_with_the_plugins_words(
    resources: dict[str, Any], message: str
) -> None:
    server = Cluster()
    server.create(
        "limitranges",
        limit_range(
            max={"cpu": "1", "memory": "1Gi"},
            min={"cpu": "100m"},
            maxLimitRequestRatio={"cpu": "4"},
        ),
        namespace=NS,
    )
    with pytest.raises(st.StatusError) as refused:
        server.create("pods", pod(**resources), namespace=NS)
    assert refused.value.code == 403
    assert refused.value.status["reason"] == "Forbidden"
    assert refused.value.status["message"] == f'pods "web" is forbidden: {message}'
    assert server.list("pods", namespace=NS) == []
