"""kubesim: deterministic simulation and property testing for Kubernetes client-side stores.

Everything a user writes is importable from three places, each listing its names in
``__all__`` (a test checks them):

- ``kubesim`` (this module): the fake API server, the simulation, the transports, workload
  objects, the memory and race oracles, and the scheduler's entry points (``explore``,
  ``run_schedule``, ``controlled_server``).
- ``kubesim.sched``: the controlled scheduler, its strategies (``RandomWalk``, ``PCT``,
  ``Preemptions``) and the failures it reports; ``kubesim.sched.aio`` is the deterministic
  asyncio loop and its ``run``.
- ``kubesim.checks``: the oracles.

Every other module is internal and may change. Its layers (imports point down only), bottom
up: the core (``_core``: choices, virtual clock, trace); the fake API server in layers
(``apiserver``, then ``admission`` and ``cluster``, with ``wire`` beside them above the core);
the scheduler (``sched``); the transports, the workload and the oracles (``transport``,
``workload``, ``checks``); the simulation (``sim``); the property engine (``scenario``); then
``report``, ``testing`` and ``cli``. docs/explanation/architecture.md draws them, and
tests/unit/test_import_graph.py (``LAYERS``) holds the package to them.
"""

from __future__ import annotations

import typing as _typing

from kubesim._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from kubesim._core import ChoiceSource, SeededChoices, Trace, VirtualClock
    from kubesim.apiserver.resources import ResourceType, custom_resource
    from kubesim.apiserver.server import APIServer
    from kubesim.apiserver.status import StatusError
    from kubesim.checks.memory import (
        MemorySample,
        MemorySampler,
        MemoryViolation,
        check_memory_bounded,
    )
    from kubesim.checks.races import (
        IsolationMonitor,
        RaceViolation,
        ServerVersions,
        check_reads_match_server,
        check_snapshot_consistency,
    )
    from kubesim.cluster.cluster import Cluster
    from kubesim.sched.explore import Exploration, Found, explore, run_schedule
    from kubesim.sim.restarts import RestartReport, RestartRound, run_watch_restarts
    from kubesim.sim.simulation import (
        Simulation,
        SimulationStopped,
        StoreBlockedOutsideSimulation,
        StoreCrashed,
    )
    from kubesim.sim.threads import controlled_server
    from kubesim.transport.http import HTTPTransport
    from kubesim.transport.http_clients import patch_http_clients
    from kubesim.transport.kubernetes_asyncio_client import (
        kubernetes_asyncio_client,
        patch_kubernetes_asyncio,
    )
    from kubesim.transport.kubernetes_client import kubernetes_client, patch_kubernetes
    from kubesim.workload.pods import make_pod, populate_pods

from kubesim._version import __version__

# Imported on first use (kubesim._lazy): pytest imports this package in every run where kubesim
# is installed (the plugin), so `import kubesim` must not pull in the server or the simulation.
_EXPORTS = {
    "APIServer": "kubesim.apiserver.server",
    "ChoiceSource": "kubesim._core",
    "Cluster": "kubesim.cluster.cluster",
    "Exploration": "kubesim.sched.explore",
    "Found": "kubesim.sched.explore",
    "HTTPTransport": "kubesim.transport.http",
    "IsolationMonitor": "kubesim.checks.races",
    "MemorySample": "kubesim.checks.memory",
    "MemorySampler": "kubesim.checks.memory",
    "MemoryViolation": "kubesim.checks.memory",
    "RaceViolation": "kubesim.checks.races",
    "ResourceType": "kubesim.apiserver.resources",
    "RestartReport": "kubesim.sim.restarts",
    "RestartRound": "kubesim.sim.restarts",
    "SeededChoices": "kubesim._core",
    "ServerVersions": "kubesim.checks.races",
    "Simulation": "kubesim.sim.simulation",
    "SimulationStopped": "kubesim.sim.simulation",
    "StatusError": "kubesim.apiserver.status",
    "StoreBlockedOutsideSimulation": "kubesim.sim.simulation",
    "StoreCrashed": "kubesim.sim.simulation",
    "Trace": "kubesim._core",
    "VirtualClock": "kubesim._core",
    "check_memory_bounded": "kubesim.checks.memory",
    "check_reads_match_server": "kubesim.checks.races",
    "check_snapshot_consistency": "kubesim.checks.races",
    "controlled_server": "kubesim.sim.threads",
    "custom_resource": "kubesim.apiserver.resources",
    "explore": "kubesim.sched.explore",
    "kubernetes_asyncio_client": "kubesim.transport.kubernetes_asyncio_client",
    "kubernetes_client": "kubesim.transport.kubernetes_client",
    "make_pod": "kubesim.workload.pods",
    "patch_http_clients": "kubesim.transport.http_clients",
    "patch_kubernetes": "kubesim.transport.kubernetes_client",
    "patch_kubernetes_asyncio": "kubesim.transport.kubernetes_asyncio_client",
    "populate_pods": "kubesim.workload.pods",
    "run_schedule": "kubesim.sched.explore",
    "run_watch_restarts": "kubesim.sim.restarts",
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "APIServer",
    "ChoiceSource",
    "Cluster",
    "Exploration",
    "Found",
    "HTTPTransport",
    "IsolationMonitor",
    "MemorySample",
    "MemorySampler",
    "MemoryViolation",
    "RaceViolation",
    "ResourceType",
    "RestartReport",
    "RestartRound",
    "SeededChoices",
    "ServerVersions",
    "Simulation",
    "SimulationStopped",
    "StatusError",
    "StoreBlockedOutsideSimulation",
    "StoreCrashed",
    "Trace",
    "VirtualClock",
    "__version__",
    "check_memory_bounded",
    "check_reads_match_server",
    "check_snapshot_consistency",
    "controlled_server",
    "custom_resource",
    "explore",
    "kubernetes_asyncio_client",
    "kubernetes_client",
    "make_pod",
    "patch_http_clients",
    "patch_kubernetes",
    "patch_kubernetes_asyncio",
    "populate_pods",
    "run_schedule",
    "run_watch_restarts",
]

# Hypothesis' habit (strategies/__init__.py): the module fails to import if __all__ and the
# names it exports (the lazy table) disagree.
assert set(__all__) == {*_EXPORTS, "__version__"}, "kubesim.__all__ is out of date"
