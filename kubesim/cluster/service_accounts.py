"""The ServiceAccount controller: every namespace has a ``default`` account.

kube-controller-manager's serviceaccounts-controller creates ``default`` in each new namespace
and creates it again when it is deleted (pkg/controller/serviceaccount/
serviceaccounts_controller.go); the admission plugin that names it in pods is
:mod:`kubesim.admission.service_accounts`. kubesim runs it right after the write that calls
for it, under the same lock, as the next write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesim.admission.service_accounts import DEFAULT_SERVICE_ACCOUNT
from kubesim.apiserver.storage import ADDED, DELETED, Event
from kubesim.cluster.retries import write_or_retry

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer


def sync(server: APIServer, event: Event) -> None:
    """React to one committed write: a new namespace, or a deleted ``default`` account."""
    resource = event.resource
    if resource is server.namespace_resource:
        if event.type == ADDED:
            _sync(server, event.key[1])
    elif (
        event.type == DELETED
        and resource.group == ""
        and resource.plural == "serviceaccounts"
        and event.key[1] == DEFAULT_SERVICE_ACCOUNT
    ):
        _sync(server, event.key[0])


def _sync(server: APIServer, namespace: str) -> None:
    # A refused create (a quota on ServiceAccounts) is tried again later, not the client's error.
    key = (namespace, DEFAULT_SERVICE_ACCOUNT)
    write_or_retry(server, "serviceaccount", key, lambda: ensure_default(server, namespace))


def ensure_default(server: APIServer, namespace: str) -> None:
    """Create ``default`` in ``namespace`` unless it exists or the namespace is going away
    (the controller skips terminating namespaces, whose content the namespace controller is
    deleting)."""
    stored = server.storage.get(server.namespace_resource, ("", namespace))
    if stored is None or stored.obj["metadata"].get("deletionTimestamp"):
        return
    accounts = server.lookup("", "v1", "serviceaccounts")
    if accounts is None or server.storage.get(accounts, (namespace, DEFAULT_SERVICE_ACCOUNT)):
        return
    # The controller's write, not the client's whose request caused it: no field manager.
    manager, server.field_manager = server.field_manager, None
    try:
        server.registry.create(accounts, {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT}}, namespace)
    finally:
        server.field_manager = manager
