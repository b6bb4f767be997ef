"""DefaultTolerationSeconds admission (``Cluster(default_tolerations=True)``, on under
``kubesim serve``): every pod created or updated tolerates an unready and an unreachable node
for 300 s, unless it already tolerates them; off, a pod keeps the tolerations it was sent."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.admission.tolerations import NOT_READY, UNREACHABLE
from kubesim.cluster import Cluster

JSON = dict[str, Any]

DEFAULTS = [
    {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def pod(name: str, tolerations: list[JSON] | None = None) -> JSON:
    spec: JSON = {"containers": [{"name": "main", "image": "busybox"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": name}, "spec": spec}


@pytest.fixture
def server() -> APIServer:
    return Cluster(seed=1, default_tolerations=True)


def test_a_new_pod_gets_both_default_tolerations_after_its_own(server: APIServer) -> None:
    mine = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    sent = pod("a", [mine])
    before = copy.deepcopy(sent)
    created = server.create("pods", sent, namespace="default")
    assert created["spec"]["tolerations"] == [mine, *DEFAULTS]
    assert sent == before  # the caller's body (and its list) is not changed
    assert server.create("pods", pod("b"), namespace="default")["spec"]["tolerations"] == DEFAULTS


@pytest.mark.parametrize(
    ("toleration", "added"),
    [
        ({"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"}, [UNREACHABLE]),
        ({"key": UNREACHABLE, "operator": "Exists"}, [NOT_READY]),  # no effect: every effect
        ({"operator": "Exists"}, []),  # no key: every taint
        ({"operator": "Exists", "effect": "NoExecute"}, []),
        (
            {"key": NOT_READY, "operator": "Exists", "effect": "NoSchedule"},
            [NOT_READY, UNREACHABLE],
        ),
    ],
)
def test_a_taint_the_pod_already_tolerates_gets_no_second_toleration(
    server: APIServer, toleration: JSON, added: list[str]
) -> None:
    created = server.create("pods", pod("a", [toleration]), namespace="default")
    assert created["spec"]["tolerations"][0] == toleration
    assert [t["key"] for t in created["spec"]["tolerations"][1:]] == added


def test_an_update_that_drops_them_gets_them_back_and_a_patch_keeps_them(
    server: APIServer,
) -> None:
    created = server.create("pods", pod("a"), namespace="default")
    body = copy.deepcopy(created)
    body["spec"]["tolerations"] = []
    assert server.update("pods", body, namespace="default")["spec"]["tolerations"] == DEFAULTS
    patched = server.patch("pods", "a", {"metadata": {"labels": {"x": "y"}}}, namespace="default")
    assert patched["spec"]["tolerations"] == DEFAULTS


def test_off_by_default_a_pod_keeps_what_it_was_sent() -> None:
    created = APIServer(seed=1).create("pods", pod("a"), namespace="default")
    assert "tolerations" not in created["spec"]
