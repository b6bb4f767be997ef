"""Generate kubesim/server/protobuf_schema.json from Kubernetes' own protobuf definitions.

kube-apiserver accepts request bodies in its protobuf encoding (``application/vnd.kubernetes
.protobuf``), and kubectl 1.32+ sends them for built-in kinds. The field numbers and types come
from the ``generated.proto`` files of k8s.io/api and k8s.io/apimachinery (written by
go-to-protobuf); this script reads those files and keeps, per message, only what a decoder
needs: ``[number, json name, type, label]``. Run it against checkouts of both repositories:

    python tools/gen_protobuf_schema.py --api ../api --apimachinery ../apimachinery

and commit the JSON it writes. tests/unit/test_protobuf.py checks the decoder against it.
"""

from __future__ import annotations

import argparse
import json
import re
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


def _qualify(type_name: str, package: str) -> str:
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    return f"{package}.{type_name}"


def parse(text: str) -> dict[str, list[list[object]]]:
    package_match = PACKAGE.search(text)
    assert package_match is not None, "no package line"
    package = package_match.group(1)
    messages: dict[str, list[list[object]]] = {}
    for name, body in MESSAGE.findall(text):
        body = "\n".join(line for line in body.splitlines() if not line.strip().startswith("//"))
        fields: list[list[object]] = []
        for label, type_name, key, value, field, number in FIELD.findall(body):
            if label:
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
        default=Path(__file__).parents[1] / "kubesim/server/protobuf_schema.json",
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
        schema.update(parse(path.read_text(encoding="utf-8")))
    args.out.write_text(
        json.dumps(dict(sorted(schema.items())), separators=(",", ":")) + "\n", encoding="utf-8"
    )
    print(f"{len(schema)} messages from {len(files)} files -> {args.out}")


if __name__ == "__main__":
    main()
