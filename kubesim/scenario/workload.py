"""The workload's kinds: which resources a scenario's steps write, and the objects they write.

A store is exercised on what it lists and watches. The workload's resources are, in order:

- the ones declared (``--kinds jobs.batch,pods``, ``Setup(kinds=...)``), if any;
- else the ones the store has listed or opened a watch on (learned at each list it makes and at
  each quiescent point), leaving out the cluster's own machinery (Namespaces, CRDs,
  APIServices, Events, Leases), which a scenario does not churn under a store;
- else pods.

Each resource's objects are named ``{prefix}-{number:03d}`` with a counter of its own
(``web-007`` for pods, ``job-002``, ``svc-001``: :func:`kubesim.workload.templates.name_prefix`),
spread over the ``team-N`` namespaces, and built by :func:`kubesim.workload.templates.build`.

**Shapes.** A store that filters (one namespace, ``app=myapp``) would see nothing of objects
made for everyone. When the store's watches of a resource match none of its objects, the
workload learns their scope: new objects go into the namespaces the store watches and carry the
labels its selectors require (``=``, ``==`` and ``in`` take their first value; an existence
requirement gets a value). The run then creates a starting set in that scope, so the store has
something to hold from the first step on.
"""

from __future__ import annotations

import itertools
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubesim._core.words import did_you_mean
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.status import StatusError
from kubesim.workload.manifests import parse_pinned, pinned_in, resource_name
from kubesim.workload.pods import TIERS
from kubesim.workload.templates import TEMPLATES, build, name_prefix

Key = tuple[str, str]
JSON = dict[str, Any]

# Resources a learned workload leaves alone: the cluster's machinery, not a store's data.
INFRASTRUCTURE = frozenset(
    {
        "namespaces",
        "customresourcedefinitions.apiextensions.k8s.io",
        "apiservices.apiregistration.k8s.io",
        "events",
        "events.events.k8s.io",
        "leases.coordination.k8s.io",
        "componentstatuses",
    }
)


# A list's path: /api/v1[/namespaces/NS]/PLURAL or /apis/GROUP/VERSION[/namespaces/NS]/PLURAL.
_LIST_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)/?$"
)


