"""A Service's cluster IPs on update (kubesim.apiserver.services): kept when the body leaves them
out, the plural following the singular, and fixed once set, as kube-apiserver's Service storage
and validation have them."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st

NS = "default"
PORTS = {"ports": [{"port": 80}]}


def test_a_headless_service_lists_none_as_its_cluster_ips() -> None:
    created = APIServer().create(
        "services",
        {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", **PORTS}},
        namespace=NS,
    )
    assert (created["spec"]["clusterIP"], created["spec"]["clusterIPs"]) == ("None", ["None"])


def test_an_update_without_addresses_keeps_the_allocated_ones() -> None:
    server = APIServer()
    created = server.create("services", {"metadata": {"name": "a"}, "spec": PORTS}, namespace=NS)
    applied = {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 81}]}}
    kept = server.update("services", applied, namespace=NS)
    assert kept["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    assert kept["spec"]["clusterIPs"] == created["spec"]["clusterIPs"]


@pytest.mark.parametrize("first", ["None", None], ids=["headless", "allocated"])
def test_the_primary_address_may_not_change_once_set(first: str | None) -> None:
    server = APIServer()
    spec = {**PORTS, **({"clusterIP": first} if first else {})}
    server.create("services", {"metadata": {"name": "s"}, "spec": spec}, namespace=NS)
    with pytest.raises(st.StatusError) as refused:
        server.patch("services", "s", {"spec": {"clusterIP": "10.0.0.12"}}, namespace=NS)
    assert refused.value.code == 422
    assert refused.value.status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "10.0.0.12": may not change once set',
            "field": "spec.clusterIPs[0]",
        }
    ]


def test_becoming_an_external_name_service_may_drop_the_address() -> None:
    server = APIServer()
    server.create("services", {"metadata": {"name": "x"}, "spec": PORTS}, namespace=NS)
    external = {
        "spec": {
            "type": "ExternalName",
            "externalName": "db.example.com",
            "clusterIP": "",
            "clusterIPs": None,
        }
    }
    changed = server.patch("services", "x", external, namespace=NS)
    assert "clusterIPs" not in changed["spec"]
    assert changed["spec"]["type"] == "ExternalName"
