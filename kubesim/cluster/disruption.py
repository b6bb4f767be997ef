"""PodDisruptionBudgets: the disruption controller, which keeps their status.

``kubectl drain`` and any client's ``evict`` ``POST`` an Eviction to ``pods/{name}/eviction``;
the API server deletes the pod only if its PodDisruptionBudget allows one more disruption, as
the disruption controller last counted. What kubesim does of each
(pkg/controller/disruption and pkg/registry/core/pod/storage/eviction.go):

- **The disruption controller** (:class:`DisruptionController`, with the other controllers):
  for each budget, the pods its selector picks in its namespace (an empty selector picks
  every pod); ``expectedPods`` (with ``minAvailable`` as a number, the pods; with a percentage
  or ``maxUnavailable``, the sum of their controllers' ``spec.replicas``, pods with no
  controller left out), ``desiredHealthy`` (``minAvailable``, or expected minus
  ``maxUnavailable``, percentages rounded up), ``currentHealthy`` (ready pods not being
  deleted and not just evicted), ``disruptionsAllowed`` (their difference, at least 0, 0 with
  no expected pods), ``observedGeneration`` and the ``DisruptionAllowed`` condition
  (``SufficientPods``/``InsufficientPods``). Evicted pods stay in ``disruptedPods`` until they
  are gone, or for two minutes.
- **Eviction**: :mod:`kubesim.apiserver.eviction`, which reads the status written here.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import TYPE_CHECKING, Any

from kubesim.apiserver.eviction import PLURAL, budget_condition, selector_of
from kubesim.apiserver.objects import as_dict, as_int, controller_of, deleting, is_ready
from kubesim.apiserver.storage import Key

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]

# pkg/controller/disruption DeletionTimeout: an evicted pod not deleted by then counts again.
DELETION_TIMEOUT_SECONDS = 120


def _scaled(value: Any, total: int) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent, rounding up; None for a malformed value."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return math.ceil(int(value[:-1]) * total / 100)
    return None


class DisruptionController:
    """pkg/controller/disruption: keeps each PodDisruptionBudget's status (module docstring)."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.budgets = self.server.resource(PLURAL)

    def budgets_of(self, namespace: str, labels: Any) -> list[Key]:
        """The budgets whose selector picks a pod with ``labels`` in ``namespace``."""
        chosen = []
        for key, stored in self.server.storage.items(self.budgets, namespace=namespace):
            selector = selector_of(stored.obj, empty_matches_all=True)
            if selector is not None and selector.matches(as_dict(labels)):
                chosen.append(key)
        return chosen

    def sync(self, key: Key) -> None:
        budget = self.controllers.live(self.budgets, key)
        if budget is None:
            return
        server = self.server
        selector = selector_of(budget, empty_matches_all=True)
        pods = [
            stored.obj
            for _, stored in server.storage.items(self.controllers.pods, namespace=key[0])
            if selector is not None
            and selector.matches(as_dict(stored.obj["metadata"].get("labels")))
        ]
        spec = as_dict(budget.get("spec"))
        if spec.get("maxUnavailable") is not None:
            expected = self._expected_scale(key[0], pods)
            unavailable = _scaled(spec["maxUnavailable"], expected) or 0
            desired = max(0, expected - unavailable)
        elif isinstance(spec.get("minAvailable"), str):
            expected = self._expected_scale(key[0], pods)
            desired = _scaled(spec["minAvailable"], expected) or 0
        else:
            expected = len(pods)
            desired = as_int(spec.get("minAvailable"))
        old = as_dict(budget.get("status"))
        disrupted = self._still_disrupted(as_dict(old.get("disruptedPods")), pods)
        healthy = sum(
            1
            for pod in pods
            if is_ready(pod) and not deleting(pod) and pod["metadata"]["name"] not in disrupted
        )
        allowed = healthy - desired if expected > 0 and healthy > desired else 0
        generation = as_int(budget["metadata"].get("generation"), 1)
        status: JSON = {"observedGeneration": generation}
        if disrupted:
            status["disruptedPods"] = disrupted
        status.update(
            disruptionsAllowed=allowed,
            currentHealthy=healthy,
            desiredHealthy=desired,
            expectedPods=expected,
        )
        conditions = old.get("conditions") or []
        status["conditions"] = [
            budget_condition(allowed, generation, server.clock.timestamp(), conditions)
        ]
        self.controllers.write_status(self.budgets, budget, status)

    def _expected_scale(self, namespace: str, pods: list[JSON]) -> int:
        """The sum of ``spec.replicas`` of the pods' controllers (a ReplicaSet's Deployment
        when it has one), each counted once."""
        seen: set[tuple[str, str]] = set()
        total = 0
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                continue  # an unmanaged pod: the controller warns and leaves it out
            owner = self._controller(namespace, str(ref.get("kind")), str(ref.get("name")))
            if owner is None:
                continue
            if owner[0].kind == "ReplicaSet":
                above = controller_of(owner[1])
                if above is not None and above.get("kind") == "Deployment":
                    owner = (
                        self._controller(namespace, "Deployment", str(above.get("name"))) or owner
                    )
            identity = (owner[0].kind, str(owner[1]["metadata"]["name"]))
            if identity not in seen:
                seen.add(identity)
                total += as_int(as_dict(owner[1].get("spec")).get("replicas"), 1)
        return total

    def _controller(self, namespace: str, kind: str, name: str) -> tuple[ResourceType, JSON] | None:
        for resource in self.server.resources:
            if resource.kind == kind and resource.namespaced and resource.stored_as is None:
                stored = self.server.storage.get(resource, (namespace, name))
                if stored is not None:
                    return resource, stored.obj
        return None

    def _still_disrupted(self, disrupted: JSON, pods: list[JSON]) -> JSON:
        """``disruptedPods`` without the pods that are gone or whose eviction timed out."""
        now = self.server.clock.epoch + _dt.timedelta(seconds=self.server.clock.now())
        present = {pod["metadata"]["name"] for pod in pods}
        kept = {}
        for name, stamp in disrupted.items():
            try:
                when = _dt.datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(
                    tzinfo=_dt.timezone.utc
                )
            except ValueError:
                continue
            if name in present and (now - when).total_seconds() < DELETION_TIMEOUT_SECONDS:
                kept[name] = stamp
        return kept


__all__ = ["DisruptionController"]
