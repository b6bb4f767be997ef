"""The ServiceAccount controller: every namespace has a ``default`` ServiceAccount.

On a cluster, kube-controller-manager's serviceaccounts-controller creates ``default`` in each
new namespace and creates it again when it is deleted (pkg/controller/serviceaccount/
serviceaccounts_controller.go); the ServiceAccount admission plugin then names it in every pod
that names none. Tests written for a real cluster wait for it before they create pods.

kubesim runs it when the server is built with ``service_accounts=True`` (``kubesim serve``
does): right after the write that calls for it, under the same lock, as the next write, so a
client that lists ServiceAccounts after creating a namespace finds ``default``, and a run stays
a function of its seed. Simulations leave it off by default: each ServiceAccount is a write in
the trace, and stores under test rarely watch them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesim.server.storage import ADDED, DELETED, Event

if TYPE_CHECKING:
    from kubesim.server.apiserver import APIServer

DEFAULT_SERVICE_ACCOUNT = "default"


def sync(server: APIServer, event: Event) -> None:
    """React to one committed write: a new namespace, or a deleted ``default`` account."""
    resource = event.resource
    if resource is server.namespace_resource:
        if event.type == ADDED:
            ensure_default(server, event.key[1])
    elif (
        event.type == DELETED
        and resource.group == ""
        and resource.plural == "serviceaccounts"
        and event.key[1] == DEFAULT_SERVICE_ACCOUNT
    ):
        ensure_default(server, event.key[0])


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
        server._create(accounts, {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT}}, namespace)
    finally:
        server.field_manager = manager
