"""Named mutants of what ``kubesim serve`` does as a cluster: the scheduler, the kubelet, the
workload and endpoints controllers and the garbage collector."""

KUBELET = "tests/unit/test_kubelet.py"
WORKLOADS = "tests/unit/test_workloads.py"
ENDPOINTS = "tests/unit/test_endpoints.py"

MUTANTS = [
    dict(
        name="scheduler-ignores-node-selector",
        path="kubesim/server/kubelet.py",
        old="any(labels.get(k) != v for k, v in selector.items())",
        new="False",
        tests=[f"{KUBELET}::test_a_pod_no_node_fits_says_why_once_and_is_bound_when_a_node_fits"],
        why="a pod is bound to a node its nodeSelector does not allow",
    ),
    dict(
        name="scheduler-packs-the-busiest-node",
        path="kubesim/server/kubelet.py",
        old="chosen = min(fits, key=lambda name: (load[name], name))",
        new="chosen = max(fits, key=lambda name: (load[name], name))",
        tests=[f"{KUBELET}::test_the_scheduler_spreads_pods_over_the_nodes_with_the_fewest"],
        why="new pods pile onto the node that already runs the most",
    ),
    dict(
        name="kubelet-starts-a-replaced-pod-early",
        path="kubesim/server/kubelet.py",
        old="if self._starting.get(key) != uid:",
        new="if key not in self._starting:",
        tests=[f"{KUBELET}::test_a_pod_deleted_or_replaced_before_it_starts_is_not_started_twice"],
        why="a pod created again under a deleted one's name starts on the old one's timer",
    ),
    dict(
        name="collector-ignores-other-owners",
        path="kubesim/server/workloads.py",
        old='if any(r.get("uid") != owner_uid and self._exists(r, key[0]) for r in refs):',
        new="if False:",
        tests=[
            f"{WORKLOADS}::test_deleting_an_owner_deletes_what_it_owns_unless_another_owner_remains"
        ],
        why="an object is deleted with one owner while another owner still exists",
    ),
    dict(
        name="replica-set-deletes-ready-pods-first",
        path="kubesim/server/workloads.py",
        old="                    is_ready(pod),\n",
        new="                    not is_ready(pod),\n",
        tests=[f"{WORKLOADS}::test_scaling_creates_and_deletes_pods_the_not_ready_first"],
        why="scaling down kills serving pods before ones that are not ready",
    ),
    dict(
        name="endpoints-list-unready-pods-as-ready",
        path="kubesim/server/endpoints.py",
        old="(ready if _ready(pod) else not_ready).append(address)",
        new="ready.append(address)",
        tests=[f"{ENDPOINTS}::test_readiness_relabelling_and_deletion_move_the_addresses"],
        why="a pod that is not ready receives traffic",
    ),
    dict(
        name="pods-deleted-without-grace",
        path="kubesim/server/apiserver.py",
        old="period = self._nodes.grace_period(current.obj, grace)",
        new="period = 0",
        tests=[f"{KUBELET}::test_a_running_pod_is_deleted_gracefully_by_its_kubelet"],
        why="a running pod vanishes at once instead of terminating through its grace period",
    ),
    dict(
        name="terminating-endpoints-not-marked",
        path="kubesim/server/endpoints.py",
        old='"terminating": terminating,',
        new='"terminating": False,',
        tests=[
            f"{ENDPOINTS}::test_a_terminating_ready_pod_keeps_serving_until_its_containers_stop"
        ],
        why="an endpoint whose pod is going away looks like any other",
    ),
]