class ListScope:
    """What a list request asked for (its resource, namespace and selectors), in the shape of a
    watch's scope, so the workload learns from a store that polls as from one that watches."""

    def __init__(
        self, resource: Any, namespace: str | None, label_selector: Any, field_selector: Any
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector

    @classmethod
    def of(cls, server: APIServer, path: str, query: str) -> ListScope | None:
        """The scope of a list at ``path``; None for any other request, or an unknown one."""
        from kubesim.apiserver.selectors import FieldSelector, LabelSelector, SelectorError

        match = _LIST_PATH.match(path)
        if match is None:
            return None
        group, version = match["group"] or "", match["version"] or "v1"
        resource = server.resource_types.lookup(group, version, match["plural"])
        if resource is None:
            return None
        parameters = urllib.parse.parse_qs(query)
        try:
            labels = LabelSelector.parse(parameters.get("labelSelector", [""])[0])
            fields = FieldSelector.parse(parameters.get("fieldSelector", [""])[0])
        except SelectorError:
            return None  # the server answers it with a 400: nothing to learn
        return cls(resource, match["namespace"], labels, fields)

    def matches(self, key: Key, stored: Any) -> bool:
        if self.namespace is not None and key[0] != self.namespace:
            return False
        if not self.label_selector.matches(stored.obj["metadata"].get("labels")):
            return False
        return self.field_selector.empty() or bool(
            self.field_selector.matches(self.resource.fields_of(stored.obj))
        )


class Shape:
    """Where the store looks for objects of one resource: namespaces and required labels."""

    def __init__(self, namespaces: tuple[str, ...] | None, labels: Mapping[str, str]) -> None:
        self.namespaces = namespaces
        self.labels = dict(labels)

    def holds(self, key: Key, obj: Mapping[str, Any]) -> bool:
        """Whether an object is where this shape puts new ones."""
        if self.namespaces is not None and key[0] not in self.namespaces:
            return False
        labels = obj["metadata"].get("labels") or {}
        return all(labels.get(k) == v for k, v in self.labels.items())

    def __repr__(self) -> str:
        return f"Shape(namespaces={self.namespaces}, labels={self.labels})"


class Workload:
    """The resources a scenario writes and how it names and builds their objects."""

    def __init__(
        self,
        server: APIServer,
        *,
        namespaces: int,
        declared: Sequence[str] = (),
        models: Iterable[JSON] = (),
        pinned: Iterable[str] = (),
    ) -> None:
        self.server = server
        self.namespaces = namespaces
        self._learned: list[str] = []
        self._counters: dict[str, itertools.count[int]] = {}
        self._shapes: dict[str, Shape] = {}
        self._refused: dict[Any, str | None] = {}
        # The objects of each kind in the user's starting world: what new ones clone, in turn,
        # into the namespaces they are in.
        self._models: dict[tuple[str, str], list[JSON]] = {}
        models = list(models)
        for obj in models:
            self._models.setdefault((obj["apiVersion"], obj["kind"]), []).append(obj)
        # The objects no step deletes or terminates, by (resource, key); a reference to a
        # resource the server does not serve is named like an unknown kind.
        self._pinned: set[tuple[str, Key]] = set()
        for reference in (*pinned, *pinned_in(models)):
            named, namespace, name = parse_pinned(reference)
            resource = self._served(named, "pinned")
            self._pinned.add((resource.plural, (namespace if resource.namespaced else "", name)))
        self.declared: list[str] = []
        self.declare(declared)

    def declare(self, names: Sequence[str]) -> None:
        """The workload writes these resources (and only these) from now on. A name the server
        does not serve, or a kind kubesim cannot build, is a ValueError naming it."""
        from kubesim.workload.templates import NoTemplate

        declared = []
        for name in names:
            resource = self._served(name, "kinds")
            refused = self._refusal(resource)
            if refused is not None:
                raise NoTemplate(
                    f"kinds: kubesim has no template for {name!r} and the server refuses a bare "
                    f"one ({refused}): give one such object in the starting world (--objects "
                    "FILE.yaml, Setup(objects=[...])) and the workload clones it"
                )
            declared.append(resource_name(resource))
        self.declared = declared

    def _served(self, name: str, what: str) -> Any:
        try:
            return self.server.resource(name)
        except KeyError as exc:
            served = [
                f"{resource.plural}.{resource.group}" if resource.group else resource.plural
                for resource in self.server.resources
            ]
            hint = did_you_mean(name, served)
            raise ValueError(
                f"{what}: the server serves no resource {name!r}{hint} (a custom resource "
                "needs its CustomResourceDefinition in the starting objects)"
            ) from exc

    # -- which resources ---------------------------------------------------------------------
    def resources(self) -> list[str]:
        if self.declared:
            return list(self.declared)
        return list(self._learned) or ["pods"]

    def learn(self, watchers: Iterable[Any]) -> None:
        """The store's watches, as seen at a quiescent point: their resources join the workload
        (pods first, then in the order first seen); a resource whose watches see none of its
        objects when it is first seen gets a :class:`Shape`."""
        scopes: dict[str, list[Any]] = {}
        for watcher in watchers:
            name = resource_name(watcher.resource)
            if name in INFRASTRUCTURE or self._refusal(watcher.resource) is not None:
                continue
            scopes.setdefault(name, []).append(watcher)
        for name, scope in scopes.items():
            if name in self._learned:
                continue  # shaped when first seen only: a scope emptied later by deletes is not
            self._learned.append(name)
            if not self._matched(name, scope):
                self._shapes[name] = _shape(scope, self.namespaces)
        self._learned.sort(key=lambda name: name != "pods")  # stable: pods first

    def _refusal(self, resource: Any) -> str | None:
        """Why the workload cannot write ``resource`` (None: it can): the server's answer to a
        dry run of the object it would build, for a kind with no template, schema or model."""
        if (
            (resource.group, resource.plural) in TEMPLATES
            or resource.openapi_schema is not None
            or self._models.get((resource.api_version, resource.kind))
        ):
            return None
        if resource.review or resource.metrics or resource.stored_as is not None:
            return "it stores no objects"
        if resource not in self._refused:
            namespace = "default" if resource.namespaced else None
            trial = build(resource, "kubesim-trial", namespace, 0, {"app": "web"})
            try:
                self.server.create(resource, trial, namespace=namespace, dry_run=True)
                self._refused[resource] = None
            except StatusError as exc:
                self._refused[resource] = str(exc)
        return self._refused[resource]

    def _matched(self, name: str, scope: Sequence[Any]) -> bool:
        resource = self.server.resource(name)
        return any(
            watcher.matches(key, stored)
            for key, stored in self.server.storage.items(resource)
            for watcher in scope
        )

    def shaped(self) -> list[str]:
        """The resources whose objects are made to fit the store's scope."""
        return [name for name in self.resources() if name in self._shapes]

    # -- objects -----------------------------------------------------------------------------
    def live(self, name: str) -> list[Key]:
        """The objects of ``name`` the steps act on, in key order: all of them, or for a shaped
        resource the ones still in the store's scope (an object whose labels a step changed
        out of it has left the store's world)."""
        items = self.server.storage.items(self.server.resource(name))
        shape = self._shapes.get(name)
        if shape is None:
            return [key for key, _ in items]
        return [key for key, stored in items if shape.holds(key, stored.obj)]

    def deletable(self, name: str) -> list[Key]:
        """The objects of ``name`` a step may delete or terminate: :meth:`live` but the pinned
        ones (``Setup(pinned=...)``, the ``kubesim/pinned`` annotation)."""
        live = self.live(name)
        if not self._pinned:
            return live
        plural = self.server.resource(name).plural
        return [key for key in live if (plural, key) not in self._pinned]

    def new_key(self, name: str, number: int | None = None) -> Key:
        """A fresh key for ``name``: the next number of its own counter (pods pass theirs)."""
        resource = self.server.resource(name)
        if number is None:
            number = next(self._counters.setdefault(name, itertools.count()))
        shape = self._shapes.get(name)
        models = self._models.get((resource.api_version, resource.kind), [])
        if not resource.namespaced:
            namespace = ""
        elif shape is not None and shape.namespaces:
            namespace = shape.namespaces[number % len(shape.namespaces)]
            self._ensure_namespace(namespace)
        elif models:
            namespace = models[number % len(models)]["metadata"].get("namespace") or "default"
        else:
            namespace = f"team-{number % self.namespaces}"
        return (namespace, f"{name_prefix(resource)}-{number:03d}")

    def new_object(self, name: str, key: Key) -> JSON:
        """A new object for ``key``: a clone of the user's objects of its kind in turn (their
        labels kept), else a template labelled like the workload's pods; either way carrying
        the labels the store's selector requires."""
        resource = self.server.resource(name)
        number = _number(key[1])
        shape = self._shapes.get(name)
        required = shape.labels if shape is not None else {}
        models = self._models.get((resource.api_version, resource.kind))
        if models:
            model = models[number % len(models)]
            return build(resource, key[1], key[0] or None, number, dict(required), model=model)
        labels = {"app": "web", "tier": TIERS[number % 2], **required}
        return build(resource, key[1], key[0] or None, number, labels)

    def create(self, name: str, key: Key) -> None:
        self.server.create(name, self.new_object(name, key), namespace=key[0] or None, copy=False)

    def _ensure_namespace(self, namespace: str) -> None:
        namespaces = self.server.resource("namespaces")
        if self.server.storage.get(namespaces, ("", namespace)) is None:
            self.server.create("namespaces", {"metadata": {"name": namespace}}, copy=False)


def _number(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _shape(scope: Sequence[Any], namespaces: int) -> Shape:
    """Where new objects must go for ``scope`` (the store's watches of one resource) to see
    them: its namespaces when every watch names one, the labels the first one requires."""
    watched = {watcher.namespace for watcher in scope}
    teams = {f"team-{n}" for n in range(namespaces)}
    chosen: tuple[str, ...] | None = None
    if None not in watched and not watched & teams:
        chosen = tuple(sorted(str(ns) for ns in watched))
    labels: dict[str, str] = {}
    for requirement in scope[0].label_selector.requirements():
        if requirement.operator in ("=", "==", "in") and requirement.values:
            labels[requirement.key] = requirement.values[0]
        elif requirement.operator == "exists":
            labels[requirement.key] = "kubesim"
    return Shape(chosen, labels)
