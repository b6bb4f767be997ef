"""Real kubectl binaries (1.27 to 1.33, plus the ``kubectl`` on PATH) against ``kubesim serve``.

One ``kubesim serve --port 0`` subprocess (loopback only) serves the whole module; every test
makes its own namespace through the HTTP API, so tests do not see each other's pods except in
``get pods -A``. Each kubectl run gets ``--kubeconfig`` (written by ``kubesim serve``), its own
``--cache-dir`` and ``HOME`` (the discovery cache must not leak between versions or tests),
and a subprocess timeout as a hang guard. Watches are ended by the server
(``POST /kubesim/expire-watches``) once kubectl has printed what the test waits for; the test
polls kubectl's output rather than relying on wall-clock timing.

What each command sends is in docs/reference ``clients-measured.md`` section 2.2 and
``k8s-wire.md`` section 4.1. ``apply`` runs with its default validation: kubesim serves the
OpenAPI documents kubectl reads to learn that the server validates fields.

kubesim answers kubectl's ``Accept: ...;as=Table;...`` with a server-side Table (pods: NAME READY
STATUS RESTARTS AGE), so kubectl prints the server's cells. AGE follows the server's virtual
clock, which ``kubesim serve`` advances from the wall clock: assertions check its shape only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from serve_process import serve

pytestmark = pytest.mark.kubectl

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
# Hang guards only: a healthy run takes well under a second per kubectl invocation.
KUBECTL_TIMEOUT = 60.0
SERVER_START_TIMEOUT = 30.0
POLL_INTERVAL = 0.02

_DISPATCHER = shutil.which("kubectl")
if _DISPATCHER is None:
    pytest.skip("kubectl is not on PATH", allow_module_level=True)
KUBECTL_DIR = Path(os.path.realpath(_DISPATCHER)).parent


def _versioned(version: str) -> str | None:
    found = shutil.which(f"kubectl.{version}")
    if found is not None:
        return found
    candidate = KUBECTL_DIR / f"kubectl.{version}"
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _binary_params() -> list[Any]:
    params: list[Any] = []
    for version in VERSIONS:
        path = _versioned(version)
        marks = (
            ()
            if path is not None
            else pytest.mark.skip(reason=f"kubectl.{version} not found on PATH or in {KUBECTL_DIR}")
        )
        params.append(pytest.param((version, path), id=version, marks=marks))
    params.append(pytest.param(("dispatcher", _DISPATCHER), id="dispatcher"))
    return params


# -- the server ----------------------------------------------------------------------------
class Api:
    """A tiny client for kubesim's HTTP API (no proxies, one connection per request)."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname is not None, url
        assert parts.port is not None, url
        self.url = url
        self.host = parts.hostname
        self.port = parts.port

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=KUBECTL_TIMEOUT)
        try:
            headers = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
        finally:
            connection.close()

    def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        status, result = self.request(method, path, body, **kwargs)
        assert 200 <= status < 300, (method, path, status, result)
        return result

    def namespace(self, name: str) -> str:
        self.ok("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def create_pod(self, namespace: str, name: str, labels: dict[str, str] | None = None) -> Any:
        return self.ok("POST", f"/api/v1/namespaces/{namespace}/pods", pod_manifest(name, labels))

    def get_pod(self, namespace: str, name: str) -> tuple[int, Any]:
        return self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")


def pod_manifest(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    }


@dataclass
class Served:
    api: Api
    kubeconfig: Path


@contextlib.contextmanager
def _serving(workdir: Path, *extra: str) -> Iterator[Served]:
    kubeconfig = workdir / "kubeconfig"
    args = ("--host", "127.0.0.1", "--kubeconfig", str(kubeconfig), *extra)
    with serve(workdir, *args, banner_lines=2, timeout=SERVER_START_TIMEOUT) as banner:
        first, written = banner
        assert first.startswith("kubesim serving at http://127.0.0.1:"), first
        assert written.startswith("kubeconfig written to"), written
        yield Served(Api(first.split()[-1]), kubeconfig)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``kubesim serve --port 0 --kubeconfig ... --nodes 0 --no-controllers`` on loopback, for
    the whole module: an API server alone, as envtest runs one, so the only writes to a test's
    objects are the test's own (the scheduler and the kubelet write to each new pod twice, and
    a Deployment's controllers make a ReplicaSet and pods)."""
    args = ("--nodes", "0", "--no-controllers")
    with _serving(tmp_path_factory.mktemp("kubesim-serve"), *args) as served:
        yield served


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``kubesim serve`` as its users run it (controllers on), with two nodes."""
    with _serving(tmp_path_factory.mktemp("kubesim-cluster"), "--nodes", "2") as served:
        yield served


@pytest.fixture
def api(served: Served) -> Api:
    return served.api


# -- kubectl ---------------------------------------------------------------------------------
@dataclass
class Kubectl:
    version: str
    binary: str
    kubeconfig: Path
    home: Path

    @property
    def tag(self) -> str:
        """The version as a DNS-label fragment, for namespace names."""
        return self.version.replace(".", "-")

    def argv(self, *args: str) -> list[str]:
        return [
            self.binary,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.home / "kube-cache"),
            *args,
        ]

    @property
    def env(self) -> dict[str, str]:
        # A clean environment: no KUBECONFIG or kubectl plugins from the developer's shell.
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
            check=False,
        )

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, (
            f"kubectl {self.version} {' '.join(args)} exited {done.returncode}:\n"
            f"stdout: {done.stdout}\nstderr: {done.stderr}"
        )
        return done.stdout


def _kubectl_for(request: pytest.FixtureRequest, server: Served, tmp_path: Path) -> Kubectl:
    """The parametrized kubectl binary, with a HOME of its own, pointed at ``server``."""
    version, binary = request.param
    home = tmp_path / "home"
    home.mkdir()
    return Kubectl(version, binary, server.kubeconfig, home)


@pytest.fixture(params=_binary_params())
def kubectl(request: pytest.FixtureRequest, served: Served, tmp_path: Path) -> Kubectl:
    return _kubectl_for(request, served, tmp_path)


@pytest.fixture(params=_binary_params())
def kubectl_on_nodes(request: pytest.FixtureRequest, cluster: Served, tmp_path: Path) -> Kubectl:
    return _kubectl_for(request, cluster, tmp_path)


def _wait_for(
    what: str, condition: Callable[[], bool], process: subprocess.Popen[Any], output: Path
) -> None:
    """Poll until ``condition`` holds; fail early if kubectl exits, or after the hang guard."""
    deadline = time.monotonic() + KUBECTL_TIMEOUT
    while not condition():
        if process.poll() is not None:
            pytest.fail(
                f"kubectl exited ({process.returncode}) before {what}:\n{output.read_text()}"
            )
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}:\n{output.read_text()}")
        time.sleep(POLL_INTERVAL)


def _rows(text: str, name: str) -> list[str]:
    """Output lines whose NAME column (first, after an optional EVENT column) is ``name``."""
    return [line for line in text.splitlines() if name in line.split()[:2]]


# -- the tests -------------------------------------------------------------------------------
def test_get_pods_all_namespaces_lists_pods_created_through_the_api(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = api.namespace(f"get-all-{kubectl.tag}")
    for name in ("alpha", "beta"):
        api.create_pod(namespace, name)
    out = kubectl.ok("get", "pods", "-A")
    assert out.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    listed = {tuple(line.split()[:2]) for line in out.splitlines()[1:]}
    assert {(namespace, "alpha"), (namespace, "beta")} <= listed


def test_get_pods_output_json_is_a_list_holding_exactly_the_namespace_pods(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = api.namespace(f"get-json-{kubectl.tag}")
    for name in ("one", "two", "three"):
        api.create_pod(namespace, name, {"app": name})
    document = json.loads(kubectl.ok("get", "pods", "-o", "json", "-n", namespace))
    assert document["kind"] == "List"
    items = document["items"]
    assert sorted(item["metadata"]["name"] for item in items) == ["one", "three", "two"]
    assert all(item["kind"] == "Pod" and item["apiVersion"] == "v1" for item in items)
    assert {item["metadata"]["name"]: item["metadata"]["labels"]["app"] for item in items} == {
        "one": "one",
        "two": "two",
        "three": "three",
    }


def test_label_pod_adds_a_label_that_a_later_get_returns(kubectl: Kubectl, api: Api) -> None:
    namespace = api.namespace(f"label-{kubectl.tag}")
    created = api.create_pod(namespace, "x", {"keep": "me"})
    out = kubectl.ok("label", "pod", "x", "a=b", "-n", namespace)
    assert "pod/x labeled" in out
    status, pod = api.get_pod(namespace, "x")
    assert status == 200
    assert pod["metadata"]["labels"] == {"keep": "me", "a": "b"}
    assert int(pod["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_get_pods_watch_prints_changes_and_exits_0_when_the_server_ends_the_watch(
    kubectl: Kubectl, api: Api, tmp_path: Path
) -> None:
    namespace = api.namespace(f"watch-{kubectl.tag}")
    api.create_pod(namespace, "before")
    output = tmp_path / "watch.out"
    errors = tmp_path / "watch.err"
    with output.open("w") as out, errors.open("w") as err:
        process = subprocess.Popen(
            kubectl.argv("get", "pods", "-w", "-n", namespace),
            env=kubectl.env,
            stdout=out,
            stderr=err,
            text=True,
        )
    try:
        _wait_for(
            "the initial list", lambda: bool(_rows(output.read_text(), "before")), process, output
        )
        # The watch starts from the list's resourceVersion, so these changes reach kubectl even
        # if they commit before its watch request arrives.
        api.create_pod(namespace, "during")
        api.ok(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/before",
            {"metadata": {"labels": {"changed": "yes"}}},
            content_type="application/merge-patch+json",
        )

        def printed() -> bool:
            text = output.read_text()
            return len(_rows(text, "during")) == 1 and len(_rows(text, "before")) == 2

        _wait_for("the watch events", printed, process, output)
        closed = api.ok("POST", "/kubesim/expire-watches")
        assert closed["closed"] >= 1
        returncode = process.wait(timeout=KUBECTL_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = output.read_text()
    assert returncode == 0, f"stdout: {text}\nstderr: {errors.read_text()}"
    assert text.splitlines()[0].split() == POD_HEADER, text
    assert all(_is_pod_row(line.split()) for line in text.splitlines()[1:]), text
    # list row, then ADDED for "during" and MODIFIED for "before", each once.
    assert [line.split()[0] for line in text.splitlines()[1:]] == ["before", "during", "before"]


def test_apply_creates_then_a_reapply_sends_a_strategic_merge_patch_that_changes_the_label(
    kubectl: Kubectl, api: Api, tmp_path: Path
) -> None:
    namespace = api.namespace(f"apply-{kubectl.tag}")
    manifest = tmp_path / "pod.yaml"

    def write(label: str, sidecar_image: str) -> None:
        # JSON is YAML; two containers so that a merge patch would visibly differ from a
        # strategic one (containers merge by name, plus a $setElementOrder directive).
        pod = pod_manifest("applied", {"version": label})
        pod["spec"]["containers"].append({"name": "sidecar", "image": sidecar_image})
        manifest.write_text(json.dumps(pod, indent=2))

    write("one", "busybox:1.36")
    out = kubectl.ok("apply", "-f", str(manifest), "-n", namespace)
    assert "pod/applied created" in out
    status, first = api.get_pod(namespace, "applied")
    assert status == 200
    assert first["metadata"]["labels"] == {"version": "one"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in first["metadata"]["annotations"]

    write("two", "busybox:1.37")
    out = kubectl.ok("apply", "-f", str(manifest), "-n", namespace)
    assert "pod/applied configured" in out
    status, second = api.get_pod(namespace, "applied")
    assert status == 200
    assert second["metadata"]["labels"] == {"version": "two"}
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert [(c["name"], c["image"]) for c in second["spec"]["containers"]] == [
        ("main", "nginx:1.25"),
        ("sidecar", "busybox:1.37"),
    ]
    applied = json.loads(
        second["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert applied["metadata"]["labels"] == {"version": "two"}


def test_delete_pod_removes_it_so_a_later_get_is_404(kubectl: Kubectl, api: Api) -> None:
    namespace = api.namespace(f"delete-{kubectl.tag}")
    api.create_pod(namespace, "x")
    api.create_pod(namespace, "bystander")
    out = kubectl.ok("delete", "pod", "x", "-n", namespace)
    assert 'pod "x" deleted' in out
    status, body = api.get_pod(namespace, "x")
    assert status == 404
    assert body["reason"] == "NotFound"
    assert api.get_pod(namespace, "bystander")[0] == 200


POD_HEADER = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
_AGE = re.compile(r"^(\d+[smhdy])+$")


def _is_pod_row(cells: list[str]) -> bool:
    """A server-side pod row: five cells, READY as n/m, an integer RESTARTS, a kubectl AGE."""
    return (
        len(cells) == 5
        and re.fullmatch(r"\d+/\d+", cells[1]) is not None
        and cells[3].isdigit()
        and _AGE.match(cells[4]) is not None
    )


def test_get_pods_prints_the_server_table_header_and_a_row_per_pod_from_its_status(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = api.namespace(f"table-{kubectl.tag}")
    api.create_pod(namespace, "pending")
    api.create_pod(namespace, "running")
    api.ok(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/running/status",
        {
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "main",
                        "ready": True,
                        "restartCount": 3,
                        "image": "nginx:1.25",
                        "imageID": "",
                        "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
                    }
                ],
            }
        },
        content_type="application/merge-patch+json",
    )
    lines = kubectl.ok("get", "pods", "-n", namespace).splitlines()
    assert lines[0].split() == POD_HEADER, lines
    rows = [line.split() for line in lines[1:]]
    assert all(_is_pod_row(cells) for cells in rows), lines
    assert [cells[:4] for cells in rows] == [
        ["pending", "0/1", "Pending", "0"],
        ["running", "1/1", "Running", "3"],
    ]


def test_create_subcommands_work_whatever_body_encoding_the_version_sends(
    kubectl: Kubectl, api: Api
) -> None:
    # kubectl 1.32+ sends these creates as protobuf (application/vnd.kubernetes.protobuf);
    # earlier versions as JSON. Either way the objects arrive whole.
    namespace = f"created-{kubectl.tag}"
    assert f"namespace/{namespace} created" in kubectl.ok("create", "namespace", namespace)
    # As on a cluster, the ServiceAccount controller has given the new namespace its account.
    assert kubectl.ok("get", "serviceaccounts", "-n", namespace, "-o", "name").split() == [
        "serviceaccount/default"
    ]
    out = kubectl.ok("create", "configmap", "settings", "--from-literal=mode=fast", "-n", namespace)
    assert "configmap/settings created" in out
    out = kubectl.ok(
        "create",
        "deployment",
        "web",
        "--image=nginx:1.25",
        "--replicas=3",
        "--port=8080",
        "-n",
        namespace,
    )
    assert "deployment.apps/web created" in out
    status, ns = api.request("GET", f"/api/v1/namespaces/{namespace}")
    assert status == 200
    assert ns["status"]["phase"] == "Active"
    status, cm = api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/settings")
    assert status == 200
    assert cm["data"] == {"mode": "fast"}
    assert "generation" not in cm["metadata"]
    status, deploy = api.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert status == 200
    spec = deploy["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    (container,) = spec["template"]["spec"]["containers"]
    assert (container["name"], container["image"]) == ("nginx", "nginx:1.25")
    assert container["ports"][0]["containerPort"] == 8080
    # What a dry run of the same create answers is not stored.
    kubectl.ok(
        "create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-n", namespace
    )
    status, _ = api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/dry")
    assert status == 404


def test_apply_with_default_validation_registers_a_crd_and_applies_its_objects(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    # Default flags: kubectl asks OpenAPI (v3 from 1.29, v2 in protobuf before) whether the
    # server validates fields, then sends fieldValidation=Strict. No --validate=false.
    group = f"v{kubectl.tag}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {
                "plural": "gadgets",
                "singular": "gadget",
                "kind": "Gadget",
                "shortNames": ["gd"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    (tmp_path / "crd.json").write_text(json.dumps(crd))
    (tmp_path / "gadget.json").write_text(
        json.dumps(
            {
                "apiVersion": f"{group}/v1",
                "kind": "Gadget",
                "metadata": {"name": "g1"},
                "spec": {"n": 1},
            }
        )
    )
    assert "created" in kubectl.ok("apply", "-f", str(tmp_path / "crd.json"))
    assert f"gadget.{group}/g1 created" in kubectl.ok("apply", "-f", str(tmp_path / "gadget.json"))
    assert "g1" in kubectl.ok("get", f"gadgets.{group}")
    assert "deleted" in kubectl.ok("delete", "-f", str(tmp_path / "crd.json"))


def test_a_custom_resource_is_held_to_its_crds_schema(kubectl: Kubectl, tmp_path: Path) -> None:
    group = f"s{kubectl.tag}.example.com"
    spec_schema = {
        "type": "object",
        "required": ["size"],
        "properties": {
            "size": {"type": "string", "enum": ["small", "large"]},
            "replicas": {"type": "integer", "minimum": 1, "default": 1},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}
                    },
                }
            ],
        },
    }

    def manifest(name: str, spec: dict[str, Any]) -> str:
        path = tmp_path / f"{name}.json"
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}}
        path.write_text(json.dumps({**body, "spec": spec}))
        return str(path)

    (tmp_path / "crd.json").write_text(json.dumps(crd))
    kubectl.ok("apply", "-f", str(tmp_path / "crd.json"))
    try:
        # An unknown field: refused under kubectl's default validation, as by a cluster.
        typo = kubectl.run("apply", "-f", manifest("typo", {"size": "small", "color": "red"}))
        assert typo.returncode == 1, typo
        assert (
            'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
            'unknown field "spec.color"'
        ) in typo.stderr
        # A value the schema refuses: 422 with each cause.
        bad = kubectl.run("apply", "-f", manifest("bad", {"size": "huge", "replicas": 0}))
        assert bad.returncode == 1, bad
        assert (
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or "
            "equal to 1"
        ) in bad.stderr
        assert 'spec.size: Unsupported value: "huge": supported values: "small", "large"' in (
            bad.stderr
        )
        # A good one is stored with its schema's defaults.
        kubectl.ok("apply", "--server-side", "-f", manifest("good", {"size": "large"}))
        got = kubectl.ok("get", f"widgets.{group}", "good", "-o", "jsonpath={.spec}")
        assert json.loads(got) == {"replicas": 1, "size": "large"}
    finally:
        kubectl.ok("delete", "-f", str(tmp_path / "crd.json"))


def test_unknown_fields_fail_apply_with_default_validation_and_warn_with_validate_warn(
    kubectl: Kubectl, api: Api, tmp_path: Path
) -> None:
    namespace = api.namespace(f"fv-{kubectl.tag}")
    manifest = pod_manifest("typo")
    manifest["metadata"]["namespace"] = namespace
    manifest["spec"]["replicas"] = 3  # a Deployment field, on a Pod
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(manifest))
    refused = kubectl.run("apply", "-f", str(path))
    assert refused.returncode == 1, refused
    assert (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.replicas"'
    ) in refused.stderr
    warned = kubectl.run("apply", "--validate=warn", "-f", str(path))
    assert warned.returncode == 0, warned
    assert 'Warning: unknown field "spec.replicas"' in warned.stderr
    assert "replicas" not in api.ok("GET", f"/api/v1/namespaces/{namespace}/pods/typo")["spec"]


def test_delete_all_removes_every_object_and_a_server_dry_run_removes_none(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = api.namespace(f"del-{kubectl.tag}")
    for name in ("c1", "c2"):
        api.ok("POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": name}})
    api.create_pod(namespace, "p1")
    dry = kubectl.ok("delete", "configmaps", "--all", "--dry-run=server", "-n", namespace)
    assert 'configmap "c1" deleted (server dry run)' in dry
    listed = api.ok("GET", f"/api/v1/namespaces/{namespace}/configmaps")["items"]
    assert sorted(item["metadata"]["name"] for item in listed) == ["c1", "c2"]
    out = kubectl.ok("delete", "configmaps", "--all", "-n", namespace)
    assert 'configmap "c1" deleted' in out
    assert 'configmap "c2" deleted' in out
    assert api.ok("GET", f"/api/v1/namespaces/{namespace}/configmaps")["items"] == []
    assert 'pod "p1" deleted' in kubectl.ok("delete", "all", "--all", "-n", namespace)
    assert api.get_pod(namespace, "p1")[0] == 404


def test_explain_renders_the_schema_of_a_built_in_kind(kubectl: Kubectl) -> None:
    out = kubectl.ok("explain", "deployment.spec.replicas")
    assert "KIND:" in out
    assert "Deployment" in out
    assert "replicas" in out
    assert "<integer>" in out
    pods = kubectl.ok("explain", "pods")
    assert "Pod is a collection of containers" in " ".join(pods.split())
    assert "metadata\t<ObjectMeta>" in pods


def test_server_side_apply_records_ownership_and_refuses_a_conflict_until_forced(
    kubectl: Kubectl, api: Api, tmp_path: Path
) -> None:
    namespace = api.namespace(f"ssa-{kubectl.tag}")
    manifest = tmp_path / "cm.json"

    def write(value: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owned"},
            "data": {"k": value},
        }
        manifest.write_text(json.dumps(body))

    write("one")
    assert "serverside-applied" in kubectl.ok(
        "apply", "--server-side", "-f", str(manifest), "-n", namespace
    )
    write("two")
    refused = kubectl.run(
        "apply", "--server-side", "--field-manager=other", "-f", str(manifest), "-n", namespace
    )
    assert refused.returncode != 0
    assert 'conflict with "kubectl"' in refused.stderr
    kubectl.ok(
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        str(manifest),
        "-n",
        namespace,
    )
    status, cm = api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/owned")
    assert status == 200
    assert cm["data"] == {"k": "two"}
    assert [e["manager"] for e in cm["metadata"]["managedFields"]] == ["other"]


# -- every built-in kind, and CRDs -----------------------------------------------------------
def _preferred_resource_names(api: Api) -> set[str]:
    """What ``kubectl api-resources -o name`` should print: each group's preferred version."""
    names = {r["name"] for r in api.ok("GET", "/api/v1")["resources"] if "/" not in r["name"]}
    for group in api.ok("GET", "/apis")["groups"]:
        listing = api.ok("GET", f"/apis/{group['preferredVersion']['groupVersion']}")
        names |= {
            f"{r['name']}.{group['name']}" for r in listing["resources"] if "/" not in r["name"]
        }
    return names


def test_api_resources_lists_every_resource_the_server_serves(kubectl: Kubectl, api: Api) -> None:
    printed = set(kubectl.ok("api-resources", "-o", "name").split())
    expected = _preferred_resource_names(api)
    assert {"deployments.apps", "jobs.batch", "leases.coordination.k8s.io"} <= expected
    assert printed == expected


_WORKLOAD_TEMPLATE = {
    "metadata": {"labels": {"app": "w"}},
    "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
}
_ALL_CATEGORY = [
    ("/api/v1", "pods", "pod", pod_manifest("p")),
    (
        "/api/v1",
        "services",
        "service",
        {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}},
    ),
    (
        "/api/v1",
        "replicationcontrollers",
        "replicationcontroller",
        {
            "metadata": {"name": "r"},
            "spec": {"selector": {"app": "w"}, "template": _WORKLOAD_TEMPLATE},
        },
    ),
    *[
        (
            "/apis/apps/v1",
            plural,
            f"{kind}.apps",
            {
                "metadata": {"name": plural[0]},
                "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": _WORKLOAD_TEMPLATE},
            },
        )
        for plural, kind in (
            ("deployments", "deployment"),
            ("replicasets", "replicaset"),
            ("statefulsets", "statefulset"),
            ("daemonsets", "daemonset"),
        )
    ],
    (
        "/apis/batch/v1",
        "jobs",
        "job.batch",
        {"metadata": {"name": "j"}, "spec": {"template": _WORKLOAD_TEMPLATE}},
    ),
    (
        "/apis/batch/v1",
        "cronjobs",
        "cronjob.batch",
        {
            "metadata": {"name": "c"},
            "spec": {
                "schedule": "* * * * *",
                "jobTemplate": {"spec": {"template": _WORKLOAD_TEMPLATE}},
            },
        },
    ),
    (
        "/apis/autoscaling/v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler.autoscaling",
        {
            "metadata": {"name": "h"},
            "spec": {
                "maxReplicas": 3,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            },
        },
    ),
]


