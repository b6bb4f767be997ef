"""A cluster: the API server core with admission, kubelets, controllers and the control plane.

:class:`Cluster` is an :class:`~kubesim.apiserver.server.APIServer` (every verb, fault and
transport works on it unchanged) with what a real cluster runs around its API server,
assembled through the core's extension points (:mod:`kubesim.apiserver.extensions`): the
admission chain, a hook after every commit, the kubelets, an aggregated API. ``kubesim serve``
runs one with everything on; a simulation opts in part by part.

Every part reacts to a commit under the server's lock, as the next writes, in a fixed order:
a run stays a function of its seed, and its writes are in the trace.
"""

from __future__ import annotations

from typing import Any

from kubesim.admission.limit_ranges import LimitRanger
from kubesim.admission.resource_quotas import ResourceQuotaAdmission
from kubesim.admission.service_accounts import ServiceAccountAdmission
from kubesim.admission.tolerations import DefaultTolerationSeconds
from kubesim.apiserver import crds
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.storage import Event
from kubesim.cluster import api_services, events, kubelet, metrics, root_ca, workloads
from kubesim.cluster import control_plane as control_plane_objects
from kubesim.cluster import node_lifecycle as node_lifecycle_controller
from kubesim.cluster import service_accounts as service_account_controller


class Cluster(APIServer):
    """An API server and the cluster around it, each part off unless turned on.

    ``kubesim serve`` turns all of them on, for clients and test suites written for a real
    cluster; simulations leave them off: each is work on every write that stores under test
    rarely look at, and writes a scenario did not ask for. The LimitRanger and ResourceQuota
    admission plugins are always in the chain (they act only where a LimitRange or a quota
    exists). ``options`` are the :class:`~kubesim.apiserver.server.APIServer`'s.

    - ``service_accounts=True``: the ServiceAccount controller and admission (a ``default``
      ServiceAccount in every namespace; a pod runs as an account that exists:
      :mod:`kubesim.cluster.service_accounts`, :mod:`kubesim.admission.service_accounts`).
    - ``root_ca_bundle=PEM``: the root CA certificate publisher (a ``kube-root-ca.crt``
      ConfigMap holding ``PEM`` in every namespace: :mod:`kubesim.cluster.root_ca`).
    - ``default_tolerations=True``: the DefaultTolerationSeconds admission (every pod tolerates
      an unready or unreachable node for 300 s: :mod:`kubesim.admission.tolerations`).
    - ``nodes=N``: N nodes, the scheduler and their kubelets, which bind each new pod and start
      it (``Pending``, then ``Running``), and delete pods gracefully
      (:mod:`kubesim.cluster.kubelet`).
    - ``controllers=True``: the Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
      Endpoints, EndpointSlice, disruption and quota controllers and the garbage collector
      (:mod:`kubesim.cluster.workloads`).
    - ``node_lifecycle=True``: the node lifecycle and taint eviction controllers: a node a
      client created that stops reporting goes ``Unknown``, is tainted ``unreachable`` and loses
      its pods (:mod:`kubesim.cluster.node_lifecycle`).
    - ``control_plane=True``: what a control plane writes at start-up (the ``kubernetes``
      Service, the system PriorityClasses, the APIServices), and with ``system_pods=True``
      (which needs nodes and controllers) ``kube-system``'s pods
      (:mod:`kubesim.cluster.control_plane`).
    - ``metrics_server=True``: the resource metrics API, ``metrics.k8s.io`` (``kubectl top``:
      :mod:`kubesim.cluster.metrics`), and with ``system_pods`` a metrics-server pod.
    """

    def __init__(
        self,
        *,
        service_accounts: bool = False,
        root_ca_bundle: str | None = None,
        default_tolerations: bool = False,
        nodes: int = 0,
        controllers: bool = False,
        node_lifecycle: bool = False,
        control_plane: bool = False,
        system_pods: bool = False,
        metrics_server: bool = False,
        **options: Any,
    ) -> None:
        if system_pods and not (nodes and controllers and control_plane):
            raise ValueError(
                "system_pods=True runs kube-system's pods on the nodes' kubelets through the "
                "controllers: it needs control_plane=True, nodes >= 1 and controllers=True, got "
                f"control_plane={control_plane!r}, nodes={nodes!r}, controllers={controllers!r}"
            )
        if root_ca_bundle is not None and not (
            isinstance(root_ca_bundle, str) and root_ca_bundle.startswith("-----BEGIN ")
        ):
            raise ValueError(
                "root_ca_bundle must be None or PEM text (str, '-----BEGIN CERTIFICATE-----...'), "
                f"got root_ca_bundle={root_ca_bundle!r:.60}"
            )
        if "components" in options:
            raise TypeError("Cluster assembles its own components: components= is not taken")
        self._service_accounts = service_accounts
        self._root_ca_bundle = root_ca_bundle
        self._default_tolerations = default_tolerations
        self._node_count = nodes
        self._run_controllers = controllers
        self._run_node_lifecycle = node_lifecycle
        self._control_plane = control_plane
        self._system_pods = system_pods
        self._metrics_server = metrics_server
        self._api_services = False  # from the control plane's start on
        self.nodes: kubelet.Nodes | None = None
        self.controllers: workloads.Controllers | None = None
        self.node_lifecycle: node_lifecycle_controller.NodeLifecycleController | None = None
        self.recorder = events.Recorder(self)  # the Events the components record, one sequence
        super().__init__(components=[_Assembly(self)], **options)

    def kubelet_runs(self, node_uid: str) -> bool:
        """One of this cluster's kubelets registered the node with this uid (and reports on it)."""
        return self.nodes is not None and node_uid in self.nodes.node_uids

    def _sync(self, event: Event) -> None:
        """After every commit, each part that runs reacts, in this order."""
        if self._api_services and crds.is_crd_resource(event.resource):
            api_services.sync_custom(self)
        if self._service_accounts:
            service_account_controller.sync(self, event)
        if self._root_ca_bundle is not None:
            root_ca.sync(self, event, self._root_ca_bundle)
        if self.nodes is not None:
            self.nodes.sync(event)
        if self.controllers is not None:
            self.controllers.sync(event)
        if self.node_lifecycle is not None:
            self.node_lifecycle.sync(event)


