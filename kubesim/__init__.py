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

from kubesim._core import ChoiceSource, SeededChoices, Trace, VirtualClock
from kubesim.checks.memory import MemorySample, MemorySampler, MemoryViolation, check_memory_bounded
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
