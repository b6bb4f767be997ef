"""The verbs as the registry serves them: under the server's lock, on stored versions.

A request reaches storage through :class:`Registry` (pkg/registry/generic/registry.Store and
the strategies of each kind, in kube-apiserver): decode and check the body, default it, run
the admission chain, validate, then commit one version and tell the watch cache. Its methods
expect the caller to hold :attr:`APIServer.lock <kubesim.apiserver.server.APIServer.lock>` and
return the :class:`~kubesim.apiserver.storage.Stored` version itself, shared and never to be
mutated: the server's public verbs take the lock and hand out copies; the cluster's
controllers, already under the lock when a commit wakes them, write through these.

What a cluster adds around the core plugs in here, never by name:

- :attr:`Registry.admission`: the admission plugins (:class:`~kubesim.apiserver.extensions.
  AdmissionPlugin`), run in order on every create and update of a namespaced object;
- :attr:`Registry.after_commit`: called with every committed event once the watchers have it
  (controllers, which may write in turn);
- :attr:`Registry.kubelets`: the node agents, whose pods are deleted gracefully;
- :attr:`Registry.garbage_collector`: deletes honour ``propagationPolicy`` with finalizers.

Deletes are in :mod:`kubesim.apiserver.deletion`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesim._core import ChoiceSource, uuid4_drawer
from kubesim.apiserver import (
    conversion,
    crd_schema,
    crds,
    defaults,
    deletion,
    lifecycle,
    managed_fields,
    narrow_subresources,
    pod_spec_defaults,
    pods,
    services,
    struct_decoding,
)
from kubesim.apiserver import status as st
from kubesim.apiserver.encoding import canonical_metadata, canonical_object, deep_copy, dumps
from kubesim.apiserver.patch import PatchError, PatchTestFailed, apply_patch
from kubesim.apiserver.resources import ResourceType, generation_changed
from kubesim.apiserver.scale import apply_scale, scale_of
from kubesim.apiserver.storage import ADDED, DELETED, MODIFIED, Event, Key, Stored, object_key
from kubesim.apiserver.validation import validate_object

if TYPE_CHECKING:
    from kubesim.apiserver.extensions import AdmissionPlugin, Kubelets
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand


class Registry:
    """The verbs of one :class:`~kubesim.apiserver.server.APIServer` with its lock held."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.storage = server.storage
        self.clock = server.clock
        self.trace = server.trace
        self.watch_caches = server.watch_caches  # the server's list, replicas included
        self.commit_listeners = server.commit_listeners
        self.namespace_resource = server.resource("namespaces")
        # Every create draws a uid: bound once, to the source's fastest way of drawing one.
        self._new_uid = uuid4_drawer(server.choices.fork("uid"))
        self._name_choices = server.choices.fork("generateName")
        self._cluster_ips = defaults.cluster_ips()
        # Pods' and pod templates' defaults in full (APIServer(pod_spec_defaults=True)).
        self.pod_spec_defaults = False
        self.admission: list[AdmissionPlugin] = []
        self.after_commit: list[Callable[[Event], None]] = []
        self.kubelets: Kubelets | None = None
        self.garbage_collector = False

    def key(self, resource: ResourceType, namespace: str | None, name: str) -> Key:
        return object_key(resource, namespace, name)

    def generate_name(self, prefix: str, source: ChoiceSource | None = None) -> str:
        """``prefix`` and five characters, as apiserver's SimpleNameGenerator makes them."""
        choices = self._name_choices if source is None else source
        n = len(_GENERATE_NAME_ALPHABET) - 1
        return prefix + "".join(_GENERATE_NAME_ALPHABET[choices.integer(0, n)] for _ in range(5))

    def require_namespace(self, resource: ResourceType, namespace: str | None) -> str:
        if not resource.namespaced:
            return ""
        if not namespace:
            raise st.bad_request(
                "the server could not find the requested resource: a namespace is required"
            )
        if self.storage.get(self.namespace_resource, ("", namespace)) is None:
            raise st.not_found("namespaces", "", namespace)
        return namespace

    def commit(
        self,
        resource: ResourceType,
        key: Key,
        event_type: str,
        obj: JSON,
        old: Stored | None,
        *,
        dry_run: bool = False,
        shared: bool = False,
    ) -> Stored:
        """Store ``obj`` as the next version of ``key`` and tell the watchers.

        ``shared``: ``obj`` is new only at its top level and in ``metadata``, and shares nested
        values with a caller's body (a create); then only its encoding is kept, so the stored
        version cannot change when the caller later mutates what it sent.
        """
        # The handlers run the field manager before storage, dry run or not.
        if self.server.field_manager is not None and event_type != DELETED:
            managed_fields.record_update(
                None if old is None else old.obj,
                obj,
                self.server.field_manager,
                self.clock.timestamp(),
            )
        elif "managedFields" in obj["metadata"] and event_type != DELETED:
            managed_fields.normalize(obj)  # a client's own entries: [{}] clears them
        if dry_run:
            # dryRun=All: validated and answered as the write would be, never stored, no event,
            # no resourceVersion spent. A created object is answered as it was sent (the dry-run
            # storage copies it out without etcd's stamp): no resourceVersion, which Go's
            # omitempty leaves out, unless the client sent one. An update keeps the stored one.
            meta = obj["metadata"]
            if old is not None:
                meta["resourceVersion"] = str(old.rv)
            elif not meta.get("resourceVersion"):
                meta.pop("resourceVersion", None)
            rv = 0 if old is None else old.rv
            return Stored.encoded(_encode_body(obj), rv) if shared else Stored(obj, rv)
        rv = self.storage.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        # Encoded before anything changes: a body orjson cannot encode leaves no trace.
        stored = Stored.encoded(_encode_body(obj), rv) if shared else Stored(obj, rv)
        event = self.storage.write(resource, key, event_type, stored, old)
        if self.commit_listeners:  # no allocation per write when nobody listens
            for commit_listener in list(self.commit_listeners):
                commit_listener(event)
        # The checksum pins the content (uids, labels, timestamps), not just the shape of a write.
        self.trace.record(
            "write", event_type, resource.plural, key[0], key[1], rv, zlib.crc32(stored.json())
        )
        for cache in self.watch_caches:
            cache.process_event(event)
        self.server.notify_changed()
        if crds.is_crd_resource(resource):
            crds.sync(self.server, event)
        for hook in self.after_commit:
            hook(event)
        return stored

    def check_body(self, resource: ResourceType, obj: Any, namespace: str | None) -> JSON:
        if not isinstance(obj, dict):
            raise st.bad_request(
                f"the body of the request must be a {resource.kind} object, "
                f"got {type(obj).__name__}"
            )
        kind = obj.get("kind")
        if kind not in (None, "", resource.kind):
            raise st.bad_request(
                f"the kind of the provided object ({kind}) does not match the resource "
                f"({resource.kind})"
            )
        api_version = obj.get("apiVersion")
        if api_version not in (None, "", resource.api_version):
            raise st.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({resource.api_version})"
            )
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        body_namespace = (meta or {}).get("namespace")
        if resource.namespaced and body_namespace and namespace and body_namespace != namespace:
            raise st.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        return obj

    def invalid_if(self, resource: ResourceType, obj: JSON) -> None:
        causes = validate_object(resource, obj)
        if resource.openapi_schema is not None:
            causes += crd_schema.validate(obj, dict(resource.openapi_schema))
        if causes:
            name = obj.get("metadata", {}).get("name") or ""
            raise st.invalid(resource.kind, resource.group, str(name), causes)

    def create(
        self, resource: ResourceType, obj: Any, namespace: str | None, *, dry_run: bool = False
    ) -> Stored:
        kind = (resource.group, resource.kind)
        on_write = defaults.ON_WRITE.get(kind)
        on_create = defaults.ON_CREATE.get(kind)
        # No deep copy of the body: its top level and metadata are copied here, every nested
        # value is read, never written (pods' defaults copy what they change), and the commit
        # keeps only the encoding. Kinds whose defaults write in place get a private copy.
        schema = resource.openapi_schema
        templates = defaults.TEMPLATE_METADATA.get(kind)
        private = (
            on_create is not None
            or (on_write is not None and kind not in defaults.COPY_ON_WRITE)
            or schema is not None  # a custom resource is pruned and defaulted in place
            or templates is not None
        )
        body = self.check_body(resource, deep_copy(obj) if private else obj, namespace)
        meta: JSON = dict(body.get("metadata") or {})
        # Built in canonical order (encoding.canonical_object) from the start: kind, apiVersion
        # and metadata first, the rest in the order sent; metadata is ordered last, below.
        obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        obj.update(body)
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        obj["metadata"] = meta
        if schema is not None:
            crd_schema.coerce(obj, dict(schema))  # as the request is decoded
        if resource.namespaced:
            if namespace is None:
                namespace = meta.get("namespace") or None
            namespace = self.require_namespace(resource, namespace)
        else:
            namespace = None
        # Admission refuses an object by the name it was sent with: a generateName prefix
        # when the server is to make the name (admission runs before the name is generated,
        # so a refused pod of a ReplicaSet is `pods "web-6d4cf56db6-" is forbidden`).
        sent_name = str(meta.get("name") or meta.get("generateName") or "")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self.generate_name(str(meta["generateName"]))
        self.invalid_if(resource, obj)
        key = self.key(resource, namespace, meta["name"])
        sent_rv = meta.get("resourceVersion")
        if not dry_run and _nonzero_resource_version(sent_rv):
            # etcd3 store.Create, before it looks for the key; not an API error, so a bare 500.
            raise st.unknown(500, "resourceVersion should not be set on objects to be created")
        if self.storage.get(resource, key) is not None:
            raise st.already_exists(resource.plural, resource.group, meta["name"])
        if namespace is not None:
            lifecycle.admit_create(self.server, resource, namespace, sent_name)
        if not _SERVER_OWNED_METADATA.isdisjoint(meta):
            for owned in _SERVER_OWNED_METADATA:  # the server's, whatever the client sent
                meta.pop(owned, None)
        if namespace is not None:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = self._new_uid()
        # Stamped when committed; set now so that it takes its place in ObjectMeta's order.
        meta["resourceVersion"] = sent_rv if dry_run and isinstance(sent_rv, str) else ""
        meta["creationTimestamp"] = self.clock.timestamp()
        if resource.generation_fields:
            meta["generation"] = 1
        if on_write is not None:
            on_write(obj)
        if templates is not None:
            defaults.template_creation_timestamps(obj, templates)
        if self.pod_spec_defaults:
            pod_spec_defaults.apply(kind, obj)
        if on_create is not None:
            on_create(obj, self._cluster_ips)
        if self.admission and namespace is not None:
            for plugin in self.admission:
                plugin.admit_create(resource, obj, namespace, sent_name)
        lifecycle.prepare_for_create(resource, obj)
        obj["metadata"] = canonical_metadata(obj["metadata"])
        return self.commit(resource, key, ADDED, obj, None, dry_run=dry_run, shared=True)

    def get(self, resource: ResourceType, namespace: str | None, name: str) -> Stored:
        stored = self.storage.get(resource, self.key(resource, namespace, name))
        if stored is None:
            raise st.not_found(resource.plural, resource.group, name)
        return stored

    # -- /scale (kubesim.apiserver.scale) ----------------------------------------------------
    def get_scale(self, resource: ResourceType, namespace: str | None, name: str) -> JSON:
        return scale_of(resource, self.get(resource, namespace, name).obj)

    def update_scale(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        scale: Any,
        *,
        dry_run: bool = False,
    ) -> JSON:
        current = self.get(resource, namespace, name)
        wanted = apply_scale(resource, current.obj, scale, name)
        stored = self.update(resource, namespace, name, wanted, None, dry_run=dry_run)
        return scale_of(resource, stored.obj)

    def patch_scale(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str,
        *,
        dry_run: bool = False,
    ) -> JSON:
        current = self.get_scale(resource, namespace, name)
        try:
            patched = apply_patch(current, patch, patch_type)
        except PatchError as exc:
            raise st.bad_request(str(exc)) from exc
        return self.update_scale(resource, namespace, name, patched, dry_run=dry_run)

    def bind(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        node: str,
        *,
        dry_run: bool = False,
    ) -> Stored:
        if resource.group != "" or resource.kind != "Pod":
            raise st.not_found_path()
        if not node:
            raise st.bad_request("a binding must name a node")
        current = self.get(resource, namespace, name)
        pod = current.obj
        # assignPod (pkg/registry/core/pod/storage/storage.go): only a pod with no node, and
        # not one being deleted.
        if pod["metadata"].get("deletionTimestamp"):
            why = f"pod {name} is being deleted, cannot be assigned to a host"
            raise st.conflict("pods/binding", "", name, why)
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise st.conflict(
                "pods/binding", "", name, f'pod {name} is already assigned to node "{assigned}"'
            )
        bound = pods.bind(deep_copy(pod), node, self.clock.timestamp())
        key = self.key(resource, namespace, name)
        bound = canonical_object(bound)
        return self.commit(resource, key, MODIFIED, bound, current, dry_run=dry_run)

    def update(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        obj: Any,
        subresource: str | None,
        *,
        dry_run: bool = False,
    ) -> Stored:
        obj = self.check_body(resource, deep_copy(obj), namespace)
        meta: JSON = obj.setdefault("metadata", {})
        if meta.get("name") not in (None, name):
            raise st.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        meta["name"] = name
        key = self.key(resource, namespace, name)
        current = self.storage.get(resource, key)
        if current is None:
            raise st.not_found(resource.plural, resource.group, name)
        wanted_rv = meta.get("resourceVersion")
        # store.go Update: a resourceVersion of 0 (or none) is an unconditional update.
        if wanted_rv not in (None, "", "0", 0) and str(wanted_rv) != str(current.rv):
            raise st.conflict(resource.plural, resource.group, name, st.OPTIMISTIC_LOCK_ERROR)
        wanted_uid = meta.get("uid")
        if wanted_uid not in (None, "") and wanted_uid != current.obj["metadata"]["uid"]:
            raise st.conflict(
                resource.plural,
                resource.group,
                name,
                f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: "
                f"{current.obj['metadata']['uid']}",
            )
        return self.replace(resource, key, current, obj, subresource, dry_run=dry_run)

    def replace(
        self,
        resource: ResourceType,
        key: Key,
        current: Stored,
        obj: JSON,
        subresource: str | None,
        *,
        dry_run: bool = False,
    ) -> Stored:
        old = current.obj
        meta = obj["metadata"]
        # Server-owned metadata survives any update.
        if "managedFields" in old["metadata"] and "managedFields" not in meta:
            meta["managedFields"] = old["metadata"]["managedFields"]  # kept when not sent
        for owned in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if owned in old["metadata"]:
                meta[owned] = old["metadata"][owned]
            else:
                meta.pop(owned, None)
        if resource.namespaced:
            meta["namespace"] = key[0]
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        narrow = narrow_subresources.writes(resource.group, resource.kind, subresource)
        if subresource == "status":
            # PUT .../status changes only status (registry strategies PrepareForUpdate).
            obj = {**old, "status": obj.get("status", {})}
            obj["metadata"] = dict(old["metadata"])
        elif narrow is not None:
            obj = narrow_subresources.prepare_for_update(narrow, old, obj, self.clock.timestamp())
        elif "status" in old and resource.status_subresource:
            obj["status"] = old["status"]
        if resource.openapi_schema is not None:
            # Pruned and defaulted as the request is decoded; as a copy, since the object may
            # share values (its status, a status write's spec) with the stored one.
            obj = deep_copy(obj)
            crd_schema.coerce(obj, dict(resource.openapi_schema))
        meta = obj["metadata"]  # a subresource's write starts from the stored metadata
        kind = (resource.group, resource.kind)
        on_write = defaults.ON_WRITE.get(kind)
        # A status write keeps the stored spec, defaulted when it was written; it shares nested
        # values with the stored object, so only copy-on-write defaults may run on it.
        if on_write is not None and (subresource != "status" or kind in defaults.COPY_ON_WRITE):
            on_write(obj)
        templates = defaults.TEMPLATE_METADATA.get(kind)
        if templates is not None and subresource is None:
            defaults.template_creation_timestamps(obj, templates)
        if self.pod_spec_defaults and subresource != "status":
            pod_spec_defaults.apply(kind, obj)
        if self.admission:  # admission runs on updates too
            for plugin in self.admission:
                plugin.admit_update(resource, old, obj, subresource)
        if resource.generation_fields and generation_changed(resource, old, obj):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        self.invalid_if(resource, obj)
        if kind == ("", "Service") and subresource is None:
            causes = services.update_cluster_ips(old, obj)
            if causes:
                raise st.invalid(resource.kind, resource.group, meta["name"], causes)
        if narrow is not None:
            causes = narrow_subresources.validate_update(narrow, old, obj)
            if causes:
                raise st.invalid(resource.kind, resource.group, meta["name"], causes)
        lifecycle.check_no_new_finalizers(resource, old, obj)
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        new = canonical_object(obj)
        if new == old:
            return current  # etcd GuaranteedUpdate writes nothing for a no-op update
        if lifecycle.finalized(resource, new):
            # store.go deleteWithoutFinalizers: the update that empties the finalizers is not
            # written; the key is deleted, and DELETED carries the last state that was stored.
            return self.commit_delete(resource, key, current, deep_copy(old), dry_run=dry_run)
        return self.commit(resource, key, MODIFIED, new, current, dry_run=dry_run)

    def patch(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str,
        subresource: str | None,
        *,
        dry_run: bool = False,
        view: ResourceType | None = None,
    ) -> Stored:
        """``view``: the version the patch is written against, when kubesim serves it by
        converting ``resource``'s objects (kubesim.apiserver.conversion): the patch applies to the
        object in that version, and the result is converted back."""
        key = self.key(resource, namespace, name)
        current = self.storage.get(resource, key)
        if current is None:
            raise st.not_found(resource.plural, resource.group, name)
        base = current.obj if view is None else conversion.for_view(view)[0](current.obj)
        try:
            patched = apply_patch(base, patch, patch_type)
        except PatchError as exc:
            if isinstance(exc, PatchTestFailed) or (
                patch_type == "application/json-patch+json" and _json_patch_decodes(patch)
            ):
                # handlers/patch.go: any error from patchObj.Apply (a failed "test" included) is
                # NewGenericServerResponse(422, ...): reason Invalid, a generic message, no causes.
                message = "the server rejected our request due to an error in our request"
                raise st.StatusError(st.failure(422, "Invalid", message, {})) from exc
            raise st.bad_request(str(exc)) from exc
        if not isinstance(patched, dict):
            raise st.bad_request("the patched object is not a JSON object")
        struct_decoding.check_patched(view or resource, patched, patch, patch_type)
        meta = patched.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv not in (None, "") and str(wanted_rv) != str(current.rv):
            raise st.conflict(resource.plural, resource.group, name, st.OPTIMISTIC_LOCK_ERROR)
        if meta.get("name") != name:
            raise st.bad_request("metadata.name cannot be changed by a patch")
        if view is not None:
            try:
                patched = conversion.for_view(view)[1](self.check_body(view, patched, namespace))
            except conversion.ConversionError as exc:
                raise st.bad_request(str(exc)) from None
        return self.replace(
            resource,
            key,
            current,
            self.check_body(resource, patched, namespace),
            subresource,
            dry_run=dry_run,
        )

    def apply(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        applied: Any,
        field_manager: str,
        *,
        force: bool,
        dry_run: bool,
    ) -> tuple[Stored, bool]:
        applied = self.check_body(resource, deep_copy(applied), namespace)
        meta = applied.setdefault("metadata", {})
        if not isinstance(meta, dict) or meta.get("name") not in (None, name):
            raise st.bad_request("metadata.name in the applied object must match the URL")
        meta["name"] = name
        key = self.key(resource, namespace, name)
        current = self.storage.get(resource, key)
        result = managed_fields.apply(
            None if current is None else current.obj,
            applied,
            field_manager,
            force=force,
            time=self.clock.timestamp(),
            kind=resource.plural,
            name=name,
        )
        # The apply wrote its own managedFields entry: no Update entry on top of it.
        manager, self.server.field_manager = self.server.field_manager, None
        try:
            if current is None:
                # A create through an update (store.go Update) is not checked for a sent
                # resourceVersion as a POST is: etcd3's GuaranteedUpdate clears it.
                result["metadata"].pop("resourceVersion", None)
                return self.create(resource, result, namespace, dry_run=dry_run), True
            return self.replace(resource, key, current, result, None, dry_run=dry_run), False
        finally:
            self.server.field_manager = manager

    # -- delete (kubesim.apiserver.deletion) ------------------------------------------------
    # DELETE, with preconditions, graceful deletion and finalizers: a method of the registry
    # whose body lives beside delete_collection in kubesim.apiserver.deletion.
    delete = deletion.delete

    def commit_delete(
        self,
        resource: ResourceType,
        key: Key,
        current: Stored,
        last: JSON,
        *,
        dry_run: bool = False,
    ) -> Stored:
        """Delete ``key``: DELETED carries ``last`` stamped with the deletion RV (etcd3
        watcher.go)."""
        return self.commit(resource, key, DELETED, last, current, dry_run=dry_run)


def _json_patch_decodes(patch: Any) -> bool:
    """True when jsonpatch.DecodePatch accepts the body, so a failure came from Apply (422)."""
    return patch is None or (
        isinstance(patch, list) and all(op is None or isinstance(op, dict) for op in patch)
    )


# ObjectMeta fields a create never takes from the client.
_SERVER_OWNED_METADATA = frozenset(
    ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "selfLink", "generation")
)


def _nonzero_resource_version(value: Any) -> bool:
    """etcd3 ``store.Create`` refuses an object whose resourceVersion parses as a revision other
    than 0 (``strconv.ParseUint``, 64 bits); "", "0" and what does not parse are let through
    (and cleared)."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        return False
    return 0 < int(value) < 2**64


def _encode_body(obj: JSON) -> bytes:
    try:
        return dumps(obj)
    except TypeError as exc:  # only the Python API can hand over what JSON cannot hold
        raise TypeError(
            f"obj must be a JSON object (dict, list, str, int, float, bool, None): {exc}"
        ) from None
