"""The ``reset`` and ``refused`` steps as a store meets them: its library's error, a crash for a
store that does not handle it, and the progress oracle judging its retries, not urllib3's."""

from __future__ import annotations

import json
import time
from typing import Any

import property_stores as stores
from kubernetes import client
from urllib3.exceptions import HTTPError

from kubesim.checks.store import judge
from kubesim.scenario.run import run_scenario
from kubesim.scenario.steps import RefuseConnections, ResetConnections


class Poller:
    """Lists the pods every ``period`` seconds, whatever happened to the last list."""

    period = 1.0

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self.cache: dict[str, Any] = {}

    def run(self) -> None:
        while True:
            try:
                listed = json.loads(
                    self.core.list_pod_for_all_namespaces(_preload_content=False).data
                )
                self.cache = {p["metadata"]["name"]: p for p in listed["items"]}
            except (client.ApiException, HTTPError):
                pass
            time.sleep(self.period)

    def view(self) -> dict[str, Any]:
        return dict(self.cache)


class HotPoller(Poller):
    period = 0.1


def violations(result: Any) -> dict[str, str]:
    return {v.property: str(v) for v in judge(result.recording).violations}


def test_a_retry_a_second_through_a_restart_is_backing_off_though_urllib3_tries_four_times() -> (
    None
):
    result = run_scenario(Poller, [RefuseConnections(seconds=60)], seed=1)
    assert "progress" not in violations(result), violations(result)
    assert result.recording.outage_rounds == [1]


def test_a_retry_every_tenth_of_a_second_through_a_restart_is_a_hot_loop() -> None:
    found = violations(run_scenario(HotPoller, [RefuseConnections(seconds=60)], seed=1))
    assert "requests refused in a 60 s outage" in found["progress"], found


def test_a_reflector_that_catches_only_api_errors_crashes_on_a_reset_list() -> None:
    class Fragile(stores.Reflector):
        def run(self) -> None:
            while True:
                try:
                    response = self.core.list_pod_for_all_namespaces(_preload_content=False)
                except client.ApiException:
                    self._back_off()
                    continue
                self.cache = {stores._key(p): p for p in json.loads(response.data)["items"]}
                time.sleep(5)

    # Four resets: urllib3's Retry asks a list three more times, then gives up.
    found = violations(run_scenario(Fragile, [ResetConnections(count=4)], seed=1))
    assert "MaxRetryError" in found["crash"], found
    assert "ConnectionResetError" in found["crash"], found
    again = violations(run_scenario(Fragile, [ResetConnections(count=3)], seed=1))
    assert "crash" not in again, again  # three are absorbed by urllib3, as over a socket
    assert violations(run_scenario(stores.reflector, [ResetConnections(count=4)], seed=1)) == {}
