"""Pod spec defaulting in full, as every pod and pod template a cluster stores carries it.

pkg/apis/core/v1/defaults.go, run by the generated defaulters on every decode of a pod and of
each workload's pod template (``SetObjectDefaults_Deployment`` and the others recurse into
``spec.template.spec``):

* ``SetDefaults_PodSpec``: ``dnsPolicy: ClusterFirst``, ``restartPolicy: Always``,
  ``securityContext: {}``, ``terminationGracePeriodSeconds: 30``,
  ``schedulerName: default-scheduler``; and for a pod itself (``SetDefaults_Pod``)
  ``enableServiceLinks: true`` and, per container, resource requests defaulted to its limits;
* ``SetDefaults_Container`` on containers, init containers and ephemeral containers:
  ``imagePullPolicy`` (``Always`` for a ``:latest`` or untagged image, else ``IfNotPresent``),
  ``terminationMessagePath: /dev/termination-log``, ``terminationMessagePolicy: File``, and the
  ``resources: {}`` Go's encoder writes for the struct; ports' ``protocol: TCP``; an env var's
  ``fieldRef.apiVersion: v1``; probes' ``timeoutSeconds: 1``, ``periodSeconds: 10``,
  ``successThreshold: 1``, ``failureThreshold: 3`` and an HTTP probe's ``path: /``,
  ``scheme: HTTP``;
* volumes: a volume with no source is an ``emptyDir``; secret, configMap, downwardAPI and
  projected volumes get ``defaultMode: 420`` (0644).

:class:`~kubesim.apiserver.server.APIServer` applies it with ``pod_spec_defaults=True``
(``kubesim serve`` does); simulations leave it off, so their pods keep the bytes (and the
memory) every recorded seed and measured figure was made with. Pods always get the spec-level
defaults of :func:`kubesim.apiserver.defaults.pod_defaults`.

Every level on the way to a changed value is copied, never written in place: a create shares
the nested values of the caller's body.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

# (group, kind) -> where its pod specs are, the pod's own first.
POD_SPECS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("", "Pod"): (("spec",),),
    ("", "PodTemplate"): (("template", "spec"),),
    ("", "ReplicationController"): (("spec", "template", "spec"),),
    ("apps", "Deployment"): (("spec", "template", "spec"),),
    ("apps", "ReplicaSet"): (("spec", "template", "spec"),),
    ("apps", "StatefulSet"): (("spec", "template", "spec"),),
    ("apps", "DaemonSet"): (("spec", "template", "spec"),),
    ("batch", "Job"): (("spec", "template", "spec"),),
    ("batch", "CronJob"): (("spec", "jobTemplate", "spec", "template", "spec"),),
}

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_DEFAULTS = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
_DEFAULT_MODE = 0o644
# Every volume source VolumeSource declares: a volume naming none of them is an emptyDir.
_VOLUME_SOURCES = frozenset(
    {
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    }
)


def apply(kind: tuple[str, str], obj: JSON) -> None:
    """Default every pod spec of ``obj`` (a ``kind``) in place, copying what it changes."""
    for path in POD_SPECS.get(kind, ()):
        spec = _copied_path(obj, path)
        if spec is not None:
            _pod_spec(spec, is_pod=kind == ("", "Pod"))


def image_pull_policy(image: Any) -> str:
    """``Always`` when the image's tag is ``latest`` or it has neither tag nor digest (docker's
    reference parsing then reads ``latest``), else ``IfNotPresent``."""
    if not isinstance(image, str) or "@" in image:
        return "IfNotPresent"
    last = image.rpartition("/")[2]  # a registry's port is not a tag
    _, colon, tag = last.partition(":")
    return "Always" if not colon or tag == "latest" else "IfNotPresent"


def _copied_path(obj: JSON, path: tuple[str, ...]) -> JSON | None:
    """The dict at ``path``, each level on the way replaced by a copy; None if one is absent."""
    here = obj
    for key in path:
        value = here.get(key)
        if not isinstance(value, dict):
            return None
        here[key] = value = dict(value)
        here = value
    return here


def _pod_spec(spec: JSON, *, is_pod: bool) -> None:
    for key, value in (
        ("dnsPolicy", "ClusterFirst"),
        ("restartPolicy", "Always"),
        ("terminationGracePeriodSeconds", 30),
        ("schedulerName", "default-scheduler"),
    ):
        if spec.get(key) in (None, ""):
            spec[key] = value
    if not isinstance(spec.get("securityContext"), dict):
        spec["securityContext"] = {}
    if is_pod and spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    for key in _CONTAINER_LISTS:
        containers = spec.get(key)
        if isinstance(containers, list):
            spec[key] = [
                _container(c, requests_from_limits=is_pod) if isinstance(c, dict) else c
                for c in containers
            ]
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        spec["volumes"] = [_volume(v) if isinstance(v, dict) else v for v in volumes]


def _container(container: JSON, *, requests_from_limits: bool) -> JSON:
    c = dict(container)
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = image_pull_policy(c.get("image"))
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    resources = c.get("resources")
    if not isinstance(resources, dict):
        c["resources"] = {}
    elif requests_from_limits and isinstance(resources.get("limits"), dict):
        requests = resources.get("requests")
        requests = dict(requests) if isinstance(requests, dict) else {}
        if any(name not in requests for name in resources["limits"]):
            for name, quantity in resources["limits"].items():
                requests.setdefault(name, quantity)
            c["resources"] = {**resources, "requests": requests}
    ports = c.get("ports")
    if isinstance(ports, list):
        c["ports"] = [
            {**p, "protocol": "TCP"} if isinstance(p, dict) and not p.get("protocol") else p
            for p in ports
        ]
    env = c.get("env")
    if isinstance(env, list):
        c["env"] = [_env_var(e) if isinstance(e, dict) else e for e in env]
    for key in _PROBES:
        probe = c.get(key)
        if isinstance(probe, dict):
            c[key] = _probe(probe)
    return c


def _env_var(var: JSON) -> JSON:
    source = var.get("valueFrom")
    if not isinstance(source, dict):
        return var
    field_ref = source.get("fieldRef")
    if not isinstance(field_ref, dict) or field_ref.get("apiVersion"):
        return var
    return {**var, "valueFrom": {**source, "fieldRef": {**field_ref, "apiVersion": "v1"}}}


def _probe(probe: JSON) -> JSON:
    p = dict(probe)
    for key, value in _PROBE_DEFAULTS:
        if not p.get(key):
            p[key] = value
    action = p.get("httpGet")
    if isinstance(action, dict):
        p["httpGet"] = {**action, "path": action.get("path") or "/"}
        p["httpGet"]["scheme"] = action.get("scheme") or "HTTP"
    return p


def _volume(volume: JSON) -> JSON:
    if _VOLUME_SOURCES.isdisjoint(volume):
        return {**volume, "emptyDir": {}}
    for key in _MODE_SOURCES:
        source = volume.get(key)
        if isinstance(source, dict) and source.get("defaultMode") is None:
            return {**volume, key: {**source, "defaultMode": _DEFAULT_MODE}}
    return volume


__all__ = ["POD_SPECS", "apply", "image_pull_policy"]
