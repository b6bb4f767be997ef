"""The extension points of the API server core: how a cluster plugs in without the core naming it.

The core (this package) serves the API: storage, resourceVersions, watches, selectors,
patches, validation, faults. What a cluster runs around it, admission plugins, controllers,
kubelets, aggregated APIs, lives in :mod:`kubesim.admission` and :mod:`kubesim.cluster`, which
import the core and plug into it through the interfaces written down here; the core never
imports them. :class:`kubesim.cluster.Cluster` assembles the whole.

The contracts, all called with the server's lock held:

- :class:`AdmissionPlugin`: a mutating or validating admission plugin, in
  :attr:`Registry.admission <kubesim.apiserver.registry.Registry.admission>`, called in order
  on every create and update of a namespaced object, after defaulting and before validation of
  the result. It may change the object in place or raise a
  :class:`~kubesim.apiserver.status.StatusError` (a 403 Forbidden, as the real plugins do).
- an after-commit hook, in :attr:`Registry.after_commit
  <kubesim.apiserver.registry.Registry.after_commit>`: called with every committed
  :class:`~kubesim.apiserver.storage.Event` once the watch cache has it, as an informer's
  handler would be (without the delay). It may write through the registry; those writes run
  their own hooks before it returns.
- :class:`Kubelets`: the node agents the server can reach (:attr:`Registry.kubelets
  <kubesim.apiserver.registry.Registry.kubelets>`): their pods are deleted gracefully and
  their logs can be read.
- :class:`Component`: something installed into a new server, :meth:`Component.install` before
  the first write (the default namespaces) and :meth:`Component.start` after it, before the
  watch cache's bookmark timer starts.
- :data:`AggregatedAPI`: the answer of an API group an aggregated server serves read-only
  (``metrics.k8s.io``), in :attr:`APIServer.aggregated_apis
  <kubesim.apiserver.server.APIServer.aggregated_apis>`, keyed by group.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.selectors import FieldSelector, LabelSelector
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]


class AdmissionPlugin(Protocol):
    """One admission plugin (k8s.io/apiserver/pkg/admission ``MutationInterface`` and
    ``ValidationInterface`` in one)."""

    def admit_create(
        self, resource: ResourceType, obj: JSON, namespace: str, sent_name: str
    ) -> None:
        """Admit a create of ``obj`` in ``namespace``; ``sent_name`` is the name the request
        sent (the ``generateName`` prefix when the server makes the name), which refusals
        quote."""

    def admit_update(
        self, resource: ResourceType, old: JSON, obj: JSON, subresource: str | None
    ) -> None:
        """Admit an update of ``old`` to ``obj`` (``subresource``: ``"status"`` and so on)."""


class Kubelets(Protocol):
    """The kubelets of the nodes a cluster runs."""

    pods: ResourceType

    def live_nodes(self) -> Collection[str]:
        """The names of the nodes whose kubelet runs and answers."""

    def grace_period(self, pod: JSON, requested: int | None) -> int:
        """The grace period a delete of ``pod`` gets (``requested``: DeleteOptions'), 0 to
        delete it at once."""

    def mark_terminating(self, pod: JSON, period: int) -> JSON | None:
        """``pod`` marked for deletion in ``period`` seconds, or None when it is already
        terminating as soon or sooner."""


class Component(Protocol):
    """A part of a cluster installed into a new :class:`~kubesim.apiserver.server.APIServer`."""

    def install(self, server: APIServer) -> None:
        """Called once the built-in resources are registered, before the first write."""

    def start(self, server: APIServer) -> None:
        """Called once the default namespaces exist."""


# (server, resource, namespace, name or None for a list, label selector, field selector) ->
# the object or list to answer.
AggregatedAPI = Callable[
    ["APIServer", "ResourceType", "str | None", "str | None", "LabelSelector", "FieldSelector"],
    JSON,
]

__all__ = ["AdmissionPlugin", "AggregatedAPI", "Component", "Kubelets"]
