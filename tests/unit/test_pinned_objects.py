"""Pinned objects: starting objects the workload never deletes or terminates.

A store's process may stand on an object of its own world (a Ray head pod, the Namespace it
runs in): a workload that deletes it makes the store fail for a reason no cluster would give,
and converge then reports a difference that is not the store's. ``Setup(pinned=...)`` and the
``kubesim/pinned`` annotation keep such objects out of what the steps delete or terminate.
"""

from __future__ import annotations

import copy
from typing import Any

import property_stores as stores
import pytest

from kubesim.scenario.run import Setup
from kubesim.testing.check import check_store
from kubesim.testing.replay import Replay, parse_token
from kubesim.workload import make_pod
from kubesim.workload.manifests import PINNED_ANNOTATION

HEAD = make_pod("head", "default")
HEAD["metadata"]["labels"] = {"app": "web", "role": "head"}


class _HeadCache(dict):
    def pop(self, key: str, *default: Any) -> Any:
        if key == "default/head":
            raise RuntimeError("the head pod this store runs in is gone")
        return super().pop(key, *default)

    def __setitem__(self, key: str, pod: dict[str, Any]) -> None:
        if key == "default/head" and pod.get("status", {}).get("phase") in _ENDED:
            raise RuntimeError("the head pod this store runs in is gone")
        super().__setitem__(key, pod)


_ENDED = ("Failed", "Succeeded")


class _StandsOnItsHead(stores.Reflector):
    """A correct reflector whose process runs in the pod default/head: when the head goes
    (deleted, or terminated), the process is gone, and the store with it."""

    @property  # type: ignore[override]
    def cache(self) -> _HeadCache:
        return self._cache

    @cache.setter
    def cache(self, pods: dict[str, dict[str, Any]]) -> None:
        head = pods.get("default/head")
        if getattr(self, "resource_version", "") and (
            head is None or head.get("status", {}).get("phase") in _ENDED
        ):
            raise RuntimeError("the head pod this store runs in is gone")
        self._cache = _HeadCache(pods)


def _check(setup: Setup) -> Any:
    return check_store(
        _StandsOnItsHead,
        spec="test_pinned_objects:_StandsOnItsHead",
        examples=40,
        seed=0,
        database=":memory:",
        setup=setup,
    )


def test_without_a_pin_the_workload_deletes_what_the_store_stands_on() -> None:
    report = _check(Setup(objects=(HEAD,)))
    assert report.found is not None
    assert "head pod this store runs in is gone" in str(report.found.verdict)


def test_a_pinned_reference_is_never_deleted_or_terminated() -> None:
    report = _check(Setup(objects=(HEAD,), pinned=("pods/default/head",)))
    assert report.found is None, report.found and report.found.verdict
    assert all(report.kinds[kind] for kind in ("delete", "status", "churn", "ip-reuse"))


def test_the_annotation_pins_a_starting_object_and_its_clones_are_not_pinned() -> None:
    annotated = copy.deepcopy(HEAD)
    annotated["metadata"]["annotations"] = {PINNED_ANNOTATION: "true"}
    report = _check(Setup(objects=(annotated,)))
    assert report.found is None, report.found and report.found.verdict


def test_a_replay_token_carries_the_pins() -> None:
    setup = Setup(objects=(HEAD,), pinned=("pods/default/head",))
    token = Replay("m:f", (), (), 0, setup).token()
    assert parse_token(token).setup.pinned == ("pods/default/head",)
    assert "pinned" not in Setup().world_json()


@pytest.mark.parametrize(
    ("pinned", "message"),
    [
        (("head",), "RESOURCE/NAMESPACE/NAME"),
        (("pods//head",), "RESOURCE/NAMESPACE/NAME"),
        (("pods/a/b/c",), "RESOURCE/NAMESPACE/NAME"),
        ("pods/default/head", "a tuple of references"),
    ],
)
def test_a_malformed_pin_is_named(pinned: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Setup(pinned=pinned)


def test_a_pin_of_a_resource_the_server_does_not_serve_is_named() -> None:
    with pytest.raises(ValueError, match=r"pinned: the server serves no resource 'podz'"):
        check_store(
            stores.Reflector, examples=1, database=":memory:", setup=Setup(pinned=("podz/a/b",))
        )
