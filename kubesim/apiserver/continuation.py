"""List continue tokens, shaped like kube-apiserver's (apiserver ``pkg/storage/continue.go``).

The token is opaque to clients: base64url without padding of
``{"v":"meta.k8s.io/v1","rv":<list RV>,"start":"<key to start from>"}``. Every page of one
list carries the same RV, so paging gives a consistent snapshot.
"""

from __future__ import annotations

import base64
import binascii

import orjson

from kubesim.apiserver.storage import Key

_VERSION = "meta.k8s.io/v1"


class InvalidContinue(ValueError):
    """The token is not one this server issued."""


def encode_continue(rv: int, start: Key) -> str:
    namespace, name = start
    key = f"{namespace}/{name}" if namespace else name
    raw = orjson.dumps({"v": _VERSION, "rv": rv, "start": key})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token: str, *, namespaced: bool) -> tuple[int, Key]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, orjson.JSONDecodeError) as exc:
        raise InvalidContinue(f"continue key is not valid: {exc}") from exc
    if not isinstance(data, dict) or data.get("v") != _VERSION:
        version = data.get("v") if isinstance(data, dict) else data
        # storage/continue.go: fmt.Errorf("%w %v", ErrUnrecognizedEncodedVersion, c.APIVersion)
        raise InvalidContinue(
            f"continue key is not valid: server does not recognize this encoded version {version}"
        )
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or not isinstance(start, str):
        raise InvalidContinue("continue key is not valid: incorrect encoded start resourceVersion")
    if rv <= 0:
        raise InvalidContinue(
            "continue key is not valid: incorrect encoded start resourceVersion "
            f"(version {_VERSION})"
        )
    if namespaced and "/" in start:
        namespace, _, name = start.partition("/")
        return rv, (namespace, name)
    return rv, ("", start)
