"""Generate kubesim/apiserver/protobuf_schema.json from Kubernetes' own protobuf definitions.

kube-apiserver accepts request bodies in its protobuf encoding (``application/vnd.kubernetes
.protobuf``), and kubectl 1.32+ sends them for built-in kinds. The field numbers and types come
from the ``generated.proto`` files of k8s.io/api and k8s.io/apimachinery (written by
go-to-protobuf); this script reads those files and keeps, per message, only what a decoder
needs: ``[number, json name, type, label]``. The label is the proto one (``optional``,
``repeated``, ``map``), except ``omitempty`` for a number or boolean whose Go field is a value
(not a pointer) tagged ``omitempty``: Go's protobuf encoder writes such a field even at zero,
and Go's JSON encoder leaves it out, so a decoder must drop its zeros to produce the JSON the
apiserver would (a pointer at zero is set, and kept). That comes from the Go structs next to
each ``generated.proto``. Run it against checkouts of both repositories:

    python tools/gen_protobuf_schema.py --api ../api --apimachinery ../apimachinery

and commit the JSON it writes. tests/unit/test_protobuf.py checks the decoder against it.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Collection
from pathlib import Path

# The stable versions kubesim serves (and kubectl writes), plus the apimachinery types they use.
API_VERSIONS = re.compile(r"^[a-z]+/v[12]/generated\.proto$")
APIMACHINERY = (
    "pkg/apis/meta/v1/generated.proto",
    "pkg/api/resource/generated.proto",
    "pkg/runtime/generated.proto",
    "pkg/runtime/schema/generated.proto",
    "pkg/util/intstr/generated.proto",
)
PACKAGE = re.compile(r"^package\s+([\w.]+);", re.M)
MESSAGE = re.compile(r"^message\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
FIELD = re.compile(
    r"^\s*(?:(optional|repeated)\s+([.\w]+)|map<\s*([.\w]+)\s*,\s*([.\w]+)\s*>)\s+(\w+)\s*=\s*(\d+)",
    re.M,
)
SCALARS = {"string", "bool", "bytes", "int32", "int64", "uint32", "uint64", "double", "float"}
ZERO_VALUED = SCALARS - {"string", "bytes"}  # "" is left out of the JSON whatever the Go type
GO_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{(.*?)^\}", re.M | re.S)
GO_FIELD = re.compile(r"^\s*\w+\s+(\S+)\s+`([^`]*)`", re.M)
GO_JSON_TAG = re.compile(r'json:"([^"]*)"')
GO_PROTOBUF_TAG = re.compile(r'protobuf:"\w+,(\d+),')


def zero_omitted(go_sources: list[str]) -> set[tuple[str, int]]:
    """(struct, field number) of every value field (not a pointer, slice or map) whose JSON tag
    says ``omitempty``, in these Go files."""
    omitted: set[tuple[str, int]] = set()
    for source in go_sources:
        for struct, body in GO_STRUCT.findall(source):
            for go_type, tag in GO_FIELD.findall(body):
                json_tag, number = GO_JSON_TAG.search(tag), GO_PROTOBUF_TAG.search(tag)
                if json_tag is None or number is None or go_type[0] in "*[" or "map[" in go_type:
                    continue
                if "omitempty" in json_tag.group(1).split(",")[1:]:
                    omitted.add((struct, int(number.group(1))))
    return omitted


def go_sources(directory: Path) -> list[str]:
    """The hand-written Go files of a package (the structs go-to-protobuf read)."""
    return [
        path.read_text(encoding="utf-8")
        for path in sorted(directory.glob("*.go"))
        if not path.name.endswith(("_test.go", ".pb.go"))
        and not path.name.startswith(("zz_generated", "types_swagger_doc"))
    ]


def _qualify(type_name: str, package: str) -> str:
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    return f"{package}.{type_name}"


def parse(
    text: str, omitted: Collection[tuple[str, int]] = frozenset()
) -> dict[str, list[list[object]]]:
    package_match = PACKAGE.search(text)
    assert package_match is not None, "no package line"
    package = package_match.group(1)
    messages: dict[str, list[list[object]]] = {}
    for name, body in MESSAGE.findall(text):
        body = "\n".join(line for line in body.splitlines() if not line.strip().startswith("//"))
        fields: list[list[object]] = []
        for label, type_name, key, value, field, number in FIELD.findall(body):
            if label:
                if (
                    label == "optional"
                    and type_name in ZERO_VALUED
                    and (name, int(number)) in omitted
                ):
                    label = "omitempty"
                fields.append([int(number), field, _qualify(type_name, package), label])
            else:
                kinds = f"{_qualify(key, package)},{_qualify(value, package)}"
                fields.append([int(number), field, kinds, "map"])
        messages[f"{package}.{name}"] = sorted(fields)
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", type=Path, required=True, help="a checkout of k8s.io/api")
    parser.add_argument("--apimachinery", type=Path, required=True)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).parents[1] / "kubesim/apiserver/protobuf_schema.json",
    )
    args = parser.parse_args()
    files = sorted(
        p
        for p in args.api.rglob("generated.proto")
        if API_VERSIONS.match(p.relative_to(args.api).as_posix())
    )
    files += [args.apimachinery / name for name in APIMACHINERY]
    schema: dict[str, list[list[object]]] = {}
    for path in files:
        omitted = zero_omitted(go_sources(path.parent))
        schema.update(parse(path.read_text(encoding="utf-8"), omitted))
    args.out.write_text(
        json.dumps(dict(sorted(schema.items())), separators=(",", ":")) + "\n", encoding="utf-8"
    )
    print(f"{len(schema)} messages from {len(files)} files -> {args.out}")


if __name__ == "__main__":
    main()
