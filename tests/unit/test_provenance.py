"""Provenance: which version of which object a token a store holds comes from.

The history oracle builds one per comparison and asks only when the comparison found a
difference, so the index is built at the first question; it must answer about the server's
history as it was when it was built, not as it is when asked.
"""

from __future__ import annotations

from functools import partial

from kubesim import APIServer
from kubesim.checks.provenance import Provenance
from kubesim.checks.races import ServerVersions
from kubesim.workload import make_pod


def _server() -> tuple[APIServer, ServerVersions]:
    server = APIServer(seed=1)
    server.create("pods", make_pod("kept", "default"))
    server.compact()  # its create is no longer in the history: "kept" is the base
    versions = ServerVersions(server)
    return server, versions


def _as_the_oracle_builds_it(versions: ServerVersions) -> Provenance:
    upto = len(versions.events)
    return Provenance(
        versions.events[:upto],
        partial(versions.base_objects, ["pods"], upto=upto),
        resources=["pods"],
    )


def test_a_deleted_pods_name_is_the_past_and_a_live_one_is_not() -> None:
    server, versions = _server()
    server.create("pods", make_pod("gone", "default"))
    server.delete("pods", "gone", namespace="default")
    provenance = _as_the_oracle_builds_it(versions)
    past = provenance.past("default/gone")
    assert past is not None
    assert past.deleted
    assert past.until is not None
    assert provenance.past("default/kept") is None
    live = provenance.live("default/kept")
    assert live is not None
    assert live.until is None
    assert provenance.explain(["default/gone"]) == f"default/gone (deleted at rv {past.until})"


def test_it_answers_about_the_history_it_was_built_on_whatever_is_written_before_it_is_asked() -> (
    None
):
    server, versions = _server()
    server.create("pods", make_pod("later", "default"))
    provenance = _as_the_oracle_builds_it(versions)
    # Written after it was built, before the first question: the server's history has moved on.
    server.delete("pods", "kept", namespace="default")
    server.delete("pods", "later", namespace="default")
    server.create("pods", make_pod("newer", "default"))
    for key in ("default/kept", "default/later"):
        assert provenance.live(key) is not None, key
        assert provenance.past(key) is None, key
    assert not provenance.known("default/newer")
    # Built now, it sees the deletes.
    now = _as_the_oracle_builds_it(versions)
    assert now.past("default/later") is not None
    assert now.live("default/newer") is not None


def test_an_object_written_after_the_build_stays_in_the_base_it_was_built_on() -> None:
    server, versions = _server()
    provenance = _as_the_oracle_builds_it(versions)
    server.patch("pods", "kept", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    # The base counts the objects no event (of those it was built on) wrote: "kept" is one.
    assert provenance.live("default/kept") is not None
    assert not provenance.known("v=2")
