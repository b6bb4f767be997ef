"""PodDisruptionBudgets: the disruption controller's status, and the eviction subresource.

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
- **Eviction** (:func:`evict`): a pod that is not running (pending or finished) or already being
  deleted, or that no budget covers, is deleted at once; two budgets are a 500; a budget its
  controller has not seen yet (``observedGeneration`` behind) is 429 with
  ``retryAfterSeconds: 10``; no disruption allowed is 429 ``Cannot evict pod as it would
  violate the pod's disruption budget.`` with a ``DisruptionBudget`` cause; a pod that is not
  ready is deleted without spending a disruption when the budget is already met (or always,
  with ``unhealthyPodEvictionPolicy: AlwaysAllow``). Otherwise the budget's status is updated
  first (one disruption fewer, the pod in ``disruptedPods``) and the pod deleted with the
  Eviction's ``deleteOptions`` (a grace period, preconditions, ``dryRun``). The answer is a 201
  ``Success`` Status.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import TYPE_CHECKING, Any

from kubesim.server import status as st
from kubesim.server.objects import as_dict, as_int, controller_of, deleting, is_ready
from kubesim.server.scale import label_selector_string
from kubesim.server.selectors import LabelSelector, SelectorError
from kubesim.server.storage import Key

if TYPE_CHECKING:
    from kubesim.server.apiserver import APIServer
    from kubesim.server.resources import ResourceType
    from kubesim.server.workloads import Controllers

JSON = dict[str, Any]

GROUP = "policy"
PLURAL = "poddisruptionbudgets"
# pkg/controller/disruption DeletionTimeout: an evicted pod not deleted by then counts again.
DELETION_TIMEOUT_SECONDS = 120
_TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."
# pkg/registry/core/pod/storage/eviction.go MaxDisruptedPodSize.
MAX_DISRUPTED_PODS = 2000


def selector_of(budget: JSON, *, empty_matches_all: bool) -> LabelSelector | None:
    """The budget's selector; None when it picks no pod (absent, unparsable, or empty where
    empty means nothing: eviction refuses to let an empty selector cover a pod)."""
    selector = as_dict(budget.get("spec")).get("selector")
    if not isinstance(selector, dict):
        return None
    text = label_selector_string(selector)
    if not text and not empty_matches_all:
        return None
    try:
        return LabelSelector.parse(text)
    except SelectorError:
        return None


def _scaled(value: Any, total: int) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent, rounding up; None for a malformed value."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return math.ceil(int(value[:-1]) * total / 100)
    return None


def _condition(allowed: int, observed: int, now: str, old: list[Any]) -> JSON:
    status, reason = ("True", "SufficientPods") if allowed > 0 else ("False", "InsufficientPods")
    previous = next(
        (c for c in old if isinstance(c, dict) and c.get("type") == "DisruptionAllowed"), None
    )
    since = now
    if previous is not None and previous.get("status") == status:
        since = str(previous.get("lastTransitionTime") or now)
    return {
        "type": "DisruptionAllowed",
        "status": status,
        "observedGeneration": observed,
        "lastTransitionTime": since,
        "reason": reason,
        "message": "",
    }


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
            _condition(allowed, generation, server.clock.timestamp(), conditions)
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


def _too_many(cause: str, retry_after: int) -> st.StatusError:
    details: JSON = {"retryAfterSeconds": retry_after} if retry_after else {}
    details["causes"] = [{"reason": "DisruptionBudget", "message": cause}]
    return st.StatusError(st.failure(429, "TooManyRequests", _TOO_MANY, details))


def evict(
    server: APIServer,
    pods: ResourceType,
    namespace: str,
    name: str,
    eviction: Any,
    *,
    dry_run: bool,
) -> None:
    """Evict pod ``name`` as the eviction subresource does (module docstring); raises the
    Status the server refuses with. The server's lock must be held."""
    if not isinstance(eviction, dict):
        raise st.bad_request("the body of an eviction must be an Eviction object")
    if as_dict(eviction.get("metadata")).get("name") not in (None, "", name):
        raise st.bad_request("name in URL does not match name in Eviction object")
    options = as_dict(eviction.get("deleteOptions"))
    dry_run = dry_run or "All" in (options.get("dryRun") or [])
    grace = options.get("gracePeriodSeconds")
    stored = server.storage.get(pods, (namespace, name))
    if stored is None:
        raise st.not_found(pods.plural, pods.group, name)
    budget = _budget_to_spend(server, stored.obj)
    if budget is not None and not dry_run:
        _spend(server, budget, name)
    server._delete(
        pods,
        namespace,
        name,
        as_dict(options.get("preconditions")),
        dry_run=dry_run,
        grace=grace if isinstance(grace, int) and not isinstance(grace, bool) else None,
    )


