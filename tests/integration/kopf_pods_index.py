"""A kopf operator whose state is an in-memory index of pods, as a store for ``kubesim check``.

The operator is what kopf users write: a registry with a login handler and an ``@kopf.index``
handler, run by ``kopf.operator(...)``. The store hooks only expose what the operator already
keeps: the index, handed to every handler as a keyword argument (here caught by a startup
handler). kubesim routes kopf's API sessions to the simulation when kopf is imported before the
run (this module imports it, as an operator's module does).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

# kopf warns once per start that a thread other than the main one cannot catch SIGINT/SIGTERM:
# true of every start under kubesim (the operator runs in the store's thread), so not news.
logging.getLogger("kopf._core.reactor.running").setLevel(logging.ERROR)


class KopfPodIndex:
    def __init__(self) -> None:
        self.registry = kopf.OperatorRegistry()
        self.settings = kopf.OperatorSettings()
        self.settings.posting.enabled = False  # no Events posted about the operator's own work
        self.stop_flag = asyncio.Event()
        self.index: Any = None

        @kopf.on.login(registry=self.registry)  # type: ignore[misc]
        def login(**kwargs: Any) -> Any:
            return kopf.login_via_client(**kwargs)

        @kopf.index("v1", "pods", id="pods", registry=self.registry)  # type: ignore[misc]
        async def pods(namespace: str, name: str, meta: Any, **_: Any) -> dict[str, Any]:
            identity = {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
            return {f"{namespace}/{name}": {"metadata": identity}}

        @kopf.on.startup(registry=self.registry)  # type: ignore[misc]
        async def keep(pods: Any, **_: Any) -> None:
            self.index = pods

    async def run(self) -> None:
        await kopf.operator(
            registry=self.registry,
            settings=self.settings,
            clusterwide=True,
            standalone=True,
            identity="kubesim",
            stop_flag=self.stop_flag,
        )

    def view(self) -> dict[str, Any]:
        """The index as a handler sees it: one entry per pod kopf believes exists."""
        if self.index is None:
            return {}
        return {key: value for key, values in self.index.items() for value in values}

    read = view  # a handler reading the index while the operator works

    def stop(self) -> None:
        self.stop_flag.set()


async def factory(api_client: Any) -> KopfPodIndex:
    return KopfPodIndex()
