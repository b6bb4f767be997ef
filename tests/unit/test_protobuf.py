"""Protobuf request bodies: decoded into the JSON object they stand for, refused clearly when
malformed or when the kind has no protobuf encoding.

The bodies are built here field by field, with the numbers of k8s.io/api's generated.proto
(ConfigMap: metadata=1, data=2; ObjectMeta: name=1, labels=11; Deployment spec: replicas=1, ...)
so that a wrong table or a decoding slip shows as a wrong field.
"""

from __future__ import annotations

import json

import pytest

from kubesim import APIServer
from kubesim.wire import protobuf
from kubesim.wire.routes import Request, handle


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, payload: bytes | str | int) -> bytes:
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(key: str, value: str) -> bytes:
    return field(1, key) + field(2, value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, raw)


def configmap() -> bytes:
    meta = field(1, "settings") + field(11, entry("tier", "web")) + field(11, entry("empty", ""))
    created = field(8, field(1, 1_700_000_000))  # creationTimestamp: Time{seconds}
    raw = field(1, meta + created) + field(2, entry("mode", "fast")) + field(2, entry("b", "2"))
    return envelope("v1", "ConfigMap", raw)


def test_a_configmap_decodes_to_its_json_form() -> None:
    obj = protobuf.decode_object(configmap())
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "labels": {"tier": "web", "empty": ""},
            "creationTimestamp": "2023-11-14T22:13:20Z",
        },
        "data": {"mode": "fast", "b": "2"},
    }


def test_a_deployment_with_nested_messages_quantities_and_int_or_string() -> None:
    resources = field(1, field(1, "cpu") + field(2, field(1, "250m")))  # limits: {cpu: 250m}
    container = field(1, "app") + field(2, "nginx:1.25") + field(8, resources)
    pod_spec = field(2, container)
    template = field(1, field(11, entry("app", "web"))) + field(2, pod_spec)
    selector = field(1, entry("app", "web"))
    # RollingUpdate: maxSurge as a string ("25%"), maxUnavailable as an int (0).
    surge = field(1, 1) + field(3, "25%")
    unavailable = field(1, 0) + field(2, 0)
    strategy = field(1, "RollingUpdate") + field(2, field(1, unavailable) + field(2, surge))
    spec = field(1, 3) + field(2, selector) + field(3, template) + field(4, strategy)
    obj = protobuf.decode_object(
        envelope("apps/v1", "Deployment", field(1, field(1, "web")) + field(2, spec))
    )
    assert obj["spec"]["replicas"] == 3
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    (decoded,) = obj["spec"]["template"]["spec"]["containers"]
    assert decoded == {
        "name": "app",
        "image": "nginx:1.25",
        "resources": {"limits": {"cpu": "250m"}},
    }
    assert obj["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"},
    }


def test_negative_numbers_and_unknown_fields() -> None:
    # deletionGracePeriodSeconds = -1 (ten-byte varint); field 99 is newer than the table.
    meta = field(1, "x") + field(10, -1) + field(99, "ignored")
    obj = protobuf.decode_object(envelope("v1", "ConfigMap", field(1, meta)))
    assert obj["metadata"] == {"name": "x", "deletionGracePeriodSeconds": -1}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not protobuf", "magic prefix"),
        (configmap()[:-3], "truncated"),
        (protobuf.MAGIC + b"\xff", "varint"),
    ],
)
def test_malformed_bodies_are_refused_with_the_reason(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.decode_object(body)


def _post(server: APIServer, path: str, body: bytes) -> tuple[int, dict]:
    response = handle(
        server,
        Request("POST", path, "", {"Content-Type": protobuf.CONTENT_TYPE}, body),
    )
    assert isinstance(response.body, bytes)
    return response.status, json.loads(response.body)


def test_the_server_stores_a_protobuf_create_and_refuses_what_it_cannot_read() -> None:
    server = APIServer(seed=0)
    status, created = _post(server, "/api/v1/namespaces/default/configmaps", configmap())
    assert status == 201, created
    assert server.get("configmaps", "settings", namespace="default")["data"] == {
        "mode": "fast",
        "b": "2",
    }
    status, refused = _post(server, "/api/v1/namespaces/default/configmaps", b"k8s\x00\xff")
    assert status == 400, refused
    assert "protobuf body could not be decoded" in refused["message"]
    # A kind without a protobuf encoding: 415, naming only what is accepted.
    status, refused = _post(
        server,
        "/api/v1/namespaces/default/configmaps",
        envelope("example.com/v1", "Widget", field(1, field(1, "w"))),
    )
    assert status == 415, refused
    assert refused["reason"] == "UnsupportedMediaType"
    assert "protobuf" not in refused["message"]
    assert server.list("configmaps", namespace="default")[-1]["metadata"]["name"] == "settings"


def test_zero_values_go_leaves_out_of_json_are_dropped_and_pointers_at_zero_kept() -> None:
    # Go's protobuf encoder writes value fields even at zero: stdin (16), tty (18) and the
    # template's generation (7) are `omitempty` values, left out of the JSON the apiserver
    # writes; replicas (1) is a pointer, and containerPort (3) has no omitempty: both kept.
    port = field(3, 0) + field(4, "TCP")
    container = field(1, "app") + field(2, "nginx") + field(6, port) + field(16, 0) + field(18, 0)
    template = field(1, field(7, 0) + field(11, entry("app", "web"))) + field(
        2, field(2, container)
    )
    spec = field(1, 0) + field(2, field(1, entry("app", "web"))) + field(3, template)
    obj = protobuf.decode_object(
        envelope("apps/v1", "Deployment", field(1, field(1, "web")) + field(2, spec))
    )
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}
    (decoded,) = obj["spec"]["template"]["spec"]["containers"]
    assert decoded == {
        "name": "app",
        "image": "nginx",
        "ports": [{"containerPort": 0, "protocol": "TCP"}],
    }
    # A true boolean is kept.
    container = field(1, "app") + field(2, "nginx") + field(16, 1)
    pod = protobuf.decode_object(
        envelope("v1", "Pod", field(1, field(1, "p")) + field(2, field(2, container)))
    )
    assert pod["spec"]["containers"][0]["stdin"] is True
