"""The root CA certificate publisher (``Cluster(root_ca_bundle=...)``, on in ``kubesim
serve``): a ``kube-root-ca.crt`` ConfigMap in every namespace, made again when deleted, its
bundle and description put back when changed, nothing for a namespace being deleted; off by
default. The three checks of the conformance test "ServiceAccounts should guarantee
kube-root-ca.crt exist in any namespace" are the first three tests here."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.apiserver.server import DEFAULT_NAMESPACES
from kubesim.cluster import Cluster, root_ca

BUNDLE = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
NAME = "kube-root-ca.crt"


def published(server: APIServer, namespace: str) -> dict:
    return server.get("configmaps", NAME, namespace=namespace)


def test_every_namespace_has_the_bundle_with_its_description() -> None:
    server = Cluster(seed=1, root_ca_bundle=BUNDLE)
    server.create("namespaces", {"metadata": {"name": "team-a"}})
    for namespace in (*DEFAULT_NAMESPACES, "team-a"):
        config_map = published(server, namespace)
        assert config_map["data"] == {"ca.crt": BUNDLE}
        assert config_map["metadata"]["annotations"] == {
            "kubernetes.io/description": root_ca.DESCRIPTION
        }
        assert "managedFields" not in config_map["metadata"]  # the controller's, not a client's
    # Written right after the namespace: the next resourceVersion, nothing in between.
    namespace = server.get("namespaces", "team-a")
    assert int(published(server, "team-a")["metadata"]["resourceVersion"]) == (
        int(namespace["metadata"]["resourceVersion"]) + 1
    )


def test_a_deleted_config_map_is_made_again() -> None:
    server = Cluster(seed=1, root_ca_bundle=BUNDLE)
    before = published(server, "default")
    server.delete("configmaps", NAME, namespace="default")
    after = published(server, "default")
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert after["data"] == {"ca.crt": BUNDLE}


def test_a_changed_bundle_or_description_is_put_back_and_other_changes_stay() -> None:
    server = Cluster(seed=1, root_ca_bundle=BUNDLE)
    changed = published(server, "default")
    changed["data"] = {"ca.crt": "not a CA", "extra": "dropped with the wrong bundle"}
    changed["metadata"]["labels"] = {"team": "a"}
    changed["metadata"]["annotations"] = {"note": "kept"}
    answered = server.update("configmaps", changed, namespace="default")
    assert answered["data"]["ca.crt"] == "not a CA"  # the client's write, as it was stored
    restored = published(server, "default")
    # The controller sets the data to the bundle alone and adds its annotation back.
    assert restored["data"] == {"ca.crt": BUNDLE}
    assert restored["metadata"]["annotations"] == {
        "note": "kept",
        "kubernetes.io/description": root_ca.DESCRIPTION,
    }
    assert restored["metadata"]["labels"] == {"team": "a"}
    assert int(restored["metadata"]["resourceVersion"]) == (
        int(answered["metadata"]["resourceVersion"]) + 1
    )
    # A change that leaves the bundle and the description alone is not touched.
    relabelled = dict(restored, metadata={**restored["metadata"], "labels": {"team": "b"}})
    stored = server.update("configmaps", relabelled, namespace="default")
    assert (
        published(server, "default")["metadata"]["resourceVersion"]
        == (stored["metadata"]["resourceVersion"])
    )


def test_an_empty_description_counts_as_missing() -> None:
    server = Cluster(seed=1, root_ca_bundle=BUNDLE)
    server.patch(
        "configmaps",
        NAME,
        {"metadata": {"annotations": {"kubernetes.io/description": ""}}},
        namespace="default",
    )
    annotations = published(server, "default")["metadata"]["annotations"]
    assert annotations == {"kubernetes.io/description": root_ca.DESCRIPTION}


def test_a_namespace_being_deleted_gets_no_new_config_map() -> None:
    server = Cluster(seed=1, root_ca_bundle=BUNDLE)
    server.create("namespaces", {"metadata": {"name": "gone"}})
    server.delete("namespaces", "gone")
    server.advance(10)  # the namespace controller's passes delete the content, then the namespace
    with pytest.raises(st.StatusError) as missing:
        server.get("namespaces", "gone")
    assert missing.value.code == 404
    assert server.list("configmaps", namespace="gone") == []
    # Not even tried (the create would be refused, and retried): the namespace was going away.
    assert not [r for r in server.trace.recent if r[0] == "controller-refused"]


def test_the_publisher_is_off_by_default_and_a_dry_run_namespace_gets_nothing() -> None:
    assert APIServer(seed=1).list("configmaps") == []
    server = Cluster(seed=1, root_ca_bundle=BUNDLE)
    server.create("namespaces", {"metadata": {"name": "maybe"}}, dry_run=True)
    assert server.list("configmaps", namespace="maybe") == []


@pytest.mark.parametrize("bundle", ["", "MIIB", b"-----BEGIN CERTIFICATE-----\n", 42])
def test_a_bundle_that_is_not_pem_text_is_refused_by_name(bundle: object) -> None:
    with pytest.raises(ValueError, match=r"root_ca_bundle must be None or PEM text"):
        Cluster(seed=1, root_ca_bundle=bundle)  # type: ignore[arg-type]


def test_the_plain_http_placeholder_is_a_ca_certificate() -> None:
    x509 = pytest.importorskip("cryptography.x509")
    certificate = x509.load_pem_x509_certificate(root_ca.PLAIN_HTTP_PLACEHOLDER.encode())
    constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.value.ca is True
    assert "placeholder" in certificate.subject.rfc4514_string()


def test_a_create_a_quota_refuses_is_tried_again_and_the_client_is_not_told() -> None:
    # The quota allows exactly the one ConfigMap there is: the publisher's create right after
    # the delete is refused (the quota has not counted the delete yet), as on a cluster.
    server = Cluster(seed=1, root_ca_bundle=BUNDLE, controllers=True)
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "1"}}}
    server.create("resourcequotas", quota, namespace="default")
    server.advance(1)
    server.delete("configmaps", NAME, namespace="default")  # answered, not a 403
    assert server.list("configmaps", namespace="default") == []
    used = server.get("resourcequotas", "q", namespace="default")["status"]["used"]
    assert used == {"configmaps": "0"}  # the quota controller still saw the delete
    refused = [r for r in server.trace.recent if r[0] == "controller-refused"]
    assert refused == [("controller-refused", "root-ca-cert-publisher", "default", NAME, 403)]
    server.advance(1)  # the first retry, a second later
    assert published(server, "default")["data"] == {"ca.crt": BUNDLE}
    used = server.get("resourcequotas", "q", namespace="default")["status"]["used"]
    assert used == {"configmaps": "1"}
