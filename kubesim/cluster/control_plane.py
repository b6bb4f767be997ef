"""What a cluster's control plane writes as it starts, beyond the namespaces.

A new kubeadm (or kind) cluster is not empty, and clients and test suites written against one
count on that: ``kubectl get pods -n kube-system`` lists pods, ``default/kubernetes`` is the
Service through which pods reach the API server, the two system PriorityClasses exist.
``Cluster(control_plane=True)`` (``kubesim serve``) writes, at start-up, as the real
components do:

- **By the API server** (always, as envtest's does too): the ``kubernetes`` Service in
  ``default`` (ClusterIP 10.96.0.1, port 443 to the API server's 6443), its Endpoints and
  EndpointSlice, the PriorityClasses ``system-node-critical`` and ``system-cluster-critical``,
  healthy ComponentStatuses for the scheduler, the controller manager and etcd, and the RBAC
  bootstrap policy (``cluster-admin``, ``admin``, ``edit``, ``view``, the ``system:*`` roles
  and their bindings: :mod:`kubesim.cluster.rbac`).
- **With nodes and controllers** (the ``kube-system`` workloads; ``kubesim serve
  --no-system-pods`` leaves them out): the first node is the control plane
  (``node-role.kubernetes.io/control-plane``) and its kubelet runs the static pods of etcd,
  kube-apiserver, kube-controller-manager and kube-scheduler, registered as mirror pods
  (``{component}-{node}``, owned by the node, ``kubernetes.io/config.mirror``); kubeadm's
  add-ons are applied: CoreDNS (a Deployment of two, the ``kube-dns`` Service at 10.96.0.10,
  its ServiceAccount and Corefile ConfigMap) and kube-proxy (a DaemonSet on every node, its
  ServiceAccount and ConfigMap); with the metrics API (``metrics_server=True``), a
  metrics-server Deployment and Service, as most clusters run one. The controllers and
  kubelets here then run them like any workload.

Images and flags are those of a Kubernetes 1.33 kubeadm cluster, trimmed to what ``kubectl get``
and ``describe`` show. A mirror pod that is deleted is not made again (a kubelet would).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from kubesim.admission.service_accounts import MIRROR_ANNOTATION
from kubesim.cluster import kubelet, rbac

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

KUBERNETES_VERSION = "v1.33.0"
API_SERVER_PORT = 6443
CONTROL_PLANE_ROLE = "node-role.kubernetes.io/control-plane"
SYSTEM_NAMESPACE = "kube-system"
# kube-apiserver's bootstrap PriorityClasses (pkg/apis/scheduling SystemPriorityClasses).
PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}

_COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
"""
_KUBE_PROXY_CONFIG = """apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: 10.244.0.0/16
mode: iptables
"""


def install(server: APIServer, *, workloads: bool, metrics_server: bool = False) -> None:
    """Write the objects above (``workloads``: the kube-system ones too, with a metrics-server
    Deployment when the server serves the metrics API). Called once, by the server, under its
    lock, before it serves anything."""
    _write_api_server_objects(server)
    if workloads:
        _write_kube_system(server)
        if metrics_server:
            _create(
                server,
                "serviceaccounts",
                {"metadata": {"name": "metrics-server"}},
                SYSTEM_NAMESPACE,
            )
            _create(server, "deployments", _metrics_server(), SYSTEM_NAMESPACE)
            # What the metrics API's APIService points at (kubesim.cluster.api_services).
            _create(server, "services", _metrics_server_service(), SYSTEM_NAMESPACE)


def _create(server: APIServer, plural: str, body: JSON, namespace: str | None = None) -> JSON:
    return server.registry.create(server.resource(plural), body, namespace).obj


