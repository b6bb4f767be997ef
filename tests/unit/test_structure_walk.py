"""The history oracle's walk of a store's attributes (kubesim.checks.structure)."""

from __future__ import annotations

import configparser

from kubesim.checks.structure import is_object, snapshot, summary


class StoreWithItsConfig:
    """A store that keeps its framework's configuration (Airflow's KubeConfig keeps its
    AirflowConfigParser): a Mapping whose get() takes a section and an option."""

    def __init__(self) -> None:
        self.conf = configparser.ConfigParser()
        self.conf.read_string("[kubernetes_executor]\nnamespace = default\n")
        self.pods = {"default/web-0": {"metadata": {"uid": "u0", "resourceVersion": "1"}}}


def test_a_mapping_with_its_own_get_is_not_taken_for_an_object_nor_stops_the_walk() -> None:
    store = StoreWithItsConfig()
    assert not is_object(store.conf)
    assert is_object(store.pods["default/web-0"])
    assert "store.pods" in snapshot(store)


def test_a_cyclic_object_graph_is_summarised_and_walked_without_end() -> None:
    # The official client's DynamicClient: a Resource holds its client, which holds a
    # discoverer, which holds the client and its resources again.
    class Client:
        pass

    class Discoverer:
        def __init__(self, client: Client) -> None:
            self.client = client
            self.resources = {"pods": None}

    client = Client()
    client.discoverer = Discoverer(client)  # type: ignore[attr-defined]
    client.discoverer.resources["pods"] = client  # type: ignore[attr-defined]
    text = summary(client)
    assert text.startswith("Client(discoverer=")
    assert len(text) <= 60
    assert "store.discoverer.resources" in snapshot(client)
