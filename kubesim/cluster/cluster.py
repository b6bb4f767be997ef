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
        self.nodes: kubelet.Nodes | None = None
        self.controllers: workloads.Controllers | None = None
        self.node_lifecycle: node_lifecycle_controller.NodeLifecycleController | None = None
        self.recorder = events.Recorder(self)  # the Events the components record, one sequence
        assembly = _Assembly(
            self,
            service_accounts=service_accounts,
            root_ca_bundle=root_ca_bundle,
            default_tolerations=default_tolerations,
            nodes=nodes,
            controllers=controllers,
            node_lifecycle=node_lifecycle,
            control_plane=control_plane,
            system_pods=system_pods,
            metrics_server=metrics_server,
        )
        super().__init__(components=[assembly], **options)

    def kubelet_runs(self, node_uid: str) -> bool:
        """One of this cluster's kubelets registered the node with this uid (and reports on it)."""
        return self.nodes is not None and node_uid in self.nodes.node_uids


class _Assembly:
    """How a :class:`Cluster` puts itself together: a
    :class:`~kubesim.apiserver.extensions.Component` of its own server, holding which parts run."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        service_accounts: bool,
        root_ca_bundle: str | None,
        default_tolerations: bool,
        nodes: int,
        controllers: bool,
        node_lifecycle: bool,
        control_plane: bool,
        system_pods: bool,
        metrics_server: bool,
    ) -> None:
        self.cluster = cluster
        self.service_accounts = service_accounts
        self.root_ca_bundle = root_ca_bundle
        self.default_tolerations = default_tolerations
        self.node_count = nodes
        self.controllers = controllers
        self.node_lifecycle = node_lifecycle
        self.control_plane = control_plane
        self.system_pods = system_pods
        self.metrics_server = metrics_server
        self.api_services = False  # from the control plane's start on

    def install(self, server: APIServer) -> None:
        cluster = self.cluster
        registry = cluster.registry
        registry.admission.append(LimitRanger(cluster))
        if self.service_accounts:
            registry.admission.append(ServiceAccountAdmission(cluster))
        if self.default_tolerations:
            registry.admission.append(DefaultTolerationSeconds())
        registry.admission.append(ResourceQuotaAdmission(cluster))
        if self.controllers:
            cluster.controllers = workloads.Controllers(cluster)
            registry.garbage_collector = True
        if self.node_lifecycle:
            cluster.node_lifecycle = node_lifecycle_controller.NodeLifecycleController(cluster)
        registry.after_commit.append(self.sync)

    def start(self, server: APIServer) -> None:
        cluster = self.cluster
        if self.node_count:
            cluster.nodes = kubelet.Nodes(cluster, self.node_count)  # which checks the count
            cluster.registry.kubelets = cluster.nodes
            with cluster.lock:
                cluster.nodes.register()
        if self.metrics_server:
            for metrics_resource in metrics.resources():
                cluster.register(metrics_resource)
            cluster.aggregated_apis[metrics.GROUP] = metrics.answer
        if self.control_plane:
            with cluster.lock:
                # The aggregator's APIServices (and, from now on, the CRDs' ones).
                self.api_services = True
                api_services.install(cluster)
                control_plane_objects.install(
                    cluster, workloads=self.system_pods, metrics_server=self.metrics_server
                )

    def sync(self, event: Event) -> None:
        """After every commit, each part that runs reacts, in this order."""
        cluster = self.cluster
        if self.api_services and crds.is_crd_resource(event.resource):
            api_services.sync_custom(cluster)
        if self.service_accounts:
            service_account_controller.sync(cluster, event)
        if self.root_ca_bundle is not None:
            root_ca.sync(cluster, event, self.root_ca_bundle)
        if cluster.nodes is not None:
            cluster.nodes.sync(event)
        if cluster.controllers is not None:
            cluster.controllers.sync(event)
        if cluster.node_lifecycle is not None:
            cluster.node_lifecycle.sync(event)


__all__ = ["Cluster"]