def _write_api_server_objects(server: APIServer) -> None:
    address = kubelet.node_ip(0)
    rbac.install(server)
    # The deprecated ComponentStatus API still answers for the scheduler, the controller
    # manager and etcd (``kubectl get cs``); a cluster computes them per request, healthy here.
    for component in ("controller-manager", "etcd-0", "scheduler"):
        _create(
            server,
            "componentstatuses",
            {
                "metadata": {"name": component},
                "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
            },
        )
    for name, value in PRIORITY_CLASSES.items():
        _create(
            server,
            "priorityclasses",
            {
                "metadata": {"name": name},
                "value": value,
                "description": "Used for system critical pods that must not be moved from their "
                "current node."
                if name == "system-node-critical"
                else "Used for system critical pods that must run in the cluster, but can be "
                "moved to another node if necessary.",
            },
        )
    labels = {"component": "apiserver", "provider": "kubernetes"}
    _create(
        server,
        "services",
        {
            "metadata": {"name": "kubernetes", "labels": labels},
            "spec": {
                "clusterIP": "10.96.0.1",
                "clusterIPs": ["10.96.0.1"],
                "ports": [
                    {"name": "https", "port": 443, "protocol": "TCP", "targetPort": API_SERVER_PORT}
                ],
            },
        },
        "default",
    )
    port = {"name": "https", "port": API_SERVER_PORT, "protocol": "TCP"}
    _create(
        server,
        "endpoints",
        {
            "metadata": {
                "name": "kubernetes",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            "subsets": [{"addresses": [{"ip": address}], "ports": [port]}],
        },
        "default",
    )
    _create(
        server,
        "endpointslices",
        {
            "metadata": {
                "name": "kubernetes",
                "labels": {"kubernetes.io/service-name": "kubernetes"},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [port],
        },
        "default",
    )


def _write_kube_system(server: APIServer) -> None:
    nodes = server.resource("nodes")
    control_plane = kubelet.node_name(0)
    stored = server.storage.get(nodes, ("", control_plane))
    if stored is None:
        return
    node = stored.obj
    labelled = {
        **node,
        "metadata": {
            **node["metadata"],
            "labels": {**node["metadata"].get("labels", {}), CONTROL_PLANE_ROLE: ""},
        },
    }
    node = server.registry.update(nodes, None, control_plane, labelled, None).obj
    for component, image, command in _static_pods(kubelet.node_ip(0)):
        _create(
            server, "pods", _mirror_pod(server, node, component, image, command), SYSTEM_NAMESPACE
        )
    for account in ("coredns", "kube-proxy"):
        _create(server, "serviceaccounts", {"metadata": {"name": account}}, SYSTEM_NAMESPACE)
    _create(
        server,
        "configmaps",
        {"metadata": {"name": "coredns"}, "data": {"Corefile": _COREFILE}},
        SYSTEM_NAMESPACE,
    )
    _create(
        server,
        "configmaps",
        {
            "metadata": {"name": "kube-proxy", "labels": {"app": "kube-proxy"}},
            "data": {"config.conf": _KUBE_PROXY_CONFIG},
        },
        SYSTEM_NAMESPACE,
    )
    _create(server, "services", _kube_dns_service(), SYSTEM_NAMESPACE)
    _create(server, "deployments", _coredns(), SYSTEM_NAMESPACE)
    _create(server, "daemonsets", _kube_proxy(), SYSTEM_NAMESPACE)


def _static_pods(address: str) -> list[tuple[str, str, list[str]]]:
    registry = "registry.k8s.io"
    return [
        (
            "etcd",
            f"{registry}/etcd:3.5.21-0",
            [
                "etcd",
                f"--advertise-client-urls=https://{address}:2379",
                "--data-dir=/var/lib/etcd",
                f"--listen-client-urls=https://127.0.0.1:2379,https://{address}:2379",
            ],
        ),
        (
            "kube-apiserver",
            f"{registry}/kube-apiserver:{KUBERNETES_VERSION}",
            [
                "kube-apiserver",
                f"--advertise-address={address}",
                "--authorization-mode=Node,RBAC",
                "--etcd-servers=https://127.0.0.1:2379",
                f"--secure-port={API_SERVER_PORT}",
                "--service-cluster-ip-range=10.96.0.0/16",
            ],
        ),
        (
            "kube-controller-manager",
            f"{registry}/kube-controller-manager:{KUBERNETES_VERSION}",
            [
                "kube-controller-manager",
                "--allocate-node-cidrs=true",
                "--cluster-cidr=10.244.0.0/16",
                "--leader-elect=true",
            ],
        ),
        (
            "kube-scheduler",
            f"{registry}/kube-scheduler:{KUBERNETES_VERSION}",
            ["kube-scheduler", "--leader-elect=true"],
        ),
    ]


def _mirror_pod(
    server: APIServer, node: JSON, component: str, image: str, command: list[str]
) -> JSON:
    """The mirror pod a kubelet registers for one of its static pods (kubelet/pod/mirror_client.go):
    named after the node, owned by it, its config hash in two annotations."""
    name = node["metadata"]["name"]
    config_hash = hashlib.sha256(f"{component} {command}".encode()).hexdigest()[:32]
    return {
        "metadata": {
            "name": f"{component}-{name}",
            "labels": {"component": component, "tier": "control-plane"},
            "annotations": {
                "kubernetes.io/config.hash": config_hash,
                MIRROR_ANNOTATION: config_hash,
                "kubernetes.io/config.seen": server.clock.timestamp(),
                "kubernetes.io/config.source": "file",
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": name,
                    "uid": node["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": component, "image": image, "command": command}],
            "hostNetwork": True,
            "nodeName": name,
            "priority": PRIORITY_CLASSES["system-node-critical"],
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
        },
    }


def _kube_dns_service() -> JSON:
    return {
        "metadata": {
            "name": "kube-dns",
            "labels": {
                "k8s-app": "kube-dns",
                "kubernetes.io/cluster-service": "true",
                "kubernetes.io/name": "CoreDNS",
            },
        },
        # The first address the allocator hands out (kubesim.apiserver.defaults.cluster_ips): this
        # is the first Service with none, as kubeadm's add-on is.
        "spec": {
            "selector": {"k8s-app": "kube-dns"},
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    }


def _coredns() -> JSON:
    labels = {"k8s-app": "kube-dns"}
    return {
        "metadata": {"name": "coredns", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": CONTROL_PLANE_ROLE, "effect": "NoSchedule"},
                    ],
                    "dnsPolicy": "Default",
                    "containers": [
                        {
                            "name": "coredns",
                            "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "ports": [
                                {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                                {"containerPort": 9153, "name": "metrics", "protocol": "TCP"},
                            ],
                            "resources": {
                                "limits": {"memory": "170Mi"},
                                "requests": {"cpu": "100m", "memory": "70Mi"},
                            },
                            "volumeMounts": [
                                {
                                    "name": "config-volume",
                                    "mountPath": "/etc/coredns",
                                    "readOnly": True,
                                }
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "config-volume",
                            "configMap": {
                                "name": "coredns",
                                "items": [{"key": "Corefile", "path": "Corefile"}],
                            },
                        }
                    ],
                },
            },
        },
    }


def _kube_proxy() -> JSON:
    labels = {"k8s-app": "kube-proxy"}
    return {
        "metadata": {"name": "kube-proxy", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": True,
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": "kube-proxy",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "kube-proxy",
                            "image": f"registry.k8s.io/kube-proxy:{KUBERNETES_VERSION}",
                            "command": [
                                "/usr/local/bin/kube-proxy",
                                "--config=/var/lib/kube-proxy/config.conf",
                                "--hostname-override=$(NODE_NAME)",
                            ],
                            "env": [
                                {
                                    "name": "NODE_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                                }
                            ],
                            "securityContext": {"privileged": True},
                        }
                    ],
                },
            },
        },
    }


def _metrics_server_service() -> JSON:
    labels = {"k8s-app": "metrics-server"}
    return {
        "metadata": {"name": "metrics-server", "labels": labels},
        "spec": {
            "selector": labels,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": "https"}],
        },
    }


def _metrics_server() -> JSON:
    labels = {"k8s-app": "metrics-server"}
    return {
        "metadata": {"name": "metrics-server", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "metrics-server",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [
                        {
                            "name": "metrics-server",
                            "image": "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
                            "args": [
                                "--cert-dir=/tmp",
                                "--secure-port=10250",
                                "--kubelet-preferred-address-types=InternalIP",
                                "--metric-resolution=15s",
                            ],
                            "ports": [{"containerPort": 10250, "name": "https", "protocol": "TCP"}],
                        }
                    ],
                },
            },
        },
    }
