"""``/healthz``, ``/livez`` and ``/readyz`` as kube-apiserver answers them: ``ok``, every check
with ``?verbose`` (minus ``?exclude``), one check by path, 404 for a check that does not exist."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.wire.routes import Request, handle


def get(target: str) -> tuple[int, str]:
    answer = handle(APIServer(seed=1), Request.from_target("GET", target))
    assert isinstance(answer.body, bytes)
    return answer.status, answer.body.decode()


@pytest.mark.parametrize("endpoint", ["healthz", "livez", "readyz"])
def test_each_endpoint_answers_ok_and_lists_its_checks_when_verbose(endpoint: str) -> None:
    assert get(f"/{endpoint}") == (200, "ok")
    status, text = get(f"/{endpoint}?verbose")
    lines = text.splitlines()
    assert status == 200
    assert lines[0] == "[+]ping ok"
    assert "[+]etcd ok" in lines
    assert lines[-1] == f"{endpoint} check passed"
    _, excluded = get(f"/{endpoint}?verbose&exclude=etcd&exclude=log")
    assert "[+]etcd ok" not in excluded.splitlines()
    assert "[+]log ok" not in excluded.splitlines()
    assert len(excluded.splitlines()) == len(lines) - 2


def test_one_check_by_path_and_an_unknown_one_is_404() -> None:
    assert get("/readyz/informer-sync") == (200, "ok")
    assert get("/livez/poststarthook/bootstrap-controller") == (200, "ok")
    assert get("/livez/informer-sync")[0] == 404  # a readiness check only
    assert get("/healthz/nonsense")[0] == 404
