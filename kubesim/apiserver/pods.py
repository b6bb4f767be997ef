"""What the API server itself does with pods beyond storing them: binding and logs.

- ``pods/binding`` (:func:`binding_target`, :func:`bind`): the scheduler's write, which sets
  ``spec.nodeName`` and the ``PodScheduled`` condition (pkg/registry/core/pod/storage
  ``assignPod``);
- ``pods/log`` (:func:`container_log`): the API server checks the request and asks the node's
  kubelet, which only this server's kubelets (:class:`~kubesim.apiserver.extensions.Kubelets`)
  answer; with none, the node is not found. A followed log of a running container stays open
  until the container stops (kubesim.apiserver.log_follow).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st

if TYPE_CHECKING:
    from kubesim.apiserver.extensions import Kubelets

JSON = dict[str, Any]


def bind(pod: JSON, node: str, now: str) -> JSON:
    """The pod as a binding to ``node`` leaves it: ``spec.nodeName`` set and ``PodScheduled``
    true (``assignPod``). ``pod`` is the server's copy."""
    pod["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
    status = _dict(pod.get("status"))
    kept = [
        c
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type") != "PodScheduled"
    ]
    scheduled = {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    pod["status"] = {**status, "conditions": [*kept, scheduled]}
    return pod


def container_log(
    pod: JSON, container: str | None, previous: bool, kubelets: Kubelets | None
) -> bytes:
    """GET pods/{name}/log: what the container printed, which is nothing (there is no process;
    a followed log of a running container then waits for more: kubesim.apiserver.log_follow).
    The refusals are the API server's and the kubelet's (pkg/registry/core/pod/strategy.go
    LogLocation, and kuberuntime's messages), all 400 Bad Request."""
    name = pod["metadata"]["name"]
    spec, status = _dict(pod.get("spec")), _dict(pod.get("status"))
    containers = [str(_dict(c).get("name")) for c in spec.get("containers") or []]
    init = [str(_dict(c).get("name")) for c in spec.get("initContainers") or []]
    if not container:
        if len(containers) != 1:
            message = (
                f"a container name must be specified for pod {name}, "
                f"choose one of: [{' '.join(containers)}]"
            )
            if init:
                message += f" or one of the init containers: [{' '.join(init)}]"
            raise st.bad_request(message)
        container = containers[0]
    if container not in containers and container not in init:
        raise st.bad_request(f"container {container} is not valid for pod {name}")
    node = spec.get("nodeName")
    if not node:
        raise st.bad_request(f"pod {name} does not have a host assigned")
    if kubelets is None or node not in kubelets.live_nodes():
        # No kubelet of this server runs there: the API server finds no node to ask.
        raise st.not_found("nodes", "", str(node))
    statuses = status.get(
        "containerStatuses" if container in containers else "initContainerStatuses"
    )
    state = next(
        (_dict(s).get("state") for s in statuses or [] if _dict(s).get("name") == container),
        None,
    )
    if not state:
        raise st.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
        )
    if previous:
        raise st.bad_request(
            f'previous terminated container "{container}" in pod "{name}" not found'
        )
    return b""


def log_container(pod: JSON, container: str | None) -> str:
    """The container a log request is about: the one it names, else the pod's only one (call
    after :func:`container_log` accepted the request)."""
    if container:
        return container
    containers = _dict(pod.get("spec")).get("containers") or [{}]
    return str(_dict(containers[0]).get("name"))


def binding_target(binding: Any, pod_name: str) -> str:
    """The node a ``Binding`` body names; a ``Status`` error for anything else."""
    if not isinstance(binding, dict):
        raise st.bad_request("the body of the request must be a Binding object")
    meta = _dict(binding.get("metadata"))
    if meta.get("name") not in (None, "", pod_name):
        raise st.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({pod_name})"
        )
    target = binding.get("target")
    if not isinstance(target, dict) or not target.get("name"):
        raise st.invalid(
            "Binding",
            "",
            pod_name,
            [{"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"}],
        )
    if target.get("kind") not in (None, "", "Node"):
        raise st.bad_request(f"cannot bind to {target.get('kind')!r}: a pod binds to a Node")
    return str(target["name"])


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}
