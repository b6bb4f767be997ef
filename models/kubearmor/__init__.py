"""KubeArmor's pod watcher, re-created in Python on the official client.

Upstream: kubearmor/KubeArmor, ``KubeArmor/core/kubeUpdate.go`` (``WatchK8sPods``,
``UpdateEndPointWithPod``) and ``KubeArmor/core/k8sHandler.go`` (``WatchK8sPods``), as of
commit ``19acf50d^`` (before PR #1553) and ``19acf50d`` (after it).

What the daemon does, and what this model keeps:

- A *raw* watch: ``GET /api/v1/pods?watch=true`` with no resourceVersion, no selector, no list
  first. Events are decoded line by line until EOF or a decode error; then a new watch is
  opened at once. Types other than ADDED/MODIFIED/DELETED (an ERROR 410, say) are skipped.
- ``K8sPods``: a list of slim pod records, de-duplicated by a linear scan on namespace/name.
- ``EndPoints``: one record per container, each carrying the pod's labels, identities, and
  copies of the security policies that select it.

The bug (before #1553): the daemon computed whether an ADDED pod was new, then threw the answer
away and handed every ADDED to ``UpdateEndPointWithPod``, which *appends* endpoints. A watch that
restarts without a resourceVersion gets a synthetic ADDED for every existing pod, so every
restart appended a full set of duplicate endpoints. The fix (#1553) turns a duplicate ADDED into
MODIFIED before it reaches ``UpdateEndPointWithPod``.

Residual defects of the same code that the model keeps, because they are the real behaviour:
MODIFIED never refreshes ``EndPoints`` in place (the match compares endpoint records to a
container name, which is always false; fixed upstream in 2026, commit ``3f28c4f4``), and pods
deleted while no watch is open are never removed (no relist).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

# Security policies the daemon enforces; real ones come from KubeArmorPolicy objects. Each
# endpoint keeps copies of those whose selector matches its pod, which is what makes duplicate
# endpoints expensive.
DEFAULT_POLICIES: list[dict[str, Any]] = [
    {
        "name": f"policy-{index}",
        "namespace": "",
        "selector": {"matchLabels": {"tier": tier}},
        "process": {"matchPaths": [{"path": f"/usr/bin/tool-{n}"} for n in range(8)]},
        "file": {
            "matchDirectories": [{"dir": f"/var/lib/app-{n}/", "recursive": True} for n in range(8)]
        },
        "action": "Block",
        "tags": ["MITRE", "T1059", f"policy-{index}"],
    }
    for index, tier in enumerate(("frontend", "backend", "frontend"))
]


class KubeArmorDaemon:
    """The pod-watching half of KubeArmor's daemon."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        duplicate_added_as_modified: bool,
        policies: list[dict[str, Any]] | None = None,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.duplicate_added_as_modified = duplicate_added_as_modified
        self.security_policies = DEFAULT_POLICIES if policies is None else policies
        self.k8s_pods: list[dict[str, Any]] = []
        self.k8s_pods_lock = threading.Lock()
        self.endpoints: list[dict[str, Any]] = []
        self.endpoints_lock = threading.Lock()

    # -- the watch loop (kubeUpdate.go WatchK8sPods) ---------------------------------------
    def watch_k8s_pods(self) -> None:
        while True:
            try:
                # k8sHandler.go: a raw GET with watch=true and nothing else.
                resp = self.core.list_pod_for_all_namespaces(watch=True, _preload_content=False)
            except (client.ApiException, HTTPError):
                time.sleep(1)
                continue
            try:
                for line in iter_resp_lines(resp):
                    try:
                        event = json.loads(line)
                    except ValueError:
                        break  # the Go decoder stops at the first undecodable event
                    if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    self.handle_pod_event(event["type"], event["object"])
            except HTTPError:
                pass  # connection cut: fall through and watch again
            finally:
                resp.release_conn()

    run = watch_k8s_pods

    def handle_pod_event(self, event_type: str, pod: dict[str, Any]) -> None:
        record = self._k8s_pod(pod)
        with self.k8s_pods_lock:
            index = self._find_pod(record["namespace"], record["name"])
            if event_type == "ADDED":
                if index is None:
                    self.k8s_pods.append(record)
                elif self.duplicate_added_as_modified:
                    # PR #1553: "Treat duplicate pod added events as modified".
                    self.k8s_pods[index] = record
                    event_type = "MODIFIED"
            elif event_type == "MODIFIED":
                if index is None:
                    self.k8s_pods.append(record)
                else:
                    self.k8s_pods[index] = record
            elif event_type == "DELETED" and index is not None:
                del self.k8s_pods[index]
        self.update_endpoint_with_pod(event_type, record)

    def _find_pod(self, namespace: str, name: str) -> int | None:
        for index, known in enumerate(self.k8s_pods):  # the O(n) scan of the original
            if known["namespace"] == namespace and known["name"] == name:
                return index
        return None

    @staticmethod
    def _k8s_pod(pod: dict[str, Any]) -> dict[str, Any]:
        metadata = pod.get("metadata", {})
        statuses = pod.get("status", {}).get("containerStatuses") or []
        return {
            "namespace": metadata.get("namespace", ""),
            "name": metadata.get("name", ""),
            "labels": dict(metadata.get("labels") or {}),
            "annotations": dict(metadata.get("annotations") or {}),
            "containers": {s.get("containerID", ""): s.get("name", "") for s in statuses},
            "container_names": [
                c.get("name", "") for c in pod.get("spec", {}).get("containers", [])
            ],
        }

    # -- endpoints (kubeUpdate.go UpdateEndPointWithPod) -----------------------------------
    def update_endpoint_with_pod(self, action: str, pod: dict[str, Any]) -> None:
        if action == "ADDED":
            new_endpoints = self._build_endpoints(pod)
            with self.endpoints_lock:
                self.endpoints.extend(new_endpoints)  # appended, never de-duplicated
        elif action == "MODIFIED":
            new_endpoints = self._build_endpoints(pod)
            with self.endpoints_lock:
                for index, endpoint in enumerate(self.endpoints):
                    if (
                        endpoint["namespace"] == pod["namespace"]
                        and endpoint["endpoint_name"] == pod["name"]
                        # Faithful to upstream: this compares endpoint records to a container
                        # name, so it never matches and MODIFIED leaves EndPoints stale.
                        and endpoint["container_name"] in new_endpoints
                    ):
                        self.endpoints[index] = endpoint
        elif action == "DELETED":
            with self.endpoints_lock:
                self.endpoints = [
                    e
                    for e in self.endpoints
                    if not (
                        e["namespace"] == pod["namespace"] and e["endpoint_name"] == pod["name"]
                    )
                ]

    def _build_endpoints(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        identities = sorted(f"{k}={v}" for k, v in pod["labels"].items())
        policies = [
            copy.deepcopy(policy)
            for policy in self.security_policies
            if all(pod["labels"].get(k) == v for k, v in policy["selector"]["matchLabels"].items())
        ]
        return [
            {
                "namespace": pod["namespace"],
                "endpoint_name": pod["name"],
                "container_name": container,
                "labels": dict(pod["labels"]),
                "identities": list(identities),
                "security_policies": policies,
                "apparmor_profiles": [f"kubearmor-{pod['namespace']}-{pod['name']}-{container}"],
                "posture": {"file": "audit", "process": "audit", "network": "audit"},
                "visibility": {
                    "file": True,
                    "process": True,
                    "network": True,
                    "capabilities": True,
                },
            }
            for container in pod["container_names"]
        ]

    def view(self) -> dict[str, dict[str, Any]]:
        """The daemon's belief about pods: ``K8sPods``, keyed ``namespace/name``.

        The records are slim (no uid, no resourceVersion), so kubesim compares them by key.
        """
        with self.k8s_pods_lock:
            return {f"{pod['namespace']}/{pod['name']}": pod for pod in self.k8s_pods}

    def sizes(self) -> dict[str, int]:
        return {"pods": len(self.k8s_pods), "endpoints": len(self.endpoints)}


def before_pr1553(api_client: client.ApiClient) -> KubeArmorDaemon:
    """KubeArmor v1.1.1 and earlier: every ADDED appends endpoints."""
    return KubeArmorDaemon(api_client, duplicate_added_as_modified=False)


def after_pr1553(api_client: client.ApiClient) -> KubeArmorDaemon:
    """KubeArmor after PR #1553 (commit 19acf50d): a duplicate ADDED is handled as MODIFIED."""
    return KubeArmorDaemon(api_client, duplicate_added_as_modified=True)
