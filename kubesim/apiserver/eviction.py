"""The eviction subresource: ``POST pods/{name}/eviction``, as the API server answers it.

``kubectl drain`` and any client's ``evict`` ``POST`` an Eviction; the API server deletes the
pod only if its PodDisruptionBudget allows one more disruption, as the disruption controller
last counted (its ``status``, kept by :mod:`kubesim.cluster.disruption` when the cluster runs
controllers; pkg/registry/core/pod/storage/eviction.go).

A pod that is not running (pending or finished) or already being deleted, or that no budget
covers, is deleted at once; two budgets are a 500; a budget its controller has not seen yet
(``observedGeneration`` behind) is 429 with ``retryAfterSeconds: 10``; no disruption allowed is
429 ``Cannot evict pod as it would violate the pod's disruption budget.`` with a
``DisruptionBudget`` cause; a pod that is not ready is deleted without spending a disruption
when the budget is already met (or always, with ``unhealthyPodEvictionPolicy: AlwaysAllow``).
Otherwise the budget's status is updated first (one disruption fewer, the pod in
``disruptedPods``) and the pod deleted with the Eviction's ``deleteOptions`` (a grace period,
preconditions, ``dryRun``). The answer is a 201 ``Success`` Status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st
from kubesim.apiserver.objects import as_dict, as_int, deleting, is_ready
from kubesim.apiserver.scale import label_selector_string
from kubesim.apiserver.selectors import LabelSelector, SelectorError

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

GROUP = "policy"
PLURAL = "poddisruptionbudgets"
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


def budget_condition(allowed: int, observed: int, now: str, old: list[Any]) -> JSON:
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
    server.registry.delete(
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
        status["conditions"] = [
            budget_condition(0, generation, now, status.get("conditions") or [])
        ]
    name = budget["metadata"]["name"]
    body = {"metadata": {"name": name}, "status": status}
    server.registry.update(
        server.resource(PLURAL), budget["metadata"]["namespace"], name, body, "status"
    )
