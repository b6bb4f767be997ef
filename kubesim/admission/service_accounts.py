"""The ServiceAccount admission plugin: every pod runs as an account that exists.

On a cluster, kube-controller-manager's serviceaccounts-controller creates ``default`` in each
new namespace and creates it again when it is deleted (pkg/controller/serviceaccount/
serviceaccounts_controller.go); the ServiceAccount admission plugin
(plugin/pkg/admission/serviceaccount/admission.go) names it in every pod that names none, and
refuses a pod whose account does not exist (403). Tests written for a real cluster wait for
``default`` before they create pods. The plugin also mounts the account's token: a projected
``kube-api-access-*`` volume in the pod, mounted read-only by every container.

kubesim runs it when the server is built with ``service_accounts=True`` (``kubesim serve``
does): right after the write that calls for it, under the same lock, as the next write, so a
client that lists ServiceAccounts after creating a namespace finds ``default``, and a run stays
a function of its seed. Simulations leave it off by default: each ServiceAccount is a write in
the trace, and stores under test rarely watch them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesim.apiserver import status as st

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
# The lifetime the plugin asks for its tokens (WarnOnlyBoundTokenExpirationSeconds): an hour
# and 7 s, the odd 7 s being how the API server recognises a token it mounted itself, whose use
# past the hour it only warns about.
TOKEN_EXPIRATION_SECONDS = 3607


def admit_pod(
    server: APIServer,
    pod: JSON,
    namespace: str,
    sent_name: str,
    volume_name: Callable[[str], str],
) -> None:
    """A new pod runs as ``spec.serviceAccountName`` (``default`` when it names none), which
    must exist; ``spec.serviceAccount``, the deprecated alias, says the same (the v1 conversion
    fills it in). ``pod["spec"]`` is the server's own copy; ``sent_name`` is the name the pod
    was sent with (its ``generateName`` when the server makes the name), which a refusal names."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    annotations = pod["metadata"].get("annotations")
    if isinstance(annotations, dict) and MIRROR_ANNOTATION in annotations:
        return  # a kubelet's mirror of a static pod runs as no account (the plugin skips it)
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
    accounts = server.lookup("", "v1", "serviceaccounts")
    if accounts is None:
        return
    stored = server.storage.get(accounts, (namespace, str(name)))
    if stored is None:
        raise st.forbidden(
            "pods",
            "",
            sent_name,
            f"error looking up service account {namespace}/{name}: "
            f'serviceaccount "{name}" not found',
        )
    spec["serviceAccountName"] = name
    spec["serviceAccount"] = name
    account = stored.obj
    if _automounts(account, spec):
        _mount_token(spec, volume_name)
    pull_secrets = account.get("imagePullSecrets")
    if not spec.get("imagePullSecrets") and isinstance(pull_secrets, list) and pull_secrets:
        spec["imagePullSecrets"] = [
            {"name": ref.get("name", "")} for ref in pull_secrets if isinstance(ref, dict)
        ]


def _automounts(account: JSON, spec: JSON) -> bool:
    """The pod's ``automountServiceAccountToken`` wins, then the account's; true if neither
    says (shouldAutomount)."""
    for says in (
        spec.get("automountServiceAccountToken"),
        account.get("automountServiceAccountToken"),
    ):
        if isinstance(says, bool):
            return says
    return True


def _mount_token(spec: JSON, volume_name: Callable[[str], str]) -> None:
    """mountServiceAccountToken: every container (init containers first) that mounts nothing at
    the token path mounts the ``kube-api-access-<5 letters>`` projected volume there read-only,
    and the pod gets that volume unless it has one of that prefix already (whose name the
    mounts then use). ``spec`` is the server's copy; its lists and containers may still be the
    client's, so each is copied before it changes."""
    volumes = spec.get("volumes")
    volumes = volumes if isinstance(volumes, list) else []
    existing = next(
        (
            volume["name"]
            for volume in volumes
            if isinstance(volume, dict)
            and str(volume.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)
        ),
        None,
    )
    name = existing or volume_name(TOKEN_VOLUME_PREFIX)
    mount = {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    mounted = False
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        copied = []
        for container in containers:
            if isinstance(container, dict) and not _mounts_token_path(container):
                mounts = container.get("volumeMounts")
                mounts = mounts if isinstance(mounts, list) else []
                container = {**container, "volumeMounts": [*mounts, dict(mount)]}
                mounted = True
            copied.append(container)
        spec[field] = copied
    if mounted and existing is None:
        spec["volumes"] = [*volumes, {"name": name, "projected": _token_volume_source()}]


def _mounts_token_path(container: JSON) -> bool:
    mounts = container.get("volumeMounts")
    return isinstance(mounts, list) and any(
        isinstance(mount, dict) and mount.get("mountPath") == TOKEN_MOUNT_PATH for mount in mounts
    )


def _token_volume_source() -> JSON:
    """TokenVolumeSource: a bound token, the cluster's CA bundle and the namespace, in the
    order and with the explicit ``defaultMode`` (0644) the plugin writes."""
    return {
        "sources": [
            {
                "serviceAccountToken": {
                    "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                    "path": "token",
                }
            },
            {
                "configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
        "defaultMode": 0o644,
    }


class ServiceAccountAdmission:
    """The ServiceAccount plugin in a server's admission chain (pods only)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        # Token volume names from a stream of their own: the names the server generates for
        # objects do not move.
        self._token_volume_choices = server.choices.fork("serviceAccountTokenVolume")

    def token_volume_name(self, prefix: str) -> str:
        return self.server.registry.generate_name(prefix, self._token_volume_choices)

    def admit_create(
        self, resource: ResourceType, obj: JSON, namespace: str, sent_name: str
    ) -> None:
        if resource.group == "" and resource.kind == "Pod":
            admit_pod(self.server, obj, namespace, sent_name, self.token_volume_name)

    def admit_update(
        self, resource: ResourceType, old: JSON, obj: JSON, subresource: str | None
    ) -> None:
        """A pod's service account cannot change: nothing to admit."""
