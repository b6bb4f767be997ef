"""A kopf operator on a custom resource: an index of the Widgets of tests/unit/worlds/widgets.yaml.

What an operator author writes: an ``@kopf.index`` on the custom resource, a handler that
reacts to each new Widget, and ``kopf.operator(...)``. The world (the CRD and two Widgets) comes
from the manifests, given to ``kubesim check`` with ``--objects``; the workload then creates,
relabels and deletes Widgets, clones of the file's.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

logging.getLogger("kopf._core.reactor.running").setLevel(logging.ERROR)


class WidgetOperator:
    def __init__(self) -> None:
        self.registry = kopf.OperatorRegistry()
        self.settings = kopf.OperatorSettings()
        self.settings.posting.enabled = False
        self.stop_flag = asyncio.Event()
        self.index: Any = None

        @kopf.on.login(registry=self.registry)  # type: ignore[misc]
        def login(**kwargs: Any) -> Any:
            return kopf.login_via_client(**kwargs)

        @kopf.index("example.com", "v1", "widgets", id="widgets", registry=self.registry)  # type: ignore[misc]
        async def widgets(namespace: str, name: str, meta: Any, **_: Any) -> dict[str, Any]:
            identity = {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
            return {f"{namespace}/{name}": {"metadata": identity}}

        @kopf.on.startup(registry=self.registry)  # type: ignore[misc]
        async def keep(widgets: Any, **_: Any) -> None:
            self.index = widgets

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
        if self.index is None:
            return {}
        return {key: value for key, values in self.index.items() for value in values}

    def stop(self) -> None:
        self.stop_flag.set()


async def factory(api_client: Any) -> WidgetOperator:
    return WidgetOperator()
