"""kubesim: deterministic simulation and property testing for Kubernetes client-side stores.

The public surface is small and listed in ``__all__``; everything else lives in subpackages
whose layers follow ``ARCHITECTURE.md``:

- ``kubesim._core``: the choice source, the virtual clock, the trace.
- ``kubesim.server``: the fake API server (request in, response or watch stream out).
- ``kubesim.transport``: in-process client adapters and the HTTP server.
- ``kubesim.workload``, ``kubesim.checks``: what a scenario does, and the oracles.
- ``kubesim.sim``: the simulation that wires them together.
"""

from __future__ import annotations

import typing as _typing

from kubesim._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from kubesim._core import ChoiceSource, SeededChoices, Trace, VirtualClock
    from kubesim.checks.memory import (
        MemorySample,
        MemorySampler,
        MemoryViolation,
        check_memory_bounded,
    )
    from kubesim.server.apiserver import APIServer
    from kubesim.server.resources import ResourceType, custom_resource
    from kubesim.server.status import StatusError
    from kubesim.sim.restarts import RestartReport, run_watch_restarts
    from kubesim.sim.simulation import (
        Simulation,
        SimulationStopped,
        StoreBlockedOutsideSimulation,
        StoreCrashed,
    )
    from kubesim.transport.http import HTTPTransport
    from kubesim.transport.kubernetes_asyncio_client import (
        kubernetes_asyncio_client,
        patch_kubernetes_asyncio,
    )
    from kubesim.transport.kubernetes_client import kubernetes_client, patch_kubernetes

__version__ = "0.1.0"

# Imported on first use (kubesim._lazy): `import kubesim` stays cheap for the pytest plugin.
_EXPORTS = {
    "APIServer": "kubesim.server.apiserver",
    "ChoiceSource": "kubesim._core",
    "HTTPTransport": "kubesim.transport.http",
    "MemorySample": "kubesim.checks.memory",
    "MemorySampler": "kubesim.checks.memory",
    "MemoryViolation": "kubesim.checks.memory",
    "ResourceType": "kubesim.server.resources",
    "RestartReport": "kubesim.sim.restarts",
    "SeededChoices": "kubesim._core",
    "Simulation": "kubesim.sim.simulation",
    "SimulationStopped": "kubesim.sim.simulation",
    "StatusError": "kubesim.server.status",
    "StoreBlockedOutsideSimulation": "kubesim.sim.simulation",
    "StoreCrashed": "kubesim.sim.simulation",
    "Trace": "kubesim._core",
    "VirtualClock": "kubesim._core",
    "check_memory_bounded": "kubesim.checks.memory",
    "custom_resource": "kubesim.server.resources",
    "kubernetes_asyncio_client": "kubesim.transport.kubernetes_asyncio_client",
    "kubernetes_client": "kubesim.transport.kubernetes_client",
    "patch_kubernetes": "kubesim.transport.kubernetes_client",
    "patch_kubernetes_asyncio": "kubesim.transport.kubernetes_asyncio_client",
    "run_watch_restarts": "kubesim.sim.restarts",
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "APIServer",
    "ChoiceSource",
    "HTTPTransport",
    "MemorySample",
    "MemorySampler",
    "MemoryViolation",
    "ResourceType",
    "RestartReport",
    "SeededChoices",
    "Simulation",
    "SimulationStopped",
    "StatusError",
    "StoreBlockedOutsideSimulation",
    "StoreCrashed",
    "Trace",
    "VirtualClock",
    "__version__",
    "check_memory_bounded",
    "custom_resource",
    "kubernetes_asyncio_client",
    "kubernetes_client",
    "patch_kubernetes",
    "patch_kubernetes_asyncio",
    "run_watch_restarts",
]