def _budget_to_spend(server: APIServer, pod: JSON) -> JSON | None:
    """The budget the eviction of ``pod`` spends a disruption of, None when it spends none;
    raises when the budget allows none."""
    if as_dict(pod.get("status")).get("phase") in ("Succeeded", "Failed", "Pending"):
        return None  # canIgnorePDB: it runs nothing a budget protects
    if deleting(pod):
        return None
    labels = as_dict(pod["metadata"].get("labels"))
    covering = [
        candidate.obj
        for _, candidate in server.storage.items(
            server.resource(PLURAL), namespace=pod["metadata"]["namespace"]
        )
        if (selector := selector_of(candidate.obj, empty_matches_all=False)) is not None
        and selector.matches(labels)
    ]
    if not covering:
        return None
    if len(covering) > 1:
        raise st.internal_error(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support."
        )
    budget = covering[0]
    spec, status = as_dict(budget.get("spec")), as_dict(budget.get("status"))
    if not is_ready(pod):
        if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return None
        desired = as_int(status.get("desiredHealthy"))
        if desired > 0 and as_int(status.get("currentHealthy")) >= desired:
            return None  # the budget is met without it: an unhealthy pod spends nothing
    name = str(budget["metadata"]["name"])
    if as_int(status.get("observedGeneration")) < as_int(budget["metadata"].get("generation"), 1):
        raise _too_many(f"The disruption budget {name} is still being processed by the server.", 10)
    allowed = as_int(status.get("disruptionsAllowed"))
    if allowed < 0:
        raise st.forbidden(PLURAL[:-1], GROUP, name, "pdb disruptions allowed is negative")
    if len(as_dict(status.get("disruptedPods"))) > MAX_DISRUPTED_PODS:
        raise st.forbidden(
            PLURAL[:-1],
            GROUP,
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        raise _too_many(
            f"The disruption budget {name} needs {as_int(status.get('desiredHealthy'))} "
            f"healthy pods and has {as_int(status.get('currentHealthy'))} currently",
            0,
        )
    return budget


def _spend(server: APIServer, budget: JSON, pod_name: str) -> None:
    """One disruption fewer, ``pod_name`` in ``disruptedPods``: written before the delete, so
    the disruption controller does not count the pod as healthy meanwhile."""
    status = dict(as_dict(budget.get("status")))
    allowed = as_int(status.get("disruptionsAllowed")) - 1
    now = server.clock.timestamp()
    status["disruptionsAllowed"] = allowed
    status["disruptedPods"] = {**as_dict(status.get("disruptedPods")), pod_name: now}
    if allowed == 0:
        generation = as_int(budget["metadata"].get("generation"), 1)
        status["conditions"] = [_condition(0, generation, now, status.get("conditions") or [])]
    name = budget["metadata"]["name"]
    body = {"metadata": {"name": name}, "status": status}
    server._update(server.resource(PLURAL), budget["metadata"]["namespace"], name, body, "status")


__all__ = ["DisruptionController", "evict", "selector_of"]
