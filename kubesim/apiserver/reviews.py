"""Resources a client creates to ask a question: nothing is stored, the answer is the object sent
back with its ``status`` filled in.

kube-apiserver serves these create-only resources (the generated table's ``REVIEW_KINDS``), and
the subresource that issues service account tokens:

- **TokenRequest** (``POST serviceaccounts/{name}/token``, ``kubectl create token``): a bound
  token for the account, valid ``spec.expirationSeconds`` (default 3600, at least 600) for
  ``spec.audiences`` (default the server's own). The token is a JWT with the claims a cluster's
  tokens carry (``sub: system:serviceaccount:{namespace}:{name}``, ``kubernetes.io``
  namespace and account uid, ``iat``/``nbf``/``exp`` on the server's clock), signed HS256 with a
  key drawn from the seed: the server can check it, nobody else can, and a run stays a function
  of its seed.
- **TokenReview** (what webhooks and ``kr8s``' ``whoami`` ask): a token this server issued, not
  expired, for a service account that still exists with the same uid, is the account's user
  (``system:serviceaccounts`` groups); anything else is not authenticated.
- **SelfSubjectReview** (``kubectl auth whoami``): who the request is. A verified client
  certificate (``kubesim serve --tls`` issues one) is its common name, its organizations the
  groups; a service account token this server issued is that account; any other request is the
  cluster administrator a kubeadm cluster's ``admin.conf`` names (``kubernetes-admin``,
  ``kubeadm:cluster-admins``).
- **SubjectAccessReview**, **SelfSubjectAccessReview**, **LocalSubjectAccessReview**
  (``kubectl auth can-i``) and **SelfSubjectRulesReview** (``can-i --list``): kubesim enforces no
  RBAC, so every request is allowed, and the answers say so (``allowed: true``; every verb on
  every resource), after the same validation as kube-apiserver's.
- **Binding** (``POST namespaces/{namespace}/bindings``): the scheduler's older way to bind a
  pod, the same write as ``pods/{name}/binding``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import hmac
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from kubesim._core import ChoiceSource, integers, uuid4_drawer
from kubesim.apiserver import status as st
from kubesim.apiserver.validation import invalid_value

if TYPE_CHECKING:
    from kubesim.apiserver.resources import ResourceType
    from kubesim.apiserver.server import APIServer

JSON = dict[str, Any]

# The issuer and default audience of a kubeadm (and kind) cluster's service account tokens.
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ISSUER = API_AUDIENCE
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600  # TokenRequest validation: "less than 10 minutes"
MAX_EXPIRATION_SECONDS = 1 << 32
# Who a request is when it carries no service account token: admin.conf's user on kubeadm 1.29+.
ADMIN = {
    "username": "kubernetes-admin",
    "groups": ["kubeadm:cluster-admins", "system:authenticated"],
}
# Every verb on every resource: the rules a cluster-admin's SelfSubjectRulesReview lists.
_ALL_RULES: JSON = {
    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    "incomplete": False,
}


class TokenIssuer:
    """Issues and checks one server's service account tokens (see the module docstring)."""

    def __init__(self, choices: ChoiceSource) -> None:
        self._choices = choices
        self._new_jti = uuid4_drawer(choices.fork("jti"))
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:  # drawn on the first token: a run that issues none draws nothing
            words = integers(self._choices, 0, 0xFFFFFFFF, 8)
            self._key = b"".join(word.to_bytes(4, "big") for word in words)
        return self._key

    def issue(self, claims: JSON) -> str:
        header = {"alg": "HS256", "kid": hashlib.sha256(self.key).hexdigest()[:43]}
        signed = f"{_b64(orjson.dumps(header))}.{_b64(orjson.dumps(claims))}"
        return f"{signed}.{_b64(self._sign(signed))}"

    def claims(self, token: str) -> JSON | None:
        """The claims of a token this issuer signed, or None (not a JWT, or not ours)."""
        parts = token.strip().split(".")
        if len(parts) != 3:
            return None
        try:
            signature = _unb64(parts[2])
            claims = orjson.loads(_unb64(parts[1]))
        except (ValueError, orjson.JSONDecodeError):
            return None
        expected = self._sign(f"{parts[0]}.{parts[1]}")
        if not hmac.compare_digest(signature, expected) or not isinstance(claims, dict):
            return None
        return claims

    def new_jti(self) -> str:
        return self._new_jti()

    def _sign(self, text: str) -> bytes:
        return hmac.new(self.key, text.encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# -- TokenRequest ---------------------------------------------------------------------------
def token_request(server: APIServer, namespace: str, name: str, body: Any) -> JSON:
    """POST serviceaccounts/{name}/token: the TokenRequest sent, with its token in ``status``."""
    request = _object(body, "TokenRequest")
    spec = request.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    seconds = spec.get("expirationSeconds", DEFAULT_EXPIRATION_SECONDS)
    if seconds is None:
        seconds = DEFAULT_EXPIRATION_SECONDS
    causes = []
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        causes.append(invalid_value("spec.expirationSeconds", seconds, "must be an integer"))
    elif seconds < MIN_EXPIRATION_SECONDS:
        causes.append(
            invalid_value(
                "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
            )
        )
    elif seconds > MAX_EXPIRATION_SECONDS:
        causes.append(
            invalid_value(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )
        )
    audiences = spec.get("audiences") or [API_AUDIENCE]
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        causes.append(invalid_value("spec.audiences", audiences, "must be a list of strings"))
    if causes:
        raise st.invalid("TokenRequest", "authentication.k8s.io", name, causes)
    accounts = server.resource("serviceaccounts")
    stored = server.storage.get(accounts, (namespace, name))
    if stored is None:
        raise st.not_found("serviceaccounts", "", name)
    now = int(server.clock.epoch.timestamp() + server.clock.now())
    expires = now + seconds
    claims = {
        "aud": audiences,
        "exp": expires,
        "iat": now,
        "iss": ISSUER,
        "jti": server.token_issuer.new_jti(),
        "kubernetes.io": {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": stored.obj["metadata"]["uid"]},
        },
        "nbf": now,
        "sub": f"system:serviceaccount:{namespace}:{name}",
    }
    expiration = _dt.datetime.fromtimestamp(expires, _dt.timezone.utc)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
        "spec": {
            "audiences": audiences,
            "expirationSeconds": seconds,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {
            "token": server.token_issuer.issue(claims),
            "expirationTimestamp": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }


# -- reviews --------------------------------------------------------------------------------
def review(
    server: APIServer, resource: ResourceType, namespace: str | None, body: Any, user: JSON
) -> JSON:
    """The answer to a POST of a review kind from ``user`` (:func:`user_of`): the object sent,
    with its ``status``."""
    obj = _object(body, resource.kind)
    obj = {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "status")},
    }
    metadata = _dict(obj.get("metadata"))
    obj["metadata"] = {**metadata, "creationTimestamp": None}
    spec = _dict(obj.get("spec"))
    kind = resource.kind
    if kind == "TokenReview":
        obj["status"] = _token_review(server, spec)
    elif kind == "SelfSubjectReview":
        obj["status"] = {"userInfo": user}
    elif kind == "SelfSubjectRulesReview":
        obj["status"] = dict(_ALL_RULES)
    elif kind in ("SubjectAccessReview", "SelfSubjectAccessReview", "LocalSubjectAccessReview"):
        _check_access_review(kind, spec, namespace)
        if kind == "LocalSubjectAccessReview":
            obj["metadata"]["namespace"] = namespace
        obj["status"] = {"allowed": True}
    else:
        raise st.method_not_allowed("POST")
    return obj


