"""``kubesim serve --tls --token``: HTTPS with a generated CA and bearer-token authentication.

One ``kubesim serve --tls --token ... --kubeconfig ...`` subprocess (loopback) serves the module.
Clients trust the CA the server wrote into the kubeconfig as ``certificate-authority-data``;
requests without the token get kube-apiserver's 401 ``Unauthorized`` Status. Socket and
subprocess timeouts are hang guards only.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from serve_process import serve

from kubesim.apiserver.server import APIServer
from kubesim.cli.main import main
from kubesim.cluster import Cluster
from kubesim.transport.http import HTTPTransport

pytest.importorskip("cryptography")

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "kubesim-test-token-0123456789"
HANG_GUARD = 30.0
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
KUBECTL_VERSIONS = ("1.33", "1.32", "1.31", "1.30", "1.29", "1.28", "1.27")


@dataclass
class Secured:
    url: str
    host: str
    port: int
    kubeconfig: Path
    ca_pem: bytes

    def context(self, *, certificate: bool = False) -> ssl.SSLContext:
        """Trusts the generated CA; ``certificate``: presents the kubeconfig's client
        certificate too."""
        context = ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))
        if certificate:
            user = json.loads(self.kubeconfig.read_text())["users"][0]["user"]
            directory = self.kubeconfig.parent
            cert, key = directory / "client.crt", directory / "client.key"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            context.load_cert_chain(cert, key)
        return context

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: Any = None,
        certificate: bool = False,
    ) -> tuple[int, Any]:
        connection = http.client.HTTPSConnection(
            self.host, self.port, timeout=HANG_GUARD, context=self.context(certificate=certificate)
        )
        try:
            headers = {"Accept": "application/json"}
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
        finally:
            connection.close()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    workdir = tmp_path_factory.mktemp("kubesim-secure")
    kubeconfig = workdir / "kubeconfig"
    args = ("--tls", "--token", TOKEN, "--kubeconfig", str(kubeconfig))
    with serve(workdir, *args, banner_lines=2, timeout=HANG_GUARD) as banner:
        first, written = banner
        assert first.startswith("kubesim serving at https://127.0.0.1:"), first
        assert written.startswith("kubeconfig written to"), written
        url = first.split()[-1]
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname is not None
        assert parts.port is not None
        config = json.loads(kubeconfig.read_text())
        ca_pem = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        yield Secured(url, parts.hostname, parts.port, kubeconfig, ca_pem)


# -- authentication ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path", ["/api/v1/namespaces/default/pods", "/version", "/kubesim/state", "/api"]
)
def test_a_request_without_the_token_gets_a_401_unauthorized_status(
    secured: Secured, path: str
) -> None:
    assert secured.request("GET", path) == (401, UNAUTHORIZED)


def test_a_request_with_a_wrong_token_or_scheme_gets_401(secured: Secured) -> None:
    assert secured.request("GET", "/api", token="wrong")[0] == 401
    connection = http.client.HTTPSConnection(
        secured.host, secured.port, timeout=HANG_GUARD, context=secured.context()
    )
    try:
        connection.request("GET", "/api", headers={"Authorization": f"Basic {TOKEN}"})
        response = connection.getresponse()
        assert response.status == 401
        assert json.loads(response.read()) == UNAUTHORIZED
    finally:
        connection.close()


def test_an_unauthenticated_write_is_refused_and_creates_nothing(secured: Secured) -> None:
    pod = {"metadata": {"name": "sneaky"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    status, body = secured.request("POST", "/api/v1/namespaces/default/pods", body=pod)
    assert (status, body) == (401, UNAUTHORIZED)
    status, _ = secured.request("GET", "/api/v1/namespaces/default/pods/sneaky", token=TOKEN)
    assert status == 404


def test_a_request_with_the_token_over_tls_gets_200(secured: Secured) -> None:
    status, body = secured.request("GET", "/api/v1/namespaces/default/pods", token=TOKEN)
    assert status == 200
    assert body["kind"] == "PodList"


def test_the_kubeconfig_client_certificate_authenticates_as_the_cluster_admin(
    secured: Secured,
) -> None:
    # x509 authentication: no token needed, and the certificate names the user.
    review = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, body = secured.request("POST", review, body={}, certificate=True)
    assert status == 201
    assert body["status"]["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["kubeadm:cluster-admins", "system:authenticated"],
    }


def test_a_service_account_token_the_server_issued_is_accepted_and_names_the_account(
    secured: Secured,
) -> None:
    path = "/api/v1/namespaces/default/serviceaccounts/default/token"
    status, answer = secured.request("POST", path, token=TOKEN, body={"spec": {}})
    assert status == 201
    issued = answer["status"]["token"]
    review = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, body = secured.request("POST", review, token=issued, body={})
    assert status == 201
    assert body["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"
    forged = issued[:-4] + ("AAAA" if not issued.endswith("AAAA") else "BBBB")
    assert secured.request("GET", "/api", token=forged) == (401, UNAUTHORIZED)


# -- TLS ---------------------------------------------------------------------------------------
def test_the_kubeconfig_carries_the_https_url_the_ca_and_the_token(secured: Secured) -> None:
    config = json.loads(secured.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == secured.url
    user = config["users"][0]["user"]
    assert set(user) == {"token", "client-certificate-data", "client-key-data"}
    assert user["token"] == TOKEN
    assert secured.ca_pem.startswith(b"-----BEGIN CERTIFICATE-----")
    assert secured.kubeconfig.stat().st_mode & 0o077 == 0


def test_the_server_certificate_verifies_for_localhost_as_well_as_127_0_0_1(
    secured: Secured,
) -> None:
    connection = http.client.HTTPSConnection(
        "localhost", secured.port, timeout=HANG_GUARD, context=secured.context()
    )
    try:
        connection.request("GET", "/version", headers={"Authorization": f"Bearer {TOKEN}"})
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_every_namespace_publishes_the_ca_that_verifies_the_server(secured: Secured) -> None:
    # What a pod's client does in a cluster: trust kube-root-ca.crt's bundle, and nothing else.
    path = "/api/v1/namespaces/kube-public/configmaps/kube-root-ca.crt"
    status, config_map = secured.request("GET", path, token=TOKEN)
    assert status == 200
    bundle = config_map["data"]["ca.crt"]
    assert bundle.encode() == secured.ca_pem
    in_cluster = ssl.create_default_context(cadata=bundle)
    connection = http.client.HTTPSConnection(
        "localhost", secured.port, timeout=HANG_GUARD, context=in_cluster
    )
    try:
        connection.request("GET", "/version", headers={"Authorization": f"Bearer {TOKEN}"})
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_a_tls_client_that_does_not_trust_the_generated_ca_is_refused(secured: Secured) -> None:
    untrusting = ssl.create_default_context()
    untrusting.load_default_certs()
    connection = http.client.HTTPSConnection(
        secured.host, secured.port, timeout=HANG_GUARD, context=untrusting
    )
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            connection.request("GET", "/version")
    finally:
        connection.close()


def test_a_plain_http_client_to_the_tls_server_fails_with_an_exception_not_a_hang(
    secured: Secured,
) -> None:
    connection = http.client.HTTPConnection(secured.host, secured.port, timeout=HANG_GUARD)

    def plain_get() -> None:
        connection.request("GET", "/version", headers={"Authorization": f"Bearer {TOKEN}"})
        connection.getresponse().read()

    try:
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            plain_get()
    finally:
        connection.close()
    # The failed handshake cost the server nothing: it still answers.
    assert secured.request("GET", "/version", token=TOKEN)[0] == 200


def test_the_official_client_works_through_the_written_kubeconfig(secured: Secured) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    api_client = kubernetes.config.new_client_from_config(config_file=str(secured.kubeconfig))
    try:
        core = kubernetes.client.CoreV1Api(api_client)
        core.create_namespaced_pod(
            "default",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "official"},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
            },
        )
        names = [p.metadata.name for p in core.list_namespaced_pod("default").items]
        assert "official" in names
    finally:
        api_client.close()


def _any_kubectl() -> str | None:
    for version in KUBECTL_VERSIONS:
        found = shutil.which(f"kubectl.{version}")
        if found is None and (dispatcher := shutil.which("kubectl")) is not None:
            candidate = Path(os.path.realpath(dispatcher)).parent / f"kubectl.{version}"
            found = str(candidate) if os.access(candidate, os.X_OK) else None
        if found is not None:
            return found
    return None


@pytest.mark.kubectl
def test_kubectl_gets_pods_from_the_tls_and_token_server_via_the_kubeconfig(
    secured: Secured, tmp_path: Path
) -> None:
    binary = _any_kubectl()
    if binary is None:
        pytest.skip("no versioned kubectl binary found")
    pod = {
        "metadata": {"name": "viakubectl"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    status, _ = secured.request("POST", "/api/v1/namespaces/default/pods", token=TOKEN, body=pod)
    assert status == 201
    done = subprocess.run(
        [
            binary,
            "--kubeconfig",
            str(secured.kubeconfig),
            "--cache-dir",
            str(tmp_path / "cache"),
            "get",
            "pods",
        ],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD * 2,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "viakubectl" in [line.split()[0] for line in lines[1:]]


def test_without_token_anonymous_requests_pass_and_bad_bearer_tokens_are_refused() -> None:
    api = Cluster(seed=1, service_accounts=True)
    with HTTPTransport(api) as served:

        def get(headers: dict[str, str]) -> int:
            connection = http.client.HTTPConnection(served.host, served.port, timeout=HANG_GUARD)
            try:
                connection.request("GET", "/api/v1/namespaces", headers=headers)
                response = connection.getresponse()
                response.read()
                return response.status
            finally:
                connection.close()

        assert get({}) == 200  # anonymous, as a cluster that allows it
        assert get({"Authorization": "Bearer abc123"}) == 401  # kr8s' test_bad_auth
        path = "/api/v1/namespaces/default/serviceaccounts/default/token"
        connection = http.client.HTTPConnection(served.host, served.port, timeout=HANG_GUARD)
        try:
            connection.request(
                "POST", path, body=b"{}", headers={"Content-Type": "application/json"}
            )
            token = json.loads(connection.getresponse().read())["status"]["token"]
        finally:
            connection.close()
        assert get({"Authorization": f"Bearer {token}"}) == 200


# -- binding -----------------------------------------------------------------------------------
def test_a_token_transport_still_refuses_a_non_loopback_host_unless_allowed() -> None:
    with pytest.raises(ValueError, match="refusing to bind"):
        HTTPTransport(APIServer(seed=1), host="0.0.0.0", token=TOKEN)


def test_serve_with_tls_and_token_exits_2_for_a_non_loopback_host(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--host", "0.0.0.0", "--tls", "--token", TOKEN]) == 2
    assert "refusing to bind" in capsys.readouterr().err


def test_an_empty_token_is_refused_rather_than_letting_everyone_in() -> None:
    with pytest.raises(ValueError, match="empty token"):
        HTTPTransport(APIServer(seed=1), token="")


def test_an_in_process_tls_transport_serves_https_with_the_generated_context() -> None:
    from kubesim.transport.tls import generate

    files = generate()
    try:
        with HTTPTransport(APIServer(seed=1), tls=files.server_context(), token=TOKEN) as served:
            assert served.url.startswith("https://127.0.0.1:")
            with socket.create_connection((served.host, served.port), HANG_GUARD) as raw:
                client = files.client_context().wrap_socket(raw, server_hostname="127.0.0.1")
                with client:
                    client.sendall(
                        b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n"
                    )
                    head = client.recv(64)
            assert head.startswith(b"HTTP/1.1 200")
    finally:
        files.cleanup()
    assert not os.path.exists(files.directory)