class _Assembly:
    """How a :class:`Cluster` puts itself together (a
    :class:`~kubesim.apiserver.extensions.Component` of its own server)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def install(self, server: APIServer) -> None:
        cluster = self.cluster
        registry = cluster.registry
        registry.admission.append(LimitRanger(cluster))
        if cluster._service_accounts:
            registry.admission.append(ServiceAccountAdmission(cluster))
        if cluster._default_tolerations:
            registry.admission.append(DefaultTolerationSeconds())
        registry.admission.append(ResourceQuotaAdmission(cluster))
        if cluster._run_controllers:
            cluster.controllers = workloads.Controllers(cluster)
            registry.garbage_collector = True
        if cluster._run_node_lifecycle:
            cluster.node_lifecycle = node_lifecycle_controller.NodeLifecycleController(cluster)
        registry.after_commit.append(cluster._sync)

    def start(self, server: APIServer) -> None:
        cluster = self.cluster
        if cluster._node_count:
            cluster.nodes = kubelet.Nodes(cluster, cluster._node_count)  # which checks the count
            cluster.registry.kubelets = cluster.nodes
            with cluster.lock:
                cluster.nodes.register()
        if cluster._metrics_server:
            for metrics_resource in metrics.resources():
                cluster.register(metrics_resource)
            cluster.aggregated_apis[metrics.GROUP] = metrics.answer
        if cluster._control_plane:
            with cluster.lock:
                # The aggregator's APIServices (and, from now on, the CRDs' ones).
                cluster._api_services = True
                api_services.install(cluster)
                control_plane_objects.install(
                    cluster, workloads=cluster._system_pods, metrics_server=cluster._metrics_server
                )


__all__ = ["Cluster"]