def user_of(server: APIServer, certificate_user: Any, authorization: str) -> JSON:
    """Who a request is: the user of its verified client certificate (the transport's
    ``Request.user``), else of a service account token this server issued in its
    ``Authorization`` header, else the administrator (see the module docstring)."""
    if isinstance(certificate_user, Mapping) and certificate_user.get("username"):
        return {
            "username": str(certificate_user["username"]),
            "groups": [str(g) for g in certificate_user.get("groups") or []],
        }
    user = token_user(server, authorization)
    if user is not None:
        return user
    return {"username": ADMIN["username"], "groups": list(ADMIN["groups"])}


_IMPERSONATE_EXTRA = "impersonate-extra-"


def impersonated(user: JSON, headers: Iterable[tuple[str, str]]) -> JSON:
    """``user``, or the user the ``Impersonate-User`` header names with the
    ``Impersonate-Group`` (each line one group), ``Impersonate-Uid`` and
    ``Impersonate-Extra-<key>`` headers' values; ``system:authenticated`` is added unless a
    group says authenticated or unauthenticated already (apiserver's impersonation filter)."""
    name, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for key, value in headers:
        lowered = key.lower()
        if lowered == "impersonate-user":
            name = value
        elif lowered == "impersonate-uid":
            uid = value
        elif lowered == "impersonate-group":
            groups.append(value)
        elif lowered.startswith(_IMPERSONATE_EXTRA):
            extra_key = urllib.parse.unquote(lowered[len(_IMPERSONATE_EXTRA) :])
            extra.setdefault(extra_key, []).append(value)
    if not name:
        if groups or uid or extra:
            asked = groups or ([uid] if uid else sorted(extra))
            raise st.bad_request(f"requested {asked} without impersonating a user")
        return user
    if name != "system:anonymous" and not {"system:authenticated", "system:unauthenticated"} & set(
        groups
    ):
        groups.append("system:authenticated")
    out: JSON = {"username": name}
    if uid:
        out["uid"] = uid
    out["groups"] = groups
    if extra:
        out["extra"] = extra
    return out


