"""The ClusterRole aggregation controller: an aggregated ClusterRole's rules are the union of
the rules of the ClusterRoles its ``aggregationRule`` selects.

``admin``, ``edit`` and ``view`` have no rules of their own: kube-controller-manager
(pkg/controller/clusterroleaggregation) gathers them from every ClusterRole labelled
``rbac.authorization.k8s.io/aggregate-to-admin`` (and so on), which is how a CRD's operator
gives namespace editors access to its kind. What kubesim's controller does, as that one does:

- any ClusterRole written or deleted queues every ClusterRole that has an ``aggregationRule``;
- for each of its ``clusterRoleSelectors`` in turn, the ClusterRoles it selects, by name
  (the role itself left out), contribute each rule not already gathered (rules compared
  whole, order kept);
- when the gathered rules differ from the role's, they replace them. None gathered leaves the
  role as it is: the real controller writes them with a server-side apply, and an empty list
  is left out of that patch.

A selector that cannot be parsed selects nothing (validation refuses one on create).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.objects import as_dict
from kubesim.apiserver.scale import label_selector_string
from kubesim.apiserver.selectors import LabelSelector, SelectorError
from kubesim.apiserver.storage import Key

if TYPE_CHECKING:
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]


class ClusterRoleAggregation:
    """The controller, run from the controllers' queue (its ``clusterrole`` keys)."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.roles = self.server.resource("clusterroles")

    def aggregating(self) -> list[Key]:
        """The keys of the ClusterRoles that have an aggregation rule: what to queue when any
        ClusterRole changes."""
        return [
            key
            for key, stored in self.server.storage.items(self.roles)
            if stored.obj.get("aggregationRule")
        ]

    def sync(self, key: Key) -> None:
        role = self.controllers.live(self.roles, key)
        if role is None or not isinstance(role.get("aggregationRule"), dict):
            return
        rules = self.gathered(role)
        if not rules or rules == role.get("rules"):
            return
        body = deep_copy(role)
        body["rules"] = rules
        self.controllers.write(self.server.registry.update, self.roles, None, key[1], body, None)

    def gathered(self, role: JSON) -> list[JSON]:
        """The rules of the ClusterRoles ``role``'s selectors pick, each once, in order."""
        name = role["metadata"]["name"]
        everything = sorted(
            (stored.obj for _, stored in self.server.storage.items(self.roles)),
            key=lambda obj: str(obj["metadata"]["name"]),
        )
        rules: list[JSON] = []
        for selector in as_dict(role.get("aggregationRule")).get("clusterRoleSelectors") or []:
            if not isinstance(selector, dict):
                continue
            try:
                picks = LabelSelector.parse(label_selector_string(selector))
            except SelectorError:
                continue
            for source in everything:
                if source["metadata"]["name"] == name:
                    continue
                if not picks.matches(source["metadata"].get("labels")):
                    continue
                for rule in source.get("rules") or []:
                    if rule not in rules:
                        rules.append(rule)
        return rules


__all__ = ["ClusterRoleAggregation"]
