"""Create-only kinds and service account tokens, over the routes: TokenRequest issues a token the
server checks (TokenReview, SelfSubjectReview) until it expires or its account is gone; access
reviews allow everything after kube-apiserver's validation; a Binding binds a pod; none of them
stores anything, and discovery lists them as kubectl looks them up."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import orjson
import pytest

from kubesim import APIServer
from kubesim.apiserver import reviews
from kubesim.cluster import Cluster
from kubesim.wire.routes import Request, Response, handle

JSON = dict[str, Any]
TOKEN_PATH = "/api/v1/namespaces/default/serviceaccounts/default/token"
AUTHN = "/apis/authentication.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"


@pytest.fixture
def server() -> APIServer:
    return Cluster(seed=3, service_accounts=True)


def post(server: APIServer, path: str, body: JSON, **headers: str) -> Response:
    request = Request.from_target("POST", path, headers=headers, body=orjson.dumps(body))
    return handle(server, request)


def token(server: APIServer, **spec: Any) -> str:
    answer = post(server, TOKEN_PATH, {"spec": spec})
    assert answer.status == 201, answer.json()
    value: str = answer.json()["status"]["token"]
    return value


def claims_of(jwt: str) -> JSON:
    payload = jwt.split(".")[1]
    decoded: JSON = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded


def test_a_token_request_answers_a_jwt_for_the_account_with_the_clock_and_audiences(
    server: APIServer,
) -> None:
    answer = post(server, TOKEN_PATH, {"spec": {"expirationSeconds": 7200}})
    assert answer.status == 201
    body = answer.json()
    assert body["kind"] == "TokenRequest"
    assert body["apiVersion"] == "authentication.k8s.io/v1"
    assert body["metadata"] == {
        "name": "default",
        "namespace": "default",
        "creationTimestamp": None,
    }
    assert body["spec"]["audiences"] == [reviews.API_AUDIENCE]
    claims = claims_of(body["status"]["token"])
    account = server.get("serviceaccounts", "default", namespace="default")
    now = int(server.clock.epoch.timestamp())
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["kubernetes.io"]["serviceaccount"] == {
        "name": "default",
        "uid": account["metadata"]["uid"],
    }
    assert claims["iat"] == claims["nbf"] == now
    assert claims["exp"] == now + 7200
    assert body["status"]["expirationTimestamp"] == "2024-01-01T02:00:00Z"
    # Nothing is stored: no write, and the same seed issues the same token.
    assert body["status"]["token"] == token(
        Cluster(seed=3, service_accounts=True), expirationSeconds=7200
    )


@pytest.mark.parametrize(
    ("path", "spec", "code", "text"),
    [
        (TOKEN_PATH, {"expirationSeconds": 599}, 422, "less than 10 minutes"),
        (TOKEN_PATH, {"expirationSeconds": 2**33}, 422, "larger than 2^32 seconds"),
        (TOKEN_PATH, {"audiences": "api"}, 422, "must be a list of strings"),
        (
            TOKEN_PATH.replace("/default/token", "/nobody/token"),
            {},
            404,
            'serviceaccounts "nobody"',
        ),
    ],
)
def test_a_bad_token_request_is_refused_with_the_servers_status(
    server: APIServer, path: str, spec: JSON, code: int, text: str
) -> None:
    answer = post(server, path, {"spec": spec})
    assert answer.status == code
    assert text in answer.json()["message"]


def test_a_token_review_knows_the_servers_tokens_until_they_expire_or_the_account_goes(
    server: APIServer,
) -> None:
    issued = token(server, audiences=["api", "vault"])
    review = post(
        server, f"{AUTHN}/tokenreviews", {"spec": {"token": issued, "audiences": ["vault"]}}
    )
    assert review.status == 201
    status = review.json()["status"]
    assert status["authenticated"] is True
    assert status["audiences"] == ["vault"]
    assert status["user"]["username"] == "system:serviceaccount:default:default"
    assert status["user"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    header, payload, signature = token(server).split(".")
    forged = f"{header}.{payload}.{signature[:-4]}{'AAAA' if signature[-4:] != 'AAAA' else 'BBBB'}"
    for spec in (
        {"token": issued, "audiences": ["other"]},  # not for this audience
        {"token": forged},  # valid claims, but not this server's signature
        {"token": token(Cluster(seed=4, service_accounts=True))},  # another server's
        {"token": "not-a-jwt"},
    ):
        status = post(server, f"{AUTHN}/tokenreviews", {"spec": spec}).json()["status"]
        assert "authenticated" not in status
        assert status["user"] == {}
        assert "invalid bearer token" in status["error"]
    empty = post(server, f"{AUTHN}/tokenreviews", {"spec": {}})
    assert empty.status == 400
    # Expired on the server's clock, then (a fresh one) invalid once its account is gone.
    short = token(server, expirationSeconds=600)
    server.advance(601)
    assert (
        "authenticated"
        not in post(server, f"{AUTHN}/tokenreviews", {"spec": {"token": short}}).json()["status"]
    )
    fresh = token(server)
    server.delete("serviceaccounts", "default", namespace="default")
    review = post(server, f"{AUTHN}/tokenreviews", {"spec": {"token": fresh}})
    assert "authenticated" not in review.json()["status"]


def test_a_self_subject_review_is_the_token_bearer_or_the_admin(server: APIServer) -> None:
    path = f"{AUTHN}/selfsubjectreviews"
    admin = post(server, path, {}).json()
    assert admin["kind"] == "SelfSubjectReview"
    assert admin["status"]["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["kubeadm:cluster-admins", "system:authenticated"],
    }
    bearer = post(server, path, {}, Authorization=f"Bearer {token(server)}").json()
    assert bearer["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"


def test_access_reviews_allow_everything_after_validation(server: APIServer) -> None:
    attributes = {
        "resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}
    }
    allowed = post(server, f"{AUTHZ}/selfsubjectaccessreviews", {"spec": attributes})
    assert allowed.status == 201
    assert allowed.json()["status"] == {"allowed": True}
    other = post(server, f"{AUTHZ}/subjectaccessreviews", {"spec": {**attributes, "user": "jane"}})
    assert other.json()["status"] == {"allowed": True}
    local = post(
        server,
        f"{AUTHZ}/namespaces/default/localsubjectaccessreviews",
        {"spec": {**attributes, "user": "jane"}},
    )
    assert local.json()["metadata"]["namespace"] == "default"
    rules = post(server, f"{AUTHZ}/selfsubjectrulesreviews", {"spec": {"namespace": "default"}})
    assert rules.json()["status"]["resourceRules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    ]
    for path, spec, field in (
        (f"{AUTHZ}/selfsubjectaccessreviews", {}, "spec.resourceAttributes"),
        (f"{AUTHZ}/subjectaccessreviews", attributes, "spec.user"),
        (
            f"{AUTHZ}/namespaces/default/localsubjectaccessreviews",
            {"resourceAttributes": {"namespace": "other"}, "user": "jane"},
            "spec.resourceAttributes.namespace",
        ),
    ):
        refused = post(server, path, {"spec": spec})
        assert refused.status == 422
        assert field in [c["field"] for c in refused.json()["details"]["causes"]]


def test_reviews_store_nothing_and_cannot_be_read_back(server: APIServer) -> None:
    rv = server.storage.rv
    post(server, f"{AUTHN}/selfsubjectreviews", {})
    token(server)
    assert server.storage.rv == rv
    listed = handle(server, Request.from_target("GET", f"{AUTHN}/tokenreviews"))
    assert listed.status == 405
    named = handle(server, Request.from_target("GET", f"{AUTHN}/tokenreviews/x"))
    assert named.status == 404


def test_a_binding_binds_the_pod_it_names() -> None:
    server = Cluster(seed=1, nodes=1)
    server.create(
        "pods",
        {
            "metadata": {"name": "p"},
            "spec": {"schedulerName": "mine", "containers": [{"name": "c", "image": "i"}]},
        },
        namespace="default",
    )
    body = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node-0"}}
    dry = post(server, "/api/v1/namespaces/default/bindings?dryRun=All", body)
    assert dry.status == 201
    assert "nodeName" not in server.get("pods", "p", namespace="default")["spec"]
    answer = post(server, "/api/v1/namespaces/default/bindings", body)
    assert answer.status == 201
    assert server.get("pods", "p", namespace="default")["spec"]["nodeName"] == "node-0"
    assert post(server, "/api/v1/namespaces/default/bindings", {"target": {}}).status == 400


def test_discovery_lists_the_reviews_and_the_token_subresource(server: APIServer) -> None:
    authn = handle(server, Request.from_target("GET", AUTHN)).json()
    by_name = {r["name"]: r for r in authn["resources"]}
    assert by_name["tokenreviews"]["verbs"] == ["create"]
    assert by_name["selfsubjectreviews"]["kind"] == "SelfSubjectReview"
    core = handle(server, Request.from_target("GET", "/api/v1")).json()
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["serviceaccounts/token"] == {
        "name": "serviceaccounts/token",
        "singularName": "",
        "namespaced": True,
        "group": "authentication.k8s.io",
        "version": "v1",
        "kind": "TokenRequest",
        "verbs": ["create"],
    }
    assert by_name["pods/log"]["verbs"] == ["get"]


def test_a_verified_client_certificate_user_is_who_the_request_is(server: APIServer) -> None:
    jane = {"username": "jane", "groups": ["devs", "system:authenticated"]}
    request = Request.from_target("POST", f"{AUTHN}/selfsubjectreviews", body=b"{}")
    answer = handle(server, dataclasses.replace(request, user=jane))
    assert answer.json()["status"]["userInfo"] == jane


def test_impersonation_headers_make_the_request_another_user(server: APIServer) -> None:
    path = f"{AUTHN}/selfsubjectreviews"
    lines = (
        ("Impersonate-User", "user1"),
        ("Impersonate-Group", "group2"),
        ("Impersonate-Group", ",,,chameleon"),  # one group per line, commas and all
        ("Impersonate-Uid", "u-1"),
        ("Impersonate-Extra-Scopes", "view"),
    )
    request = Request("POST", path, "", dict(lines), b"{}", None, lines)
    info = handle(server, request).json()["status"]["userInfo"]
    assert info == {
        "username": "user1",
        "uid": "u-1",
        "groups": ["group2", ",,,chameleon", "system:authenticated"],
        "extra": {"scopes": ["view"]},
    }
    alone = {"Impersonate-Group": "g"}
    refused = post(server, path, {}, **alone)
    assert refused.status == 400
    unauthenticated = post(
        server,
        path,
        {},
        **{"Impersonate-User": "system:anonymous", "Impersonate-Group": "system:unauthenticated"},
    )
    assert unauthenticated.json()["status"]["userInfo"]["groups"] == ["system:unauthenticated"]


def test_a_csr_records_who_created_it_whatever_its_body_says(server: APIServer) -> None:
    csr = {
        "metadata": {"name": "foo"},
        "spec": {
            "request": base64.b64encode(b"not checked").decode(),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
            "username": "forged",
        },
    }
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    created = post(server, path, csr, **{"Impersonate-User": "user1"}).json()
    assert created["spec"]["username"] == "user1"
    assert created["spec"]["groups"] == ["system:authenticated"]
    as_admin = post(server, path, {**csr, "metadata": {"name": "bar"}}).json()
    assert as_admin["spec"]["username"] == "kubernetes-admin"
    assert as_admin["spec"]["groups"] == ["kubeadm:cluster-admins", "system:authenticated"]