def with_requester(csr: JSON, user: JSON) -> JSON:
    """A CertificateSigningRequest as its registry strategy stores it on create: ``username``,
    ``uid``, ``groups`` and ``extra`` are the requester's, whatever the body said."""
    spec = {k: v for k, v in (csr.get("spec") or {}).items() if k not in _REQUESTER_FIELDS}
    for field in _REQUESTER_FIELDS:
        if user.get(field):
            spec[field] = user[field]
    return {**csr, "spec": spec}


_REQUESTER_FIELDS = ("username", "uid", "groups", "extra")


def token_user(server: APIServer, authorization: str) -> JSON | None:
    """The service account a ``Bearer`` token this server issued stands for, or None."""
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return _service_account_user(server, credentials.strip())


def _token_review(server: APIServer, spec: JSON) -> JSON:
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise st.bad_request("token is required for TokenReview in authentication")
    wanted = spec.get("audiences") or [API_AUDIENCE]
    claims = server.token_issuer.claims(token)
    user = _service_account_user(server, token)
    if claims is None or user is None:
        return {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
    granted = [a for a in wanted if a in (claims.get("aud") or [])]
    if not granted:
        return {"user": {}, "error": "[invalid bearer token, token audiences are invalid]"}
    return {"authenticated": True, "user": user, "audiences": granted}


def _service_account_user(server: APIServer, token: str) -> JSON | None:
    claims = server.token_issuer.claims(token)
    if claims is None:
        return None
    now = server.clock.epoch.timestamp() + server.clock.now()
    info = claims.get("kubernetes.io")
    if not isinstance(info, dict) or not isinstance(claims.get("exp"), int) or claims["exp"] < now:
        return None
    namespace = info.get("namespace")
    account = _dict(info.get("serviceaccount"))
    stored = server.storage.get(
        server.resource("serviceaccounts"), (str(namespace), str(account.get("name")))
    )
    if stored is None or stored.obj["metadata"].get("uid") != account.get("uid"):
        return None  # the account was deleted (or deleted and made again) since
    return {
        "username": f"system:serviceaccount:{namespace}:{account['name']}",
        "uid": str(account["uid"]),
        "groups": [
            "system:serviceaccounts",
            f"system:serviceaccounts:{namespace}",
            "system:authenticated",
        ],
        "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={claims.get('jti')}"]},
    }


def _check_access_review(kind: str, spec: JSON, namespace: str | None) -> None:
    """pkg/apis/authorization/validation: exactly one of resource and non-resource attributes;
    a subject for the reviews of someone else; the local review's namespace."""
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    causes = []
    if (resource is None) == (non_resource is None):
        causes.append(
            invalid_value(
                "spec.resourceAttributes",
                resource,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        causes.append(
            invalid_value(
                "spec.user",
                spec.get("user") or "",
                "at least one of user or group must be specified",
            )
        )
    if (
        kind == "LocalSubjectAccessReview"
        and isinstance(resource, dict)
        and resource.get("namespace") not in (None, "", namespace)
    ):
        causes.append(
            invalid_value(
                "spec.resourceAttributes.namespace",
                resource.get("namespace"),
                "must match metadata.namespace",
            )
        )
    if causes:
        raise st.invalid(kind, "authorization.k8s.io", "", causes)


def _object(body: Any, kind: str) -> JSON:
    if not isinstance(body, dict):
        raise st.bad_request(f"the body of the request must be a {kind} object")
    sent = body.get("kind")
    if sent not in (None, "", kind):
        raise st.bad_request(
            f"the kind of the provided object ({sent}) does not match the resource ({kind})"
        )
    return body


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}
