"""Generate kubesim/apiserver/builtin_kinds.py from the official Python client's API classes.

Every stable built-in resource of the Kubernetes release the client targets, with what the
client's generated code knows about it: group, version, kind, plural, whether it is namespaced,
its verbs and its subresources. The client is generated from the release's OpenAPI document,
so this is the release's own description, read from the installed ``kubernetes`` package:

    python tools/gen_builtin_kinds.py

tests/unit/test_builtin_kinds.py runs the same reading and fails when the checked-in table and
the installed client disagree.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

# /api/v1/namespaces/{namespace}/pods/{name}/status and the like.
PATH = re.compile(
    r"^/apis?/(?:(?P<group>[a-z0-9.-]+)/)?(?P<version>v\d+)"
    r"(?:/namespaces/\{namespace\})?/(?P<plural>[a-z0-9]+)"
    r"(?:/\{name\}(?:/(?P<sub>[a-z]+))?)?$"
)
SERIALIZE = re.compile(r"method='(\w+)',\s*resource_path='([^']+)'")
RESPONSE_200 = re.compile(r"'200': \"(\w+)\"")
MODEL_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)*?V\d+")
STABLE = re.compile(r"^v\d+$")


def _kind_of(model: str) -> str:
    """``V1JobList`` -> ``Job``; ``CoreV1EventList`` -> ``Event``."""
    return MODEL_PREFIX.sub("", model, count=1).removesuffix("List")


def read_client() -> list[dict[str, Any]]:
    """One row per stored (group, version, plural) of the installed client, in a stable order:
    the resources that keep objects (they can be listed)."""
    return _read(reviews=False)


def read_reviews() -> list[tuple[str, str, str, str, bool]]:
    """The virtual resources (group, version, kind, plural, namespaced): create-only, their
    answer computed from the request, nothing stored (TokenReview, SelfSubjectAccessReview...).
    The kind is the create operation's response type."""
    rows = _read(reviews=True)
    return [(r["group"], r["version"], r["kind"], r["plural"], r["namespaced"]) for r in rows]


def _read(*, reviews: bool) -> list[dict[str, Any]]:
    import kubernetes.client.api as apis

    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for module_info in pkgutil.iter_modules(apis.__path__):
        module = importlib.import_module(f"kubernetes.client.api.{module_info.name}")
        source = inspect.getsource(module)
        # Each public method's response type, and each serializer's method and path.
        responses = {}
        for match in re.finditer(r"    def (\w+)\(\n?(.*?)(?=\n    def |\Z)", source, re.S):
            name, body = match.group(1), match.group(2)
            if name.endswith(("_serialize", "_with_http_info", "_without_preload_content")):
                continue
            found = RESPONSE_200.search(body)
            if found:
                responses[name] = found.group(1)
        for match in re.finditer(r"    def _(\w+)_serialize\((.*?)(?=\n    def |\Z)", source, re.S):
            name, body = match.group(1), match.group(2)
            serialized = SERIALIZE.search(body)
            if serialized is None:
                continue
            method, path = serialized.groups()
            parsed = PATH.match(path)
            if parsed is None or not STABLE.match(parsed["version"]):
                continue
            group = parsed["group"] or ""
            key = (group, parsed["version"], parsed["plural"])
            row = rows.setdefault(
                key,
                {
                    "group": group,
                    "version": parsed["version"],
                    "plural": parsed["plural"],
                    "kind": "",
                    "namespaced": False,
                    "verbs": set(),
                    "subresources": set(),
                    "delete_response": "",
                    "create_response": "",
                },
            )
            if "{namespace}" in path:
                row["namespaced"] = True
            sub, named = parsed["sub"], "{name}" in path
            if sub:
                row["subresources"].add(sub)
                continue
            verb = {
                ("GET", False): "list",
                ("POST", False): "create",
                ("DELETE", False): "deletecollection",
                ("GET", True): "get",
                ("PUT", True): "update",
                ("PATCH", True): "patch",
                ("DELETE", True): "delete",
            }.get((method, named))
            if verb is not None:
                row["verbs"].add(verb)
            if verb == "list" and name in responses and not row["kind"]:
                row["kind"] = _kind_of(responses[name])
            if verb == "delete" and name in responses:
                row["delete_response"] = responses[name]
            if verb == "create" and name in responses:
                row["create_response"] = responses[name]
    if reviews:
        virtual = [
            {**row, "kind": _kind_of(row["create_response"])}
            for row in rows.values()
            if row["verbs"] == {"create"} and not row["subresources"] and row["create_response"]
        ]
        return sorted(virtual, key=lambda r: (r["group"], r["version"], r["plural"]))
    out = []
    for row in rows.values():
        if not row["kind"] or "list" not in row["verbs"]:
            continue  # a virtual resource (reviews): read_reviews
        if "list" in row["verbs"]:
            row["verbs"].add("watch")
        delete_response = row.pop("delete_response")
        row.pop("create_response")
        out.append(
            {
                **row,
                "verbs": tuple(sorted(row["verbs"])),
                "subresources": tuple(sorted(row["subresources"])),
                # The OpenAPI document types a delete's answer: the object itself where the
                # registry store sets ReturnDeletedObject (pods, services, ...), else a Status.
                "delete_returns_object": bool(delete_response)
                and _kind_of(delete_response) == row["kind"],
            }
        )
    return sorted(out, key=lambda r: (r["group"], r["version"], r["plural"]))


def render(
    rows: list[dict[str, Any]],
    reviews: list[tuple[str, str, str, str, bool]],
    client_version: str,
) -> str:
    lines = [
        '"""Every stable built-in resource, as the official client (generated from the release\'s',
        "OpenAPI document) describes it. GENERATED by tools/gen_builtin_kinds.py: do not edit.",
        "",
        f"kubernetes client {client_version}.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"CLIENT_VERSION = {client_version!r}",
        "",
        "# (group, version, kind, plural, namespaced, verbs, subresources)",
        "BUILTIN_KINDS: tuple[",
        "    tuple[str, str, str, str, bool, tuple[str, ...], tuple[str, ...]], ...",
        "] = (",
    ]
    for r in rows:
        lines.append(
            f"    ({r['group']!r}, {r['version']!r}, {r['kind']!r}, {r['plural']!r}, "
            f"{r['namespaced']!r}, {r['verbs']!r}, {r['subresources']!r}),"
        )
    lines.append(")")
    lines.append("")
    lines.append("# (group, plural) whose delete answers with the object, not a Status")
    lines.append("RETURNS_DELETED_OBJECT: frozenset[tuple[str, str]] = frozenset(")
    lines.append("    {")
    for group, plural in sorted(
        {(r["group"], r["plural"]) for r in rows if r["delete_returns_object"]}
    ):
        lines.append(f"        ({group!r}, {plural!r}),")
    lines.append("    }")
    lines.append(")")
    lines.append("")
    lines.append(
        "# Create-only resources that store nothing: (group, version, kind, plural, namespaced)"
    )
    lines.append("REVIEW_KINDS: tuple[tuple[str, str, str, str, bool], ...] = (")
    for review in reviews:
        lines.append(f"    {review!r},")
    lines.append(")")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).parents[1] / "kubesim/apiserver/builtin_kinds.py"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args()
    import kubernetes

    rows = read_client()
    reviews = read_reviews()
    args.out.write_text(render(rows, reviews, kubernetes.__version__), encoding="utf-8")
    print(f"{len(rows)} resources and {len(reviews)} reviews -> {args.out}")


if __name__ == "__main__":
    main()
