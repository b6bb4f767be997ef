"""The DefaultTolerationSeconds admission plugin: every pod tolerates an unready or unreachable
node for five minutes.

kube-apiserver enables this plugin by default (plugin/pkg/admission/defaulttolerationseconds):
on each create and update of a pod, unless the pod already tolerates the taint (a toleration
with that key or no key, and the ``NoExecute`` effect or none), it appends::

    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
     "effect": "NoExecute", "tolerationSeconds": 300}

and the same for ``node.kubernetes.io/unreachable``. So on a cluster ``spec.tolerations`` of a
pod is never empty, and client code written against one appends to it without checking (kr8s'
``Pod.tolerate``). kubesim runs the plugin when the server is built with
``default_tolerations=True`` (``kubesim serve`` does); simulations leave it off, so the bytes of
the pods they write stay what the scenario wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType

JSON = dict[str, Any]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
# The plugin's --default-not-ready-toleration-seconds and --default-unreachable-toleration-
# seconds, both 300 unless kube-apiserver is started otherwise.
DEFAULT_TOLERATION_SECONDS = 300


def admit_pod(pod: JSON) -> None:
    """Append the two default tolerations the pod lacks. ``pod["spec"]`` must be the server's
    own copy (the pod defaults make one); the tolerations list is replaced, never changed in
    place, as it may still be the caller's."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    tolerations = spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        return  # validation's to refuse, not admission's to repair
    present = [t for t in tolerations or [] if isinstance(t, dict)]
    missing = [key for key in (NOT_READY, UNREACHABLE) if not _tolerates(present, key)]
    if missing:
        spec["tolerations"] = [
            *(tolerations or []),
            *(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
                for key in missing
            ),
        ]


def _tolerates(tolerations: list[JSON], key: str) -> bool:
    return any(
        t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
        for t in tolerations
    )


def tolerates(toleration: JSON, taint: JSON) -> bool:
    """``toleration`` tolerates ``taint`` (core/v1 ``Toleration.ToleratesTaint``): the same
    effect unless it names none, the same key unless it names none, and with ``Equal`` (the
    default operator) the same value; ``Exists`` takes any value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(
    pod: JSON, node: JSON, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")
) -> JSON | None:
    """The first taint of ``node`` with one of ``effects`` that none of ``pod``'s tolerations
    tolerates (the scheduler's TaintToleration filter), or None."""
    spec = pod.get("spec")
    tolerations = (spec.get("tolerations") if isinstance(spec, dict) else None) or []
    node_spec = node.get("spec")
    for taint in (node_spec.get("taints") if isinstance(node_spec, dict) else None) or []:
        if not isinstance(taint, dict) or taint.get("effect") not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations if isinstance(t, dict)):
            return taint
    return None


class DefaultTolerationSeconds:
    """The DefaultTolerationSeconds plugin in a server's admission chain: pods, on create and
    on update (not on their subresources)."""

    def admit_create(
        self, resource: ResourceType, obj: JSON, namespace: str, sent_name: str
    ) -> None:
        if resource.group == "" and resource.kind == "Pod":
            admit_pod(obj)

    def admit_update(
        self, resource: ResourceType, old: JSON, obj: JSON, subresource: str | None
    ) -> None:
        if resource.group == "" and resource.kind == "Pod" and subresource is None:
            admit_pod(obj)