def test_get_all_lists_one_object_of_every_kind_in_the_all_category(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = api.namespace(f"all-{kubectl.tag}")
    for prefix, plural, _, body in _ALL_CATEGORY:
        api.ok("POST", f"{prefix}/namespaces/{namespace}/{plural}", body)
    api.ok("POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "cm"}})
    printed = set(kubectl.ok("get", "all", "-n", namespace, "-o", "name").split())
    expected = {f"{kind}/{body['metadata']['name']}" for _, _, kind, body in _ALL_CATEGORY}
    assert printed == expected  # the ConfigMap is not in "all"
    # The server's printers give each kind its own columns, as a cluster's do.
    headers = {
        line.split()[1] if line.startswith("NAME") else ""
        for line in kubectl.ok("get", "all", "-n", namespace).splitlines()
    }
    assert {"READY", "TYPE", "DESIRED", "STATUS", "SCHEDULE", "REFERENCE"} <= headers
    everywhere = kubectl.ok("get", "all", "-A")
    assert any(namespace in line.split()[:1] for line in everywhere.splitlines())


def test_scale_deployment_writes_through_the_scale_subresource(kubectl: Kubectl, api: Api) -> None:
    namespace = api.namespace(f"scale-{kubectl.tag}")
    _, plural, _, body = next(row for row in _ALL_CATEGORY if row[1] == "deployments")
    api.ok("POST", f"/apis/apps/v1/namespaces/{namespace}/{plural}", body)
    kubectl.ok("scale", "deployment", "d", "--replicas=3", "-n", namespace)
    scale = api.ok("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/d/scale")
    assert scale["spec"] == {"replicas": 3}


def test_autoscale_writes_v2_and_a_v1_get_reads_the_same_autoscaler(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = api.namespace(f"hpa-{kubectl.tag}")
    _, plural, _, body = next(row for row in _ALL_CATEGORY if row[1] == "deployments")
    api.ok("POST", f"/apis/apps/v1/namespaces/{namespace}/{plural}", body)
    kubectl.ok("autoscale", "deployment", "d", "--max=5", "--cpu-percent=60", "-n", namespace)
    template = "{.apiVersion} {.spec.targetCPUUtilizationPercentage}"
    v1 = kubectl.ok(
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "d",
        "-n",
        namespace,
        "-o",
        f"jsonpath={template}",
    )
    assert v1 == "autoscaling/v1 60"
    template = "{.apiVersion} {.spec.metrics[0].resource.target.averageUtilization}"
    v2 = kubectl.ok("get", "hpa", "d", "-n", namespace, "-o", f"jsonpath={template}")
    assert v2 == "autoscaling/v2 60"


def test_discovery_is_read_as_the_aggregated_document_the_version_asks_for(
    kubectl: Kubectl, api: Api
) -> None:
    """kubectl 1.27+ asks /api and /apis for an APIGroupDiscoveryList; with -v=6 it logs each
    request, and no /apis/GROUP/VERSION request follows when the aggregated answer was used."""
    done = kubectl.run("api-resources", "-o", "name", "-v=6")
    assert done.returncode == 0, done.stderr
    fetched = [line for line in done.stderr.splitlines() if " GET " in line or 'verb="GET"' in line]
    assert any("/apis?" in line or line.rstrip().endswith("/apis") for line in fetched), fetched
    assert not [line for line in fetched if "/apis/apps/v1" in line], fetched


def test_run_then_wait_for_ready_sees_the_pod_scheduled_and_started_on_a_node(
    kubectl_on_nodes: Kubectl, cluster: Served
) -> None:
    kubectl = kubectl_on_nodes
    namespace = cluster.api.namespace(f"run-{kubectl.tag}")
    kubectl.ok("run", "web", "--image=nginx:1.25", "-n", namespace)
    # The timeout is a hang guard: the kubelet starts the pod half a second after it is bound.
    kubectl.ok("wait", "--for=condition=Ready", "pod/web", "-n", namespace, "--timeout=60s")
    header, row = (
        line.split()
        for line in kubectl.ok("get", "pods", "-o", "wide", "-n", namespace).splitlines()
    )
    assert header[:7] == [*POD_HEADER, "IP", "NODE"], header
    assert row[:3] == ["web", "1/1", "Running"], row
    assert row[5].startswith("10.244."), row
    assert row[6] in ("node-0", "node-1"), row
    pod = json.loads(kubectl.ok("get", "pod", "web", "-n", namespace, "-o", "json"))
    assert pod["spec"]["nodeName"] == row[6]
    assert pod["status"]["containerStatuses"][0]["image"] == "docker.io/library/nginx:1.25"
    # `describe` finds the pod's Events by field selectors on involvedObject.
    described = kubectl.ok("describe", "pod", "web", "-n", namespace)
    assert f"Successfully assigned {namespace}/web to {row[6]}" in described
    assert "Started container web" in described
    header = kubectl.ok("get", "events", "-n", namespace).splitlines()[0].split()
    assert header == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    # The container prints nothing: an empty log, not an error.
    assert kubectl.ok("logs", "web", "-n", namespace) == ""
    # A followed log stays open while the container runs, and ends when its kubelet stops it.
    following = subprocess.Popen(
        kubectl.argv("logs", "-f", "web", "-n", namespace),
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            following.wait(timeout=1.0)  # open: the container still runs
        # `delete` waits until the pod is gone: marked, stopped by its kubelet, deleted.
        assert kubectl.ok("delete", "pod", "web", "-n", namespace) == 'pod "web" deleted\n'
        out, err = following.communicate(timeout=KUBECTL_TIMEOUT)
    finally:
        following.kill()
        following.wait()
    assert (following.returncode, out, err) == (0, "", "")
    assert kubectl.ok("get", "pods", "-o", "name", "-n", namespace) == ""
    nodes = [line.split() for line in kubectl.ok("get", "nodes").splitlines()]
    assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [n[:3] + n[4:] for n in nodes[1:]] == [
        ["node-0", "Ready", "control-plane", "v1.33.0"],  # it runs the static pods
        ["node-1", "Ready", "<none>", "v1.33.0"],
    ]


def test_a_deployment_rolls_out_to_ready_pods_and_its_deletion_takes_them_along(
    kubectl_on_nodes: Kubectl, cluster: Served
) -> None:
    kubectl = kubectl_on_nodes
    namespace = cluster.api.namespace(f"rollout-{kubectl.tag}")
    n = ("-n", namespace)
    kubectl.ok("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", *n)
    # `rollout status` watches the Deployment until its status says every replica is updated
    # and available; its timeout is a hang guard.
    done = kubectl.ok("rollout", "status", "deployment/web", "--timeout=60s", *n)
    assert 'deployment "web" successfully rolled out' in done
    kubectl.ok("set", "image", "deployment/web", "nginx=nginx:1.27", *n)
    kubectl.ok("rollout", "status", "deployment/web", "--timeout=60s", *n)
    replica_sets = [line.split() for line in kubectl.ok("get", "rs", *n).splitlines()[1:]]
    assert sorted(rs[1:4] for rs in replica_sets) == [["0", "0", "0"], ["2", "2", "2"]]
    pods = json.loads(kubectl.ok("get", "pods", "-o", "json", *n))["items"]
    # The old pods may still be terminating, as on a cluster: the serving ones are new.
    serving = [p for p in pods if "deletionTimestamp" not in p["metadata"]]
    assert [p["spec"]["containers"][0]["image"] for p in serving] == ["nginx:1.27"] * 2
    assert all(p["status"]["phase"] == "Running" for p in serving)
    history = kubectl.ok("rollout", "history", "deployment/web", *n)
    revisions = [line.split()[0] for line in history.splitlines()[1:] if line.strip()]
    assert revisions == ["REVISION", "1", "2"], history
    # `rollout undo` writes the first template back: its ReplicaSet is current again, as
    # revision 3, and no third ReplicaSet is made.
    kubectl.ok("rollout", "undo", "deployment/web", *n)
    kubectl.ok("rollout", "status", "deployment/web", "--timeout=60s", *n)
    history = kubectl.ok("rollout", "history", "deployment/web", *n)
    revisions = [line.split()[0] for line in history.splitlines()[1:] if line.strip()]
    assert revisions == ["REVISION", "2", "3"], history
    assert len(kubectl.ok("get", "rs", "-o", "name", *n).split()) == 2
    kubectl.ok("delete", "deployment", "web", *n)
    # The garbage collector deletes the ReplicaSets at once; their pods terminate (marked,
    # stopped by the kubelet half a second later, then deleted), as on a cluster.
    assert kubectl.ok("get", "rs", "-o", "name", *n) == ""
    deadline = time.monotonic() + KUBECTL_TIMEOUT  # a hang guard
    while (left := kubectl.ok("get", "pods", "-o", "name", *n)) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL * 10)
    assert left == ""


def test_cascade_orphan_keeps_the_dependents_and_foreground_deletes_them_first(
    kubectl_on_nodes: Kubectl, cluster: Served
) -> None:
    kubectl = kubectl_on_nodes
    namespace = cluster.api.namespace(f"cascade-{kubectl.tag}")
    n = ("-n", namespace)
    kubectl.ok("create", "deployment", "kept", "--image=nginx:1.25", "--replicas=1", *n)
    kubectl.ok("delete", "deployment", "kept", "--cascade=orphan", *n)
    assert kubectl.ok("get", "deployments", "-o", "name", *n) == ""
    (replica_set,) = kubectl.ok("get", "rs", "-o", "name", *n).split()
    assert replica_set.startswith("replicaset.apps/kept-")
    owners = kubectl.ok("get", replica_set, "-o", "jsonpath={.metadata.ownerReferences}", *n)
    assert owners == ""
    kubectl.ok("create", "deployment", "gone", "--image=nginx:1.25", "--replicas=1", *n)
    # kubectl waits until the Deployment is gone: in the foreground, that is after its
    # ReplicaSet and the ReplicaSet's pod (terminated by its kubelet first).
    kubectl.ok("delete", "deployment", "gone", "--cascade=foreground", "--timeout=60s", *n)
    assert kubectl.ok("get", "rs", "-o", "name", *n).split() == [replica_set]
    pods = kubectl.ok("get", "pods", "-o", "name", *n).split()
    assert [pod for pod in pods if pod.startswith("pod/gone-")] == []


def test_an_exposed_deployment_lists_its_ready_pods_as_endpoints(
    kubectl_on_nodes: Kubectl, cluster: Served
) -> None:
    kubectl = kubectl_on_nodes
    namespace = cluster.api.namespace(f"expose-{kubectl.tag}")
    n = ("-n", namespace)
    kubectl.ok("create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=8080", *n)
    kubectl.ok("expose", "deployment", "web", "--port=80", "--target-port=8080", *n)
    kubectl.ok("rollout", "status", "deployment/web", "--timeout=60s", *n)
    pods = json.loads(kubectl.ok("get", "pods", "-o", "json", *n))["items"]
    ips = sorted(p["status"]["podIP"] for p in pods)
    header, row = (line.split() for line in kubectl.ok("get", "endpoints", "web", *n).splitlines())
    assert header == ["NAME", "ENDPOINTS", "AGE"]
    assert sorted(row[1].split(",")) == [f"{ip}:8080" for ip in ips]
    header, row = (
        line.split()
        for line in kubectl.ok(
            "get", "endpointslices", "-l", "kubernetes.io/service-name=web", *n
        ).splitlines()
    )
    assert header == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert row[0].startswith("web-")
    assert row[1:3] == ["IPv4", "8080"]
    assert sorted(row[3].split(",")) == ips


def test_create_token_auth_whoami_and_can_i_answer_as_a_cluster_admin(
    kubectl: Kubectl, api: Api
) -> None:
    namespace = f"auth-{kubectl.tag}"
    api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    api.ok("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "ci"}})
    issued = kubectl.ok("create", "token", "ci", "-n", namespace, "--duration", "1h").strip()
    review = api.ok(
        "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {"spec": {"token": issued}}
    )
    assert review["status"]["user"]["username"] == f"system:serviceaccount:{namespace}:ci"
    missing = kubectl.run("create", "token", "nobody", "-n", namespace)
    assert missing.returncode != 0
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    assert kubectl.ok("auth", "can-i", "create", "pods", "-n", namespace).strip() == "yes"
    if kubectl.version != "1.27":  # 1.27 asks for SelfSubjectReview v1alpha1 or v1beta1 only
        assert "kubernetes-admin" in kubectl.ok("auth", "whoami")


def test_kube_system_runs_a_clusters_pods_and_sets_roll_out(
    kubectl_on_nodes: Kubectl, cluster: Served, tmp_path: Path
) -> None:
    kubectl = kubectl_on_nodes
    # They start half a second after the server does; the timeout is a hang guard.
    kubectl.ok(
        "wait", "--for=condition=Ready", "pods", "--all", "-n", "kube-system", "--timeout=60s"
    )
    system = [line.split() for line in kubectl.ok("get", "pods", "-n", "kube-system").splitlines()]
    names = sorted(row[0] for row in system[1:])
    assert [n for n in names if n.endswith("-node-0")] == [
        "etcd-node-0",
        "kube-apiserver-node-0",
        "kube-controller-manager-node-0",
        "kube-scheduler-node-0",
    ]
    assert sum(n.startswith("coredns-") for n in names) == 2
    assert sum(n.startswith("kube-proxy-") for n in names) == 2  # one per node
    assert {row[2] for row in system[1:]} == {"Running"}
    assert "kubernetes" in kubectl.ok("get", "services", "-n", "default", "-o", "name")
    namespace = cluster.api.namespace(f"sets-{kubectl.tag}")
    n = ("-n", namespace)
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    }
    selector = {"matchLabels": {"app": "x"}}
    manifests = [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": selector,
                "template": template,
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {"selector": selector, "template": template},
        },
    ]
    path = tmp_path / "sets.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))
    kubectl.ok("apply", "-f", str(path), *n)
    done = kubectl.ok("rollout", "status", "statefulset/db", "--timeout=60s", *n)
    assert "partitioned roll out complete" in done or "roll out complete" in done, done
    done = kubectl.ok("rollout", "status", "daemonset/agent", "--timeout=60s", *n)
    assert 'daemon set "agent" successfully rolled out' in done, done
    pods = kubectl.ok("get", "pods", "-o", "name", *n).split()
    assert {"pod/db-0", "pod/db-1"} <= set(pods)
    assert len(pods) == 4  # two ordinals, one daemon pod per node
    kubectl.ok("set", "image", "statefulset/db", "main=nginx:1.27", *n)
    kubectl.ok("rollout", "status", "statefulset/db", "--timeout=60s", *n)
    history = kubectl.ok("rollout", "history", "statefulset/db", *n)
    assert [line.split()[0] for line in history.splitlines()[1:] if line.strip()] == [
        "REVISION",
        "1",
        "2",
    ], history


def test_top_reads_the_metrics_api_for_nodes_and_running_pods(kubectl_on_nodes: Kubectl) -> None:
    kubectl = kubectl_on_nodes
    kubectl.ok(
        "wait", "--for=condition=Ready", "pods", "--all", "-n", "kube-system", "--timeout=60s"
    )
    nodes = [line.split() for line in kubectl.ok("top", "nodes").splitlines()]
    assert nodes[0][:2] == ["NAME", "CPU(cores)"], nodes[0]  # then CPU% or CPU(%), by version
    assert [row[0] for row in nodes[1:]] == ["node-0", "node-1"]
    pods = [line.split() for line in kubectl.ok("top", "pods", "-n", "kube-system").splitlines()]
    assert pods[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert "etcd-node-0" in [row[0] for row in pods[1:]]
    assert all(row[1].endswith("m") and row[2].endswith("Mi") for row in pods[1:]), pods


def test_apiservices_list_the_served_apis_and_the_metrics_api_is_waited_for(
    kubectl_on_nodes: Kubectl,
) -> None:
    """What a CI script runs before ``kubectl top``: wait for the metrics APIService."""
    kubectl = kubectl_on_nodes
    kubectl.ok(
        "wait", "--for=condition=Available", "apiservice/v1beta1.metrics.k8s.io", "--timeout=60s"
    )
    rows = [line.split() for line in kubectl.ok("get", "apiservices").splitlines()]
    assert rows[0] == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    by_name = {row[0]: row[1:3] for row in rows[1:]}
    assert by_name["v1beta1.metrics.k8s.io"] == ["kube-system/metrics-server", "True"]
    assert by_name["v1.apps"] == ["Local", "True"]
    assert by_name["v1."] == ["Local", "True"]


@pytest.fixture(params=_binary_params())
def kubectl_on_own_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kubectl]:
    """A cluster of two nodes for one test alone: draining a node would change where the
    shared cluster's later pods go."""
    workdir = tmp_path / "server"
    workdir.mkdir()
    with _serving(workdir, "--nodes", "2") as server:
        yield _kubectl_for(request, server, tmp_path)


def test_drain_cordons_and_evicts_through_the_disruption_budget(
    kubectl_on_own_cluster: Kubectl,
) -> None:
    kubectl = kubectl_on_own_cluster
    kubectl.ok("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3")
    kubectl.ok("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl.ok("create", "pdb", "web", "--selector=app=web", "--min-available=1")
    budget = kubectl.ok("get", "pdb", "web").splitlines()
    assert budget[0].split() == [
        "NAME",
        "MIN",
        "AVAILABLE",
        "MAX",
        "UNAVAILABLE",
        "ALLOWED",
        "DISRUPTIONS",
        "AGE",
    ]
    assert budget[1].split()[:4] == ["web", "1", "N/A", "2"]
    drained = kubectl.run("drain", "node-1", "--ignore-daemonsets", "--timeout=60s")
    assert drained.returncode == 0, drained.stdout + drained.stderr
    assert "node/node-1 drained" in drained.stdout, drained.stdout
    assert "evicted" in drained.stdout
    # The node is cordoned, and the replacements the ReplicaSet made went elsewhere.
    assert "SchedulingDisabled" in _rows(kubectl.ok("get", "nodes"), "node-1")[0]
    pods = json.loads(kubectl.ok("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    serving = [p for p in pods if "deletionTimestamp" not in p["metadata"]]
    assert len(serving) == 3
    assert {p["spec"]["nodeName"] for p in serving} == {"node-0"}
    kubectl.ok("uncordon", "node-1")
    assert "SchedulingDisabled" not in _rows(kubectl.ok("get", "nodes"), "node-1")[0]
