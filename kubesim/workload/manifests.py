"""A starting world from manifests, as ``kubectl apply -f`` takes them.

``kubesim check --objects world.yaml`` and ``Setup(objects=[...])`` give the server these
objects before the store starts: YAML (several documents, ``---``) or JSON, ``kind: List``
flattened. They are created in the order a careful ``kubectl apply`` needs: CustomResource
Definitions first (their kinds are then served), then Namespaces, then the rest in file order.
A namespace an object names that no manifest creates is created for it, so one file of
Deployments in ``shop`` is enough.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

JSON = dict[str, Any]

# Created first, in this order: a CRD makes its kind servable; a Namespace holds the rest.
_FIRST = ("CustomResourceDefinition", "Namespace")


class InvalidObjects(ValueError):
    """A starting-world object that cannot be used: which one, and what was expected."""


# A starting object with this annotation set to "true" is pinned: the workload's steps never
# delete or terminate it (the pod a store's own process runs in, a Namespace it needs). What it
# clones for new objects of the kind does not carry the annotation.
PINNED_ANNOTATION = "kubesim/pinned"


def pinned_in(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """The references (``KIND/NAMESPACE/NAME``, ``KIND/NAME`` when cluster-scoped) of the
    objects annotated :data:`PINNED_ANNOTATION` ``"true"``."""
    found = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (meta.get("annotations") or {}).get(PINNED_ANNOTATION) == "true":
            namespace = meta.get("namespace")
            parts = [str(obj.get("kind")), *([namespace] if namespace else []), meta["name"]]
            found.append("/".join(parts))
    return found


def parse_pinned(reference: str) -> tuple[str, str, str]:
    """``RESOURCE/NAMESPACE/NAME`` or ``RESOURCE/NAME`` as (resource, namespace, name), the
    resource as written (a plural, a kind or a short name: the server resolves it). A
    ValueError names a reference of another shape."""
    parts = reference.split("/") if isinstance(reference, str) else []
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError(
            "Setup(pinned=...) takes references RESOURCE/NAMESPACE/NAME (or RESOURCE/NAME for a "
            f"cluster-scoped object), such as 'pods/default/ray-head'; got {reference!r}"
        )
    if len(parts) == 2:
        return parts[0], "", parts[1]
    return parts[0], parts[1], parts[2]


def load_manifests(path: str | Path) -> list[JSON]:
    """The objects in a YAML or JSON manifest file, ``List`` items flattened."""
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except OSError as exc:
        raise InvalidObjects(f"--objects: cannot read {str(file)!r}: {exc.strerror}") from exc
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML is a dependency
        documents: list[Any] = [json.loads(text)]
    else:
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise InvalidObjects(f"--objects: {_yaml_problem(str(file), exc)}") from exc
    return checked([doc for doc in documents if doc is not None], source=str(file))


def _yaml_problem(path: str, error: Exception) -> str:
    """One line for a YAML error: the file, where, and what the parser expected (PyYAML's own
    text is several lines that name the file ``"<unicode string>"``)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is None or problem is None:
        return f"{path!r} is not YAML: {error}"
    where = f"{path}:{mark.line + 1}:{mark.column + 1}"
    context = getattr(error, "context", None)
    started = getattr(error, "context_mark", None)
    if context and started is not None:
        context += f" that starts at line {started.line + 1}, column {started.column + 1}"
    return f"{where}: not YAML: {problem}" + (f" ({context})" if context else "")


def checked(objects: Iterable[Any], *, source: str = "Setup(objects=...)") -> list[JSON]:
    """``objects`` with ``List`` items flattened, each checked to be an object kubesim can
    create (``apiVersion``, ``kind``, ``metadata.name``)."""
    out: list[JSON] = []
    for index, obj in enumerate(objects):
        where = f"{source}: object {index + 1}"
        if not isinstance(obj, Mapping):
            raise InvalidObjects(f"{where} is a {type(obj).__name__}, expected a mapping")
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            out.extend(checked(obj["items"], source=f"{where} (a {obj['kind']})"))
            continue
        missing = [key for key in ("apiVersion", "kind") if not isinstance(obj.get(key), str)]
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            missing.append("metadata.name")
        if missing:
            raise InvalidObjects(
                f"{where} lacks {', '.join(missing)} (a manifest as kubectl apply -f takes it)"
            )
        out.append(dict(obj))
    return out


def creation_order(objects: Sequence[JSON]) -> list[JSON]:
    """CRDs, then Namespaces, then the rest, each group in its given order."""
    ranked = sorted(
        enumerate(objects),
        key=lambda item: (
            _FIRST.index(item[1]["kind"]) if item[1]["kind"] in _FIRST else len(_FIRST),
            item[0],
        ),
    )
    return [obj for _, obj in ranked]


def apply_manifests(server: Any, objects: Sequence[JSON]) -> list[tuple[str, str | None, str]]:
    """Create ``objects`` on ``server`` (see the module doc); returns (resource, namespace,
    name) of each, in creation order. An object the server refuses is an
    :class:`InvalidObjects` naming it and the server's reason."""
    from kubesim.apiserver.status import StatusError

    created: list[tuple[str, str | None, str]] = []
    namespaces = {key[1] for key, _ in server.storage.items(server.resource("namespaces"))}
    for obj in creation_order(objects):
        what = f"{obj['kind']} {obj['metadata']['name']!r}"
        try:
            resource = _resource_of(server, obj)
        except KeyError as exc:
            raise InvalidObjects(
                f"--objects: {what}: the server serves no {obj['kind']} in {obj['apiVersion']} "
                "(a custom resource needs its CustomResourceDefinition in the same objects)"
            ) from exc
        namespace = None
        if resource.namespaced:
            namespace = obj["metadata"].get("namespace") or "default"
            if namespace not in namespaces:
                server.create("namespaces", {"metadata": {"name": namespace}})
                namespaces.add(namespace)
        try:
            server.create(resource, obj, namespace=namespace)
        except StatusError as exc:
            raise InvalidObjects(f"--objects: the server refused {what}: {exc}") from exc
        if resource.plural == "namespaces":
            namespaces.add(obj["metadata"]["name"])
        created.append((resource_name(resource), namespace, obj["metadata"]["name"]))
    return created


def _resource_of(server: Any, obj: JSON) -> Any:
    group, _, version = obj["apiVersion"].rpartition("/")
    for resource in server.resource_types.all():
        if (
            resource.group == group
            and resource.version == version
            and resource.kind == obj["kind"]
            and resource.stored_as is None
            and not resource.review
        ):
            return resource
    raise KeyError(obj["kind"])


def resource_name(resource: Any) -> str:
    """How kubesim names a resource in the workload: ``pods``, ``jobs.batch``."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural
