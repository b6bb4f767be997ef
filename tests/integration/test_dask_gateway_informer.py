"""dask-gateway-server's Kubernetes Informer under ``kubesim check`` (store:
dask_gateway_informer.py).

Tried with dask-gateway-server 2026.3.0 (kubernetes_asyncio 36.1.0, aiohttp 3.14, Python 3.11).
What kubesim finds, and why it is dask-gateway's
(docs/findings/dask-gateway-informer-no-backoff.md):

- **progress**: ``Informer.run()`` retries a failed list at once (``continue``, no sleep), and
  relists at once after a watch that raised: through an outage (a 429 storm from API Priority
  and Fairness, a 503 from an apiserver restarting) it sends requests as fast as they fail. On
  the backend's plain client that is a loop that never waits; behind the controller's
  ``RateLimitedClient`` it is 50 requests a second, the limiter's rate.

Everything else held up: expiries, drops, 410s, compaction, deletes while the watch was down
(the relist calls ``on_delete`` for each key the list lacks), stalled and lagging watch caches,
bookmarks, silent watches, server versions, crashes and stops (100 examples of seed 0 with
every fault kind but ``outage`` and ``http-error``; ``http-error`` alone, 100 examples).
Here, a shorter campaign of the same kinds (``HELD_UP``), with effects() on.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import LastingErrors
from kubesim.testing.check import check_store

pytest.importorskip(
    "dask_gateway_server.backends.kubernetes.utils",
    reason="dask-gateway-server[kubernetes] is not installed",
)

from tests.integration import dask_gateway_informer  # after the skip: it imports dask-gateway

HELD_UP = [
    "create",
    "delete",
    "churn",
    "labels",
    "status",
    "expire",
    "drop",
    "delete-in-gap",
    "compact",
    "bookmark",
    "silence",
    "server-version",
    "stall",
    "resume",
    "lagging-replica",
    "crash",
    "stop",
    "read",
]
# With effects() on, "stall", "lagging-replica" and "crash" once drew effects-expected false
# alarms (on_delete calls no store could make): kubesim's own errors, fixed since
# (tests/unit/test_expectations_per_process.py).


def test_the_version_the_page_names() -> None:
    # A release that changes the Informer fails here: the page and these tests need updating.
    assert version("dask-gateway-server") == "2026.3.0", version("dask-gateway-server")


def test_the_informer_retries_a_failed_list_without_waiting() -> None:
    # The replay of docs/findings/dask-gateway-informer-no-backoff.md: a 30 s storm of 429s.
    result = run_scenario(dask_gateway_informer.factory, [LastingErrors(seconds=30, code=429)])
    verdict = judge(result.recording)
    assert [v.property for v in verdict.violations] == ["progress"], verdict
    summary = verdict.violations[0].summary
    assert "1,001 API requests at virtual time 0 s without waiting for anything" in summary
    assert "1,001 of them GET /api/v1/pods, each answered 429 (an outage until 30 s)" in summary


def test_a_5xx_outage_is_the_same_loop() -> None:
    result = run_scenario(dask_gateway_informer.factory, [LastingErrors(seconds=60, code=503)])
    verdict = judge(result.recording)
    assert [v.property for v in verdict.violations] == ["progress"], verdict
    assert "without waiting for anything" in verdict.violations[0].summary


def test_behind_the_controllers_rate_limiter_it_retries_at_the_limiters_rate() -> None:
    # KubeController wraps its clients in a RateLimitedClient (50 a second, bursts of 100):
    # the loop then waits, but only for the limiter, through the whole outage.
    factory = dask_gateway_informer.controller_factory
    result = run_scenario(factory, [LastingErrors(seconds=30, code=429)])
    verdict = judge(result.recording)
    assert [v.property for v in verdict.violations] == ["progress"], verdict
    summary = verdict.violations[0].summary
    assert "requests refused in a 30 s outage" in summary, summary
    refused = int(summary.split("hot request loop: ")[1].split()[0])
    assert 1_500 <= refused <= 1_700, summary  # 50 a second for 30 s, and the burst of 100


def test_the_informer_holds_up_under_the_other_faults() -> None:
    report = check_store(
        dask_gateway_informer.factory,
        spec="tests/integration/dask_gateway_informer.py:factory",
        examples=40,
        seed=0,
        kinds=HELD_UP,
        database=":memory:",
    )
    assert report.ok, str(report.found)
    assert {"converge", "monotone", "effects-expected", "snapshot-reads", "clean-stop"} <= (
        report.ran
    )
