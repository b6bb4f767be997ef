"""The root CA certificate publisher: a ``kube-root-ca.crt`` ConfigMap in every namespace.

On a cluster, kube-controller-manager's root-ca-cert-publisher
(pkg/controller/certificates/rootcacertpublisher/publisher.go) writes into each namespace a
ConfigMap ``kube-root-ca.crt`` whose ``ca.crt`` is the CA bundle that verifies the API server,
with a ``kubernetes.io/description`` annotation. It creates the ConfigMap when a namespace is
added, creates it again when it is deleted, and when a client changes the data or removes the
annotation, sets the data back to the bundle alone and the annotation back (labels and other
annotations are left as the client made them). A namespace being deleted gets nothing: the
create would be refused there, and the controller does not try. The conformance test
"ServiceAccounts should guarantee kube-root-ca.crt exist in any namespace" checks all three.

kubesim runs it when the server is built with ``root_ca_bundle`` (``kubesim serve`` passes its
CA, or with plain HTTP a placeholder: :data:`PLAIN_HTTP_PLACEHOLDER`): right after the write
that calls for it, under the same lock, as the next write, as the ServiceAccount controller
does (:mod:`kubesim.admission.service_accounts`); a write the server refuses (a quota's, say) is
tried again later (:mod:`kubesim.cluster.retries`). Simulations leave it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesim.apiserver.storage import ADDED, DELETED, Event
from kubesim.cluster.retries import write_or_retry

if TYPE_CHECKING:
    from kubesim.apiserver.server import APIServer

CONFIG_MAP_NAME = "kube-root-ca.crt"
DATA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)

# What `kubesim serve` publishes when it serves plain HTTP and so has no CA: a self-signed CA
# certificate made once for this purpose, whose private key was thrown away. It verifies
# nothing, which is all a bundle can do for a server without TLS; a client that reads the
# ConfigMap finds a well-formed PEM certificate, as on a cluster.
PLAIN_HTTP_PLACEHOLDER = """\
-----BEGIN CERTIFICATE-----
MIIBqDCCAU6gAwIBAgIBATAKBggqhkjOPQQDAjBSMRAwDgYDVQQKDAdrdWJlc2lt
MT4wPAYDVQQDDDVrdWJlc2ltIHBsYWNlaG9sZGVyIENBIChwbGFpbiBIVFRQOiB2
ZXJpZmllcyBub3RoaW5nKTAgFw0yNjAxMDEwMDAwMDBaGA8yMTI1MTIwODAwMDAw
MFowUjEQMA4GA1UECgwHa3ViZXNpbTE+MDwGA1UEAww1a3ViZXNpbSBwbGFjZWhv
bGRlciBDQSAocGxhaW4gSFRUUDogdmVyaWZpZXMgbm90aGluZykwWTATBgcqhkjO
PQIBBggqhkjOPQMBBwNCAAQpn33Q1thlg3X3a3k40J6U3YkbU49jJhknc8eHZNMg
q0purIgRb0UOgswYDZ1SJS8hb0PQVe/BIst+18hOB2T2oxMwETAPBgNVHRMBAf8E
BTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIEsccGj+zZ72UISwQF2K6q+J+N6wa8r5
4e7QycjBtH1aAiEAoef9jMMpjyoatrKNSeazq+xC2iijH3tTSGE6gYXCMLU=
-----END CERTIFICATE-----
"""


def sync(server: APIServer, event: Event, bundle: str) -> None:
    """React to one committed write: a namespace added (or updated while ``Active``), or a
    ``kube-root-ca.crt`` ConfigMap deleted or changed."""
    resource = event.resource
    if resource is server.namespace_resource:
        if event.type == DELETED:
            return
        status = event.new.obj.get("status")
        phase = status.get("phase") if isinstance(status, dict) else None
        if event.type == ADDED or phase == "Active":
            _sync(server, event.key[1], bundle)
    elif (
        event.key[1] == CONFIG_MAP_NAME and resource.group == "" and resource.plural == "configmaps"
    ):
        _sync(server, event.key[0], bundle)


def _sync(server: APIServer, namespace: str, bundle: str) -> None:
    key = (namespace, CONFIG_MAP_NAME)
    write_or_retry(server, "root-ca-cert-publisher", key, lambda: ensure(server, namespace, bundle))


def ensure(server: APIServer, namespace: str, bundle: str) -> None:
    """Create ``kube-root-ca.crt`` in ``namespace``, or put its bundle and annotation back."""
    stored = server.storage.get(server.namespace_resource, ("", namespace))
    if stored is None or stored.obj["metadata"].get("deletionTimestamp"):
        return  # the namespace controller is deleting its content; the create would be refused
    config_maps = server.lookup("", "v1", "configmaps")
    if config_maps is None:
        return
    data = {DATA_KEY: bundle}
    current = server.storage.get(config_maps, (namespace, CONFIG_MAP_NAME))
    # The controller's writes, not those of the client whose request caused them.
    manager, server.field_manager = server.field_manager, None
    try:
        if current is None:
            body = {
                "metadata": {
                    "name": CONFIG_MAP_NAME,
                    "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
                },
                "data": data,
            }
            server.registry.create(config_maps, body, namespace)
            return
        obj = current.obj
        annotations = obj["metadata"].get("annotations") or {}
        if obj.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        changed = dict(obj)
        changed["metadata"] = {
            **obj["metadata"],
            "annotations": {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION},
        }
        changed["data"] = data
        server.registry.update(config_maps, namespace, CONFIG_MAP_NAME, changed, None)
    finally:
        server.field_manager = manager
