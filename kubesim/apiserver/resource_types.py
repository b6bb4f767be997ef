"""The resource types a server serves, and how a name finds one (kubectl's RESTMapper).

Built-in kinds are registered when a server starts, a CRD's versions while it exists
(:mod:`kubesim.apiserver.crds`). A type is found by plural, kind, singular or short name,
qualified with its group when the name alone is ambiguous (``events`` is core/v1's, as
kubectl's RESTMapper puts the core group first). Not thread-safe on its own: the server calls
it with its lock held, except for :attr:`ResourceTypes.by_name` lookups, a dict read.
"""

from __future__ import annotations

from kubesim.apiserver.resources import ResourceType


class ResourceTypes:
    """The served resource types by (group, version, plural)."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        # find() by name, cleared whenever a type is registered or unregistered.
        self.by_name: dict[str, ResourceType] = {}

    def register(self, resource: ResourceType) -> ResourceType:
        key = (resource.group, resource.version, resource.plural)
        existing = self._types.get(key)
        if existing is not None and existing is not resource:
            raise ValueError(f"a different resource is already registered as {key}")
        self._types[key] = resource
        self.by_name.clear()
        return resource

    def unregister(self, resource: ResourceType) -> None:
        self._types.pop((resource.group, resource.version, resource.plural), None)
        self.by_name.clear()

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    @staticmethod
    def check_served(resource: ResourceType) -> ResourceType:
        """``resource`` itself, unless it is a version served only by conversion."""
        if resource.stored_as is not None:
            raise ValueError(
                f"resource {resource.api_version} {resource.plural} is served over HTTP by "
                f"converting {resource.stored_as.api_version} objects; the Python API takes "
                "that resource"
            )
        return resource

    def find(self, name: str) -> ResourceType:
        """The type ``name`` names ("pods", "Pod", "po", "deployments.apps"), remembered in
        :attr:`by_name`; KeyError naming the known ones when none or several match."""
        found = self.by_name.get(name)
        if found is None:
            found = self.by_name[name] = self._find(name)
        return found

    def _find(self, name: str) -> ResourceType:
        group = ""
        if "." in name:
            name, _, group = name.partition(".")
        matches = [
            r
            for r in self._types.values()
            # Not a version served by conversion: see kubesim.apiserver.conversion.
            if r.stored_as is None
            and (not group or r.group == group)
            and name in (r.plural, r.kind, r.singular_name, *r.short_names)
        ]
        if len(matches) > 1:
            # kubectl's RESTMapper puts the core group first: "events" is core/v1 events.
            core = [r for r in matches if r.group == ""]
            matches = core if len(core) == 1 else matches
        if len(matches) == 1:
            return matches[0]
        known = sorted(
            {r.plural + (f".{r.group}" if r.group else "") for r in self._types.values()}
        )
        if not matches:
            raise KeyError(f"no resource named {name!r}; known resources: {', '.join(known)}")
        raise KeyError(f"resource name {name!r} is ambiguous; qualify it with its group ({known})")
