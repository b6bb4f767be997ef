"""Server-side printing of the kinds kubectl users list most (kubesim.wire.printers): the
columns kube-apiserver's printers declare, and cells computed from the object alone."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from kubesim.wire import printers

NOW = _dt.datetime(2024, 1, 1, 1, 0, 0, tzinfo=_dt.timezone.utc)
CREATED = {"name": "web", "creationTimestamp": "2024-01-01T00:00:00Z"}


def names(columns: list[dict[str, Any]], wide: bool = False) -> list[str]:
    return [c["name"] for c in columns if wide or c["priority"] == 0]


def test_workloads_print_readiness_against_their_desired_replicas() -> None:
    deployment = {
        "metadata": CREATED,
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
            "template": {
                "spec": {
                    "containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}]
                }
            },
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 1},
    }
    assert names(printers.DEPLOYMENT_COLUMNS) == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert printers.deployment_cells(deployment, NOW) == [
        "web",
        "2/3",
        3,
        1,
        "60m",
        "a,b",
        "x:1,y:2",
        "app=web,tier in (a,b)",
    ]
    stateful = {"metadata": CREATED, "spec": {}, "status": {}}  # replicas default to 1
    assert printers.stateful_set_cells(stateful, NOW)[:3] == ["web", "0/1", "60m"]
    controller = {"metadata": CREATED, "spec": {"replicas": 2, "selector": {"app": "web"}}}
    assert printers.replica_set_cells(controller, NOW)[:4] == ["web", 2, 0, 0]
    assert printers.replica_set_cells(controller, NOW)[-1] == "app=web"


def test_services_print_their_addresses_and_ports_by_type() -> None:
    def cells(**spec: Any) -> list[Any]:
        return printers.service_cells({"metadata": CREATED, "spec": spec, "status": {}}, NOW)

    assert names(printers.SERVICE_COLUMNS) == [
        "Name",
        "Type",
        "Cluster-IP",
        "External-IP",
        "Port(s)",
        "Age",
    ]
    assert cells(clusterIP="10.96.0.10", ports=[{"port": 53, "protocol": "UDP"}])[1:5] == [
        "ClusterIP",
        "10.96.0.10",
        "<none>",
        "53/UDP",
    ]
    node_port = cells(
        type="NodePort", clusterIP="10.96.0.11", ports=[{"port": 80, "nodePort": 30080}]
    )
    assert node_port[4] == "80:30080/TCP"
    assert cells(type="LoadBalancer", clusterIP="10.96.0.12")[3:5] == ["<pending>", "<none>"]
    assert cells(type="ExternalName", externalName="db.example.com")[3] == "db.example.com"


def test_jobs_cron_jobs_and_autoscalers() -> None:
    job = {
        "metadata": CREATED,
        "spec": {"completions": 3},
        "status": {
            "succeeded": 3,
            "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:00:42Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert names(printers.JOB_COLUMNS) == ["Name", "Status", "Completions", "Duration", "Age"]
    assert printers.job_cells(job, NOW)[:4] == ["web", "Complete", "3/3", "42s"]
    running = {"metadata": CREATED, "spec": {"parallelism": 2}, "status": {}}
    assert printers.job_cells(running, NOW)[1:4] == ["Running", "0/1 of 2", ""]
    cron = {"metadata": CREATED, "spec": {"schedule": "*/5 * * * *", "suspend": True}}
    assert printers.cron_job_cells(cron, NOW)[:6] == [
        "web",
        "*/5 * * * *",
        "<none>",
        True,
        0,
        "<none>",
    ]
    cpu = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
    }
    hpa = {
        "metadata": CREATED,
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 5,
            "metrics": [cpu],
        },
        "status": {
            "currentReplicas": 3,
            "currentMetrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": 41}},
                }
            ],
        },
    }
    assert printers.hpa_cells(hpa, NOW)[:6] == ["web", "Deployment/web", "cpu: 41%/60%", 2, 5, 3]
    hpa["status"] = {}
    assert printers.hpa_cells(hpa, NOW)[2] == "cpu: <unknown>/60%"


def test_configuration_kinds_count_their_keys() -> None:
    config = {"metadata": CREATED, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}
    assert printers.config_map_cells(config, NOW) == ["web", 2, "60m"]
    secret = {
        "metadata": CREATED,
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "", "tls.key": ""},
    }
    assert printers.secret_cells(secret, NOW) == ["web", "kubernetes.io/tls", 2, "60m"]
    namespace = {"metadata": CREATED, "status": {"phase": "Terminating"}}
    assert printers.namespace_cells(namespace, NOW) == ["web", "Terminating", "60m"]
    assert printers.service_account_cells({"metadata": CREATED}, NOW) == ["web", 0, "60m"]


def test_component_statuses_print_their_healthy_condition() -> None:
    assert names(printers.COMPONENT_STATUS_COLUMNS) == ["Name", "Status", "Message", "Error"]
    healthy = {
        "metadata": CREATED,
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    }
    assert printers.component_status_cells(healthy, NOW) == ["web", "Healthy", "ok", ""]
    failing = {
        "metadata": CREATED,
        "conditions": [{"type": "Healthy", "status": "False", "error": "dial tcp: refused"}],
    }
    assert printers.component_status_cells(failing, NOW) == [
        "web",
        "Unhealthy",
        "",
        "dial tcp: refused",
    ]
    assert printers.component_status_cells({"metadata": CREATED}, NOW)[1] == "Unknown"


def test_endpoints_print_three_addresses_and_how_many_more() -> None:
    def cells(subsets: Any) -> list[Any]:
        return printers.endpoints_cells({"metadata": CREATED, "subsets": subsets}, NOW)

    assert names(printers.ENDPOINTS_COLUMNS) == ["Name", "Endpoints", "Age"]
    assert cells(None) == ["web", "<none>", "60m"]
    ready = [{"ip": f"10.0.0.{n}"} for n in range(1, 4)]
    ports = [{"name": "http", "port": 80}, {"name": "tls", "port": 443}]
    assert cells([{"addresses": ready[:2], "ports": ports[:1]}])[1] == "10.0.0.1:80,10.0.0.2:80"
    # Two ports of three addresses: six endpoints, three shown.
    assert cells([{"addresses": ready, "ports": ports}])[1] == (
        "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more..."
    )
    assert cells([{"addresses": [{"ip": "fd00::1"}], "ports": ports[:1]}])[1] == "[fd00::1]:80"
    assert cells([{"addresses": ready[:1]}])[1] == "10.0.0.1"  # headless, no ports
    assert cells([{"notReadyAddresses": ready, "ports": ports}])[1] == ""


def test_endpoint_slices_print_their_ports_and_addresses() -> None:
    endpoints = [{"addresses": [f"10.0.0.{n}"]} for n in range(1, 6)]
    sliced = {
        "metadata": CREATED,
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80}, {"name": "named"}],
        "endpoints": endpoints,
    }
    assert names(printers.ENDPOINT_SLICE_COLUMNS) == [
        "Name",
        "AddressType",
        "Ports",
        "Endpoints",
        "Age",
    ]
    assert printers.endpoint_slice_cells(sliced, NOW) == [
        "web",
        "IPv4",
        "80,named",
        "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...",
        "60m",
    ]
    empty = {"metadata": CREATED, "addressType": "IPv4"}
    assert printers.endpoint_slice_cells(empty, NOW)[2:4] == ["<unset>", "<unset>"]


def test_disruption_budgets_print_their_bounds_and_allowed_disruptions() -> None:
    assert names(printers.PDB_COLUMNS) == [
        "Name",
        "Min Available",
        "Max Unavailable",
        "Allowed Disruptions",
        "Age",
    ]
    counted = {
        "metadata": CREATED,
        "spec": {"minAvailable": 2},
        "status": {"disruptionsAllowed": 1},
    }
    assert printers.pdb_cells(counted, NOW) == ["web", "2", "N/A", 1, "60m"]
    unseen = {"metadata": CREATED, "spec": {"maxUnavailable": "25%"}}
    assert printers.pdb_cells(unseen, NOW)[1:4] == ["N/A", "25%", 0]
