"""From a request to a response: the REST surface of the fake API server.

:func:`handle` takes a transport-neutral :class:`Request` (method, path, query string, headers,
body) and returns a :class:`Response` whose body is either bytes or a
:class:`~kubesim.apiserver.watch.WatchStream`. It never raises: every failure becomes the
Kubernetes ``Status`` kube-apiserver would send, and anything unexpected becomes a 500
``InternalError`` Status rather than a dead server.

Query parameters are parsed the way apimachinery does (``pkg/runtime/conversion.go``): a
boolean is false only when absent, ``0`` or ``false`` (any case), so ``watch``, ``watch=1``,
``watch=true`` and ``watch=True`` all open a watch.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubesim.apiserver import (
    conversion,
    eviction,
    field_validation,
    log_follow,
    managed_fields,
    pods,
    propagation,
    reviews,
    struct_decoding,
)
from kubesim.apiserver import status as st
from kubesim.apiserver.continuation import InvalidContinue, decode_continue
from kubesim.apiserver.encoding import OPT_INDENT_2, OPT_NON_STR_KEYS, JSONDecodeError, dumps, loads
from kubesim.apiserver.faults import ConnectionReset
from kubesim.apiserver.go_values import json_kind
from kubesim.apiserver.lists import ASKS_AGAIN, parse_field_selector, parse_label_selector
from kubesim.apiserver.patch import PATCH_TYPES
from kubesim.apiserver.resources import SUBRESOURCES, ResourceType
from kubesim.apiserver.server import APIServer
from kubesim.apiserver.watch import WatchStream
from kubesim.wire import (
    discovery,
    health,
    negotiation,
    openapi,
    openapi_v2,
    partial_metadata,
    protobuf,
    tables,
)
from kubesim.wire.converted_watch import ConvertedWatchStream

JSON = dict[str, Any]

MAX_BODY_BYTES = 3 * 1024 * 1024  # apiserver: 3 MiB limit for JSON request bodies
JSON_TYPE = "application/json"
_BODY_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
_PATCH_TYPES_ACCEPTED = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]


@dataclass
class Request:
    method: str
    path: str
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    # Who the transport authenticated the request as from a verified client certificate
    # (``username`` and ``groups``), or None: the routes read other credentials from headers.
    user: Mapping[str, Any] | None = None
    # Every header line as sent, repeated names included (``Impersonate-Group`` may come more
    # than once), when the transport has them; ``headers`` keeps one value per name.
    header_lines: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_target(
        cls, method: str, target: str, headers: Mapping[str, str] | None = None, body: bytes = b""
    ) -> Request:
        """Build from a request target such as ``/api/v1/pods?watch=1``."""
        parts = urllib.parse.urlsplit(target)
        return cls(method.upper(), parts.path or "/", parts.query, dict(headers or {}), body or b"")

    def header(self, name: str) -> str:
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return ""

    def header_values(self, name: str) -> list[str]:
        """Every value of a header that may be repeated, in the order sent."""
        lowered = name.lower()
        if self.header_lines:
            return [value for key, value in self.header_lines if key.lower() == lowered]
        value = self.header(name)
        return [value] if value else []


@dataclass
class Response:
    status: int
    body: bytes | WatchStream
    content_type: str = JSON_TYPE
    # Headers beyond Content-Type (today only Retry-After); transports copy them onto the wire.
    headers: Mapping[str, str] = field(default_factory=dict)
    # Written as is. Otherwise a JSON body gets the newline apimachinery's JSON serializer ends
    # every object with (it writes through Go's json.Encoder.Encode); /version and the OpenAPI
    # documents are written by handlers of their own, without one.
    raw: bool = False
    # Seconds of the server's time the answer took: the watch cache waits up to 3 s for a
    # resourceVersion it has not reached before it answers "Too large resource version", and a
    # consistent list as long for a cache behind storage before it falls back to storage. An
    # in-process transport on virtual time waits that long, then asks again (the cache may
    # have caught up); elsewhere the answer is immediate.
    wait: float = 0.0
    # No answer at all: the connection is reset (APIServer.reset_connections). Each transport
    # raises what its library raises for a reset; the HTTP server resets the socket.
    reset: bool = False
    # Never sent: the connection was refused (APIServer.refuse_connections); in-process
    # transports ask before they send (kubesim.transport.connection_errors.refusal).
    refused: bool = False

    @property
    def is_watch(self) -> bool:
        return isinstance(self.body, WatchStream)

    def json(self) -> Any:
        if isinstance(self.body, WatchStream):
            raise TypeError("a watch response has no single JSON body")
        return loads(self.body)


def _json(status: int, obj: Any) -> Response:
    return Response(status, dumps(obj))


def _status(error: st.StatusError) -> Response:
    headers: dict[str, str] = {}
    # responsewriters.ErrorNegotiated: 429 and 5xx with retryAfterSeconds > 0 get Retry-After.
    details = error.status.get("details")
    if (error.code == 429 or error.code >= 500) and isinstance(details, dict):
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, int) and seconds > 0:
            headers["Retry-After"] = str(seconds)
    return Response(
        error.code, dumps(error.status), headers=headers, wait=getattr(error, "wait", 0.0)
    )


# -- query parameters --------------------------------------------------------------------------
class Query:
    def __init__(self, raw: str) -> None:
        self._values = urllib.parse.parse_qs(raw, keep_blank_values=True)

    def get(self, name: str) -> str | None:
        values = self._values.get(name)
        return values[0] if values else None

    def flag(self, name: str) -> bool:
        """apimachinery Convert_Slice_string_To_bool: absent, "0" and "false" are false."""
        value = self.get(name)
        if value is None:
            return False
        return value.lower() not in ("0", "false")

    def values(self, name: str) -> list[str]:
        return list(self._values.get(name, ()))

    def tristate(self, name: str) -> bool | None:
        return None if self.get(name) is None else self.flag(name)

    def integer(self, name: str) -> int | None:
        value = self.get(name)
        if value is None or value == "":
            return None
        try:
            return int(value)
        except ValueError:
            raise st.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def _parse_rv(text: str | None) -> int | None:
    if text in (None, ""):
        return None
    assert text is not None
    if not text.isdigit():
        # kube-apiserver answers 500 here (kubernetes/kubernetes#139485); the accepted fix is 400.
        raise st.bad_request(
            f'resourceVersion: Invalid value: "{text}": '
            f'strconv.ParseUint: parsing "{text}": invalid syntax'
        )
    return int(text)


def _list_options_invalid(*causes: JSON) -> st.StatusError:
    return st.invalid("ListOptions", "meta.k8s.io", "", list(causes))


def _forbidden(field_name: str, detail: str) -> JSON:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field_name}


# -- routing -------------------------------------------------------------------------------
@dataclass
class _Target:
    resource: ResourceType  # the resource whose objects the request reads and writes
    namespace: str | None
    name: str | None
    subresource: str | None
    legacy_watch: bool
    # The version the request names when kubesim serves it by converting ``resource``'s
    # objects (kubesim.apiserver.conversion): bodies arrive and answers leave in this version.
    view: ResourceType | None = None


def handle(
    server: APIServer, request: Request, *, waited: bool = False, asks_again: bool = False
) -> Response:
    """Serve one request. Never raises (``request_listeners`` may: see APIServer).

    ``waited``: the same request answered again after the transport waited
    :attr:`Response.wait` for it (one request, not a new one: not counted, no hooks).
    ``asks_again``: the transport will do that if the answer has a wait, so such an answer is
    never delivered: what it lists is not shown to the client (``delivery_listeners``).
    """
    if not waited:
        for hook in server.in_flight_hooks:
            hook(request)
        with server.lock:
            server.request_count += 1
            if server.request_listeners:
                target = f"{request.path}?{request.query}" if request.query else request.path
                for listener in server.request_listeners:
                    listener(request.method, target)
    asking = ASKS_AGAIN.set(asks_again and not waited)
    try:
        response = _dispatch(server, request)
    except st.StatusError as error:
        response = _status(error)
    except ConnectionReset:
        return Response(0, b"", reset=True)  # nothing is written back: the transport resets
    except Exception as exc:  # the server must never die on a request; report, don't hide
        server.trace.record("internal-error", type(exc).__name__, str(exc))
        response = _status(st.internal_error(f"{type(exc).__name__}: {exc}"))
    finally:
        ASKS_AGAIN.reset(asking)
    return _framed(_prettied(request, response))


# The User-Agents the apiserver answers with indented JSON unless ?pretty says otherwise
# (handlers/negotiation isPrettyPrint): browsers and command-line HTTP tools.
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla/5.0")


def _prettied(request: Request, response: Response) -> Response:
    """A JSON answer indented, as the apiserver writes it for ``?pretty=true`` or a curl."""
    body = response.body
    if response.raw or not isinstance(body, bytes) or not body:
        return response
    if response.content_type != JSON_TYPE:
        return response
    asked = Query(request.query).get("pretty") if "pretty" in request.query else None
    if asked:
        pretty = asked.lower() in ("1", "t", "true")
    else:
        pretty = request.header("User-Agent").startswith(_PRETTY_AGENTS)
    if not pretty:
        return response
    return replace(response, body=dumps(loads(body), option=OPT_INDENT_2) + b"\n")


def _framed(response: Response) -> Response:
    body = response.body
    if response.raw or not isinstance(body, bytes) or not body or body.endswith(b"\n"):
        return response
    if not response.content_type.startswith("application/json"):
        return response
    return replace(response, body=body + b"\n")


def _dispatch(server: APIServer, request: Request) -> Response:
    path = request.path.rstrip("/") or "/"
    segments = [urllib.parse.unquote(s) for s in path.split("/")[1:]] if path != "/" else []
    if segments and segments[0] == "kubesim":
        return _admin(server, request, segments[1:])
    # A path that names nothing is 404 whatever the Accept header says: the apiserver's
    # NotFound handler writes an error status as JSON even when negotiation fails
    # (responsewriters.WriteObjectNegotiated).
    if request.method in ("GET", "HEAD") and segments in (["api"], ["apis"]):
        version = discovery.aggregated_version(request.header("Accept"))
        if version is not None:
            doc = discovery.aggregated(
                server.resources, legacy=segments == ["api"], version=version
            )
            return Response(200, dumps(doc), discovery.aggregated_content_type(version))
    if request.method in ("GET", "HEAD"):
        if segments == ["openapi", "v2"]:
            media_type = openapi_v2.negotiate(request.header("Accept"))
            if media_type is None:
                raise st.not_acceptable(list(openapi_v2.ACCEPTED))
            body = openapi_v2.document(server.resources, media_type)
            label = JSON_TYPE if media_type == JSON_TYPE else openapi_v2.PROTOBUF_CONTENT_TYPE
            return Response(200, body, label, raw=True)
        if segments == ["swagger-2.0.0.pb-v1"]:  # the path clients before 1.14 read
            body = openapi_v2.document(server.resources, openapi_v2.PROTOBUF)
            return Response(200, body, openapi_v2.PROTOBUF_CONTENT_TYPE, raw=True)
        if segments and segments[0] in health.CHECKS and len(segments) <= 3:
            query = Query(request.query)
            check = "/".join(segments[1:]) or None
            text = health.answer(
                segments[0], check, query.get("verbose") is not None, query.values("exclude")
            )
            if text is None:
                raise st.not_found_path()
            return Response(200, text, "text/plain; charset=utf-8", raw=True)
        fixed = _fixed_document(server, segments)
        if fixed is not None:
            if fixed.content_type == JSON_TYPE:
                _check_acceptable(request)
            return fixed
    if len(segments) >= 2 and segments[0] == "api" and segments[1] == "v1":
        return _resource_request(server, request, "", "v1", segments[2:])
    if len(segments) >= 3 and segments[0] == "apis":
        return _resource_request(server, request, segments[1], segments[2], segments[3:])
    raise st.not_found_path()


def _check_acceptable(request: Request) -> None:
    accept = request.header("Accept")
    if not accept:
        return
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in ("application/json", "*/*", "application/*", ""):
            return
    # Only what kubesim answers in: it reads YAML and protobuf bodies but writes JSON alone, so
    # the message must not offer those (kube-apiserver, which writes all three, lists them).
    raise st.not_acceptable(["application/json"])


def _fixed_document(server: APIServer, segments: list[str]) -> Response | None:
    resources = server.resources
    doc: Any = None
    if segments == ["api"]:
        doc = discovery.api_versions()
    elif segments == ["api", "v1"]:
        doc = discovery.api_resource_list(resources, "", "v1")
    elif segments == ["apis"]:
        doc = discovery.api_group_list(resources)
    elif len(segments) == 2 and segments[0] == "apis":
        doc = discovery.api_group(resources, segments[1])
        if doc is None:
            raise st.not_found_path()
    elif len(segments) == 3 and segments[0] == "apis":
        doc = discovery.api_resource_list(resources, segments[1], segments[2])
        if doc is None:
            raise st.not_found_path()
    elif segments == ["version"]:
        # version.go writes it with responsewriters.WriteRawJSON: indented, no newline.
        return Response(200, dumps(discovery.SERVER_VERSION, option=OPT_INDENT_2), raw=True)
    elif segments == ["openapi", "v3"]:
        return Response(200, dumps(openapi.index(resources)), raw=True)
    elif segments[:2] == ["openapi", "v3"] and len(segments) in (4, 5):
        rest = segments[2:]
        group, version = (
            ("", rest[1])
            if rest[0] == "api" and len(rest) == 2
            else ((rest[1], rest[2]) if rest[0] == "apis" and len(rest) == 3 else ("", ""))
        )
        body = openapi.group_version_document(resources, group, version) if version else None
        if body is None:
            raise st.not_found_path()
        return Response(200, body, JSON_TYPE, raw=True)
    return None if doc is None else _json(200, doc)


def _locate(server: APIServer, group: str, version: str, rest: list[str]) -> _Target:
    legacy_watch = bool(rest) and rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        candidate = server.lookup(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest:
        raise st.not_found_path()
    resource = server.lookup(group, version, rest[0])
    if resource is None or len(rest) > 3:
        raise st.not_found_path()
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else None
    if resource.namespaced and name is not None and namespace is None:
        raise st.not_found_path()  # e.g. /api/v1/pods/foo
    # Only the kinds whose storage registers a subresource serve its path; elsewhere it is a
    # path that names nothing (404), e.g. /status of a ConfigMap or /scale of a Job.
    if subresource is not None and not (
        (subresource == "status" and resource.status_subresource)
        or (subresource == "scale" and resource.scale_subresource)
        or any(s.name == subresource for s in SUBRESOURCES.get((group, resource.plural), ()))
    ):
        raise st.not_found_path()
    if resource.review and name is not None:
        raise st.not_found_path()  # a review is created and answered, never named
    if resource.stored_as is not None:
        return _Target(resource.stored_as, namespace, name, subresource, legacy_watch, resource)
    return _Target(resource, namespace, name, subresource, legacy_watch)


# The options kind each write verb decodes its query into (metav1.CreateOptions, ...).
_WRITE_OPTIONS = {
    "POST": "CreateOptions",
    "PUT": "UpdateOptions",
    "PATCH": "PatchOptions",
    "DELETE": "DeleteOptions",
}


def _validated_body(
    server: APIServer, request: Request, target: _Target, query: Query, options_kind: str
) -> tuple[Any, dict[str, str]]:
    """The decoded body after ``fieldValidation`` (kubesim.apiserver.field_validation), and the
    ``Warning`` header that names what it dropped."""
    mode = field_validation.directive(query.get("fieldValidation"), options_kind)
    served = target.view or target.resource
    decoded = _decode_body(request, served.kind)
    struct_decoding.check_body(served, decoded)
    body, warnings = field_validation.check(served, decoded, mode)
    return _to_storage(server, target, body), ({"Warning": ", ".join(warnings)} if warnings else {})


def _to_storage(server: APIServer, target: _Target, body: Any) -> Any:
    """A body in the version the request names, as the stored resource keeps it."""
    if target.view is None or not isinstance(body, dict):
        return body
    # Checked against the version the request names before the conversion retypes it.
    server.registry.check_body(target.view, body, target.namespace)
    try:
        return conversion.for_view(target.view)[1](body)
    except conversion.ConversionError as exc:
        raise st.bad_request(str(exc)) from None


def _served(target: _Target, response: Response) -> Response:
    """An answer about the stored resource in the version the request names."""
    view = target.view
    body = response.body
    if view is None or isinstance(body, tables.TableWatchStream):
        return response
    if isinstance(body, WatchStream):
        return replace(response, body=ConvertedWatchStream(body, view))
    if response.status >= 300 or not body:
        return response
    obj = loads(body)
    if not isinstance(obj, dict) or obj.get("kind") not in (view.kind, view.list_kind):
        return response  # a Status, a Table
    return replace(response, body=dumps(conversion.served_object(view, obj)))


def _dry_run(method: str, query: Query, body_options: JSON | None = None) -> bool:
    """``dryRun=All`` (in the query, or a DeleteOptions body): validated like a write, never
    stored. Any other value is refused as apimachinery's ValidateDryRun refuses it."""
    values = query.values("dryRun")
    if body_options is not None and isinstance(body_options.get("dryRun"), list):
        values += [str(v) for v in body_options["dryRun"]]
    for index, value in enumerate(values):
        if value != "All":
            options = _WRITE_OPTIONS.get(method, "CreateOptions")
            raise st.unsupported_option(options, f"dryRun[{index}]", value, ["All"])
    return bool(values)


def _resource_request(
    server: APIServer, request: Request, group: str, version: str, rest: list[str]
) -> Response:
    target = _locate(server, group, version, rest)
    deprecation = (target.view or target.resource).deprecation_warning
    try:
        response = _served(target, _serve(server, request, target))
    except st.StatusError as error:
        if deprecation is None:
            raise
        return _warned(_status(error), deprecation)  # added before the handler ran
    conversion_asked = negotiation.negotiate(request.header("Accept") or "")
    if conversion_asked is not None and partial_metadata.is_metadata(conversion_asked):
        response = _as_metadata(target, response, conversion_asked)
    return response if deprecation is None else _warned(response, deprecation)


def _warned(response: Response, text: str) -> Response:
    """``response`` with ``text`` first among its ``Warning`` header's values."""
    warning = st.warning(text)
    others = response.headers.get("Warning")
    headers = {**response.headers, "Warning": f"{warning}, {others}" if others else warning}
    return replace(response, headers=headers)


def _as_metadata(
    target: _Target, response: Response, conversion_asked: negotiation.Conversion
) -> Response:
    """An answer converted to PartialObjectMetadata(List), as the Accept header asked."""
    body = response.body
    if isinstance(body, WatchStream):
        if conversion_asked.kind != partial_metadata.OBJECT:
            return response  # no watch event converts to a list: each object goes out as it is
        return replace(
            response, body=partial_metadata.PartialMetadataWatchStream(body, conversion_asked)
        )
    if response.content_type != JSON_TYPE or not body:
        return response  # a pod's log
    converted = partial_metadata.convert_body(body, target.resource, conversion_asked)
    return replace(response, body=converted)


def _serve(server: APIServer, request: Request, target: _Target) -> Response:
    _check_acceptable(request)
    query = Query(request.query)
    method = request.method
    verb = _verb(method, target, query)
    if verb is not None and target.subresource is None and verb not in target.resource.verbs:
        # endpoints/installer.go registers a route only for the verbs the storage implements
        # (componentstatuses: get and list), so any other method is 405 MethodNotAllowed.
        raise st.method_not_allowed(method)
    if verb is not None:
        with server.lock:
            injected = server.request_failures.take(
                verb, target.resource, target.namespace, now=server.clock.now()
            )
            if isinstance(injected, ConnectionReset):
                server.trace.record("injected-reset", verb, target.resource.plural)
                raise injected
            if injected is not None:
                server.trace.record("injected-failure", verb, target.resource.plural, injected.code)
                raise injected
    if target.subresource == "scale":
        return _scale(server, request, target, query)
    if target.subresource == "binding":
        return _binding(server, request, target, query)
    if target.subresource == "eviction":
        return _eviction(server, request, target, query)
    if target.subresource == "log":
        return _log(server, request, target, query)
    if target.subresource == "token":
        return _token(server, request, target, query)
    if target.resource.review:
        return _review(server, request, target, query)
    if target.resource.metrics:
        return _metrics(server, request, target, query)
    if method == "GET":
        table = tables.requested(request.header("Accept"), query.get("includeObject"))
        if target.legacy_watch or query.flag("watch"):
            watch = _watch(server, target, query)
            if table is not None and isinstance(watch.body, WatchStream):
                return Response(200, tables.TableWatchStream(watch.body, table))
            return watch
        if target.name is None:
            return _list(server, target, query, table)
        stored = server.registry.get(target.resource, target.namespace, target.name)
        if table is not None:
            return Response(200, tables.object_table(server, target.resource, stored, table))
        return Response(200, stored.json())
    if method == "POST" and target.name is None:
        dry_run = _dry_run(method, query)
        body, warnings = _validated_body(server, request, target, query, "CreateOptions")
        if target.resource.kind == "CertificateSigningRequest" and isinstance(body, dict):
            body = reviews.with_requester(body, requester(server, request))
        with server.lock, _managing(server, request, query):
            stored = server.registry.create(
                target.resource, body, target.namespace, dry_run=dry_run
            )
            return Response(201, stored.json(), headers=warnings)
    if method == "DELETE" and target.name is None:
        if "deletecollection" not in target.resource.verbs:
            raise st.method_not_allowed(method)  # namespaces: one at a time
        options = _delete_options(request)
        dry_run = _dry_run(method, query, options)
        result = server.delete_collection(
            target.resource,
            namespace=target.namespace,
            label_selector=query.get("labelSelector") or "",
            field_selector=query.get("fieldSelector") or "",
            dry_run=dry_run,
            propagation_policy=_propagation_policy(query, options),
        )
        return _json(200, result)
    if target.name is not None:
        if method == "PUT":
            dry_run = _dry_run(method, query)
            body, warnings = _validated_body(server, request, target, query, "UpdateOptions")
            with server.lock, _managing(server, request, query):
                stored = server.registry.update(
                    target.resource,
                    target.namespace,
                    target.name,
                    body,
                    target.subresource,
                    dry_run=dry_run,
                )
                return Response(200, stored.json(), headers=warnings)
        if method == "PATCH":
            content_type = request.header("Content-Type").split(";")[0].strip().lower()
            if content_type == APPLY_PATCH:
                return _server_side_apply(server, target, request, query)
            if content_type not in PATCH_TYPES:
                raise st.unsupported_media_type(_PATCH_TYPES_ACCEPTED)
            if query.get("force") is not None:
                raise _patch_options_invalid(
                    "force", "Forbidden: may not be specified for non-apply patch"
                )
            field_validation.directive(query.get("fieldValidation"), "PatchOptions")
            dry_run = _dry_run(method, query)
            body = _decode_json(_check_size(request.body))
            with server.lock, _managing(server, request, query):
                stored = server.registry.patch(
                    target.resource,
                    target.namespace,
                    target.name,
                    body,
                    content_type,
                    target.subresource,
                    dry_run=dry_run,
                    view=target.view,
                )
                return Response(200, stored.json())
        if method == "DELETE" and target.subresource is None:
            options = _delete_options(request)
            dry_run = _dry_run(method, query, options)
            preconditions = options.get("preconditions") or {}
            if not isinstance(preconditions, dict):
                raise st.bad_request("preconditions must be an object")
            result = server.delete(
                target.resource,
                target.name,
                namespace=target.namespace,
                preconditions=preconditions,
                dry_run=dry_run,
                grace_period_seconds=_grace_period(query, options),
                propagation_policy=_propagation_policy(query, options),
            )
            return _json(200, result)
    raise st.method_not_allowed(method)


APPLY_PATCH = "application/apply-patch+yaml"


def _binding(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """POST of a Binding: the scheduler's write (see kubesim.cluster.kubelet). The answer is a
    success Status with the create's code, as the real handler fills ``code`` in."""
    assert target.name is not None
    if request.method != "POST":
        raise st.method_not_allowed(request.method)
    dry_run = _dry_run(request.method, query)
    node = pods.binding_target(_decode_json(_check_size(request.body)), target.name)
    with server.lock, _managing(server, request, query):
        server.registry.bind(target.resource, target.namespace, target.name, node, dry_run=dry_run)
    return _json(201, {**st.success(), "code": 201})


def _eviction(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """POST of an Eviction (kubesim.apiserver.eviction): the pod is deleted if its budget
    allows; the answer is a success Status with the create's code."""
    assert target.name is not None
    assert target.namespace is not None
    if request.method != "POST":
        raise st.method_not_allowed(request.method)
    dry_run = _dry_run(request.method, query)
    body = _decode_body(request, "Eviction")
    with server.lock, _managing(server, request, query):
        eviction.evict(
            server, target.resource, target.namespace, target.name, body, dry_run=dry_run
        )
    return _json(201, {**st.success(), "code": 201})


def _token(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """POST serviceaccounts/{name}/token (see kubesim.apiserver.reviews.token_request)."""
    assert target.name is not None
    assert target.namespace is not None
    if request.method != "POST":
        raise st.method_not_allowed(request.method)
    dry_run = _dry_run(request.method, query)
    body = _decode_body(request)
    with server.lock:
        answer = reviews.token_request(server, target.namespace, target.name, body)
    if dry_run:
        answer["status"] = {"token": "", "expirationTimestamp": None}
    return _json(201, answer)


def _review(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """POST of a create-only kind: a Binding binds a pod, every other kind is a question
    answered in its ``status`` (kubesim.apiserver.reviews)."""
    dry_run = _dry_run(request.method, query)  # a question stores nothing either way
    body = _decode_body(request)
    if target.resource.kind == "Binding":
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        name = str(meta.get("name") or "")
        if not name:
            raise st.bad_request("a Binding must name the pod it binds in metadata.name")
        node = pods.binding_target(body, name)
        with server.lock, _managing(server, request, query):
            server.registry.bind(
                server.resource("pods"), target.namespace, name, node, dry_run=dry_run
            )
        return _json(201, {**st.success(), "code": 201})
    with server.lock:
        answer = reviews.review(
            server,
            target.resource,
            target.namespace,
            body,
            requester(server, request),
        )
    return _json(201, answer)


def requester(server: APIServer, request: Request) -> JSON:
    """Who the request acts as: its authenticated user (:func:`reviews.user_of`), or the user
    its ``Impersonate-*`` headers name (every user here may impersonate: all are admins)."""
    user = reviews.user_of(server, request.user, request.header("Authorization"))
    return reviews.impersonated(user, request.header_lines or tuple(request.headers.items()))


def _metrics(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """GET of an aggregated API's resource (PodMetrics, NodeMetrics: kubesim.cluster.metrics), one
    or a list, as the server that serves its group answers."""
    if query.flag("watch") or target.legacy_watch:
        raise st.method_not_allowed("GET")  # metrics-server serves get and list only
    labels = parse_label_selector(query.get("labelSelector") or "")
    fields = parse_field_selector(target.resource, query.get("fieldSelector") or "")
    with server.lock:
        serve = server.aggregated_apis.get(target.resource.group)
        if serve is None:
            raise st.not_found_path()
        answer = serve(server, target.resource, target.namespace, target.name, labels, fields)
    return _json(200, answer)


def _log(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """GET pods/{name}/log as text (see kubesim.apiserver.pods.container_log)."""
    assert target.name is not None
    if request.method != "GET":
        raise st.method_not_allowed(request.method)
    with server.lock:
        pod = server.registry.get(target.resource, target.namespace, target.name).obj
        text = pods.container_log(
            pod, query.get("container"), query.flag("previous"), server.registry.kubelets
        )
        container = pods.log_container(pod, query.get("container"))
        if query.flag("follow") and not text and log_follow.container_running(pod, container):
            # Open until the container stops; cut, silenced and ended as a watch is.
            stream = server.follow_log(target.namespace or "", target.name, container)
            return Response(200, stream, content_type="text/plain")
    return Response(200, text, content_type="text/plain", raw=True)


def _scale(server: APIServer, request: Request, target: _Target, query: Query) -> Response:
    """GET, PUT and PATCH of an autoscaling/v1 Scale (see kubesim.apiserver.scale)."""
    assert target.name is not None
    name, namespace, resource = target.name, target.namespace, target.resource
    with server.lock:
        if request.method == "GET":
            return _json(200, server.registry.get_scale(resource, namespace, name))
        if request.method == "PUT":
            dry_run = _dry_run(request.method, query)
            body = _decode_body(request)
            with _managing(server, request, query):
                scale = server.registry.update_scale(
                    resource, namespace, name, body, dry_run=dry_run
                )
            return _json(200, scale)
        if request.method == "PATCH":
            dry_run = _dry_run(request.method, query)
            content_type = request.header("Content-Type").split(";")[0].strip().lower()
            if content_type not in PATCH_TYPES:
                raise st.unsupported_media_type(_PATCH_TYPES_ACCEPTED)
            body = _decode_json(_check_size(request.body))
            with _managing(server, request, query):
                scale = server.registry.patch_scale(
                    resource, namespace, name, body, content_type, dry_run=dry_run
                )
            return _json(200, scale)
    raise st.method_not_allowed(request.method)


@contextlib.contextmanager
def _managing(server: APIServer, request: Request, query: Query) -> Iterator[None]:
    """The request's field manager owns what its write changes (metadata.managedFields): its
    ``fieldManager``, or, on a server that names managers as a cluster does, its User-Agent."""
    manager = query.get("fieldManager") or None
    if manager is None and server.field_managers_from_user_agent:
        manager = managed_fields.manager_from_user_agent(request.header("User-Agent")) or None
    server.field_manager = manager
    try:
        yield
    finally:
        server.field_manager = None


def _patch_options_invalid(field: str, message: str) -> st.StatusError:
    return st.invalid(
        "PatchOptions",
        "meta.k8s.io",
        "",
        [{"reason": "FieldValueInvalid", "message": message, "field": field}],
    )


def _server_side_apply(
    server: APIServer, target: _Target, request: Request, query: Query
) -> Response:
    manager = query.get("fieldManager")
    if not manager:
        raise _patch_options_invalid("fieldManager", "Required value: is required for apply patch")
    if target.subresource is not None:
        raise st.unsupported_media_type(list(PATCH_TYPES))  # apply to /status: not modelled
    dry_run = _dry_run("PATCH", query)
    body = _decode_yaml(_check_size(request.body))  # YAML, of which JSON is a subset
    if not isinstance(body, dict):
        raise st.bad_request("the applied configuration must be an object")
    body = _to_storage(server, target, body)
    assert target.name is not None
    with server.lock:
        stored, created = server.registry.apply(
            target.resource,
            target.namespace,
            target.name,
            body,
            manager,
            force=query.flag("force"),
            dry_run=dry_run,
        )
        return Response(201 if created else 200, stored.json())


def _grace_period(query: Query, options: JSON) -> int | None:
    """DeleteOptions' ``gracePeriodSeconds``: the body's, else the query's (as the handler
    decodes the query first and the body over it); a value that is no integer is a 400."""
    value = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise st.bad_request(f"gracePeriodSeconds must be an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise st.bad_request(f"gracePeriodSeconds must be an integer, got {value!r}") from None


def _propagation_policy(query: Query, options: JSON) -> str | None:
    """DeleteOptions' ``propagationPolicy`` (or the deprecated ``orphanDependents``): the
    body's, else the query's."""
    return propagation.policy_of(
        options, query.get("propagationPolicy"), query.get("orphanDependents")
    )


def _delete_options(request: Request) -> JSON:
    options = _decode_json(request.body) if request.body.strip() else {}
    if not isinstance(options, dict):
        raise st.bad_request("the body of a DELETE request must be a DeleteOptions object")
    return options


def _verb(method: str, target: _Target, query: Query) -> str | None:
    """The REST verb of a resource request, as RBAC names it (None for unknown methods)."""
    if method == "GET":
        if target.legacy_watch or query.flag("watch"):
            return "watch"
        return "list" if target.name is None else "get"
    if target.name is None:
        return {"POST": "create", "DELETE": "deletecollection"}.get(method)
    return {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)


def _check_size(body: bytes) -> bytes:
    if len(body) > MAX_BODY_BYTES:
        raise st.too_large_entity(MAX_BODY_BYTES)
    return body


def _decode_json(body: bytes) -> Any:
    try:
        return loads(body)
    except JSONDecodeError as exc:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def _unrecognized(kind: str, error: st.StatusError, body: bytes) -> st.StatusError:
    """A body that decodes to no object, as the create and update handlers word it
    (handlers/create.go transformDecodeError): the kind expected, the decoder's error and the
    first 30 bytes of the body, as text when it starts like an object, else in hex."""
    if not body:
        summary = "<empty>"
    else:
        head = body[:30]
        text = head.decode(errors="replace") if body[:1] == b"{" else head.hex()
        summary = text + (" ..." if len(body) > 30 else "")
    return st.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): {error} ({summary})"
    )


def _decode_body(request: Request, kind: str | None = None) -> Any:
    """The request's object. ``kind``: the kind a create or update expects, named by the error
    when the body is no object at all."""
    body = _check_size(request.body)
    content_type = request.header("Content-Type").split(";")[0].strip().lower()
    if content_type in ("", "application/json", "*/*"):
        try:
            obj = _decode_json(body)
        except st.StatusError as exc:
            raise exc if kind is None else _unrecognized(kind, exc, body) from None
    elif content_type == "application/yaml":
        obj = _decode_yaml(body)
    elif content_type == protobuf.CONTENT_TYPE:
        try:
            obj = protobuf.decode_object(body)
        except protobuf.UnknownKind:
            # Custom resources have no protobuf encoding: the real server refuses them so.
            raise st.unsupported_media_type(["application/json", "application/yaml"]) from None
        except protobuf.ProtobufError as exc:
            raise st.bad_request(f"the protobuf body could not be decoded: {exc}") from None
    else:
        raise st.unsupported_media_type(_BODY_TYPES)
    if not isinstance(obj, dict):
        error = st.bad_request(
            f"couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{json_kind(obj)} into Go value of type struct {{ APIVersion string "
            f'"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }}'
        )
        raise error if kind is None else _unrecognized(kind, error, body)
    return obj


def _decode_yaml(body: bytes) -> Any:
    try:
        import yaml
    except ImportError:  # PyYAML comes with the kubernetes client; without it, say so
        raise st.unsupported_media_type(["application/json"]) from None
    try:
        obj = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise st.bad_request(f"error converting YAML to JSON: {exc}") from None
    except RecursionError:  # PyYAML's composer recurses once per nesting level
        raise st.bad_request(
            "error converting YAML to JSON: the document nests too deeply"
        ) from None
    # What sigs.k8s.io/yaml does next: the document as JSON. Dates become strings, other keys
    # become strings; what JSON cannot hold at all (a lone surrogate) is the client's error.
    try:
        return loads(dumps(obj, option=OPT_NON_STR_KEYS))
    except TypeError as exc:
        raise st.bad_request(f"error converting YAML to JSON: {exc}") from None


# -- list and watch ------------------------------------------------------------------------
def _selectors(server: APIServer, target: _Target, query: Query) -> tuple[Any, Any]:
    labels = parse_label_selector(query.get("labelSelector") or "")
    field_text = query.get("fieldSelector") or ""
    if target.name is not None:
        # handlers/get.go listOpts: a named watch is a watch with metadata.name=<name>.
        fields = parse_field_selector(target.resource, field_text)
        for f, op, v in fields.requirements():
            if f == "metadata.name" and (op != "=" or v != target.name):
                raise st.bad_request("fieldSelector metadata.name doesn't match requested name")
        from kubesim.apiserver.selectors import escape_field_value

        combined = ",".join(
            x for x in (field_text, f"metadata.name={escape_field_value(target.name)}") if x
        )
        return labels, parse_field_selector(target.resource, combined)
    return labels, parse_field_selector(target.resource, field_text)


def _list(
    server: APIServer, target: _Target, query: Query, table: tables.TableOptions | None = None
) -> Response:
    rv_text = query.get("resourceVersion") or ""
    match = query.get("resourceVersionMatch") or ""
    token = query.get("continue") or ""
    limit = query.integer("limit")
    query.integer("timeoutSeconds")  # ListOptions decoding rejects a non-integer on lists too
    # apimachinery internalversion/validation ValidateListOptions: every cause, in its order.
    causes: list[JSON] = []
    if match:
        if not rv_text:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if token:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in ("Exact", "NotOlderThan"):
            causes.append(
                st.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""])
            )
        if match == "Exact" and rv_text == "0":
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if query.get("sendInitialEvents") is not None:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise _list_options_invalid(*causes)
    rv = _parse_rv(rv_text)
    labels, fields = _selectors(server, target, query)
    if limit is not None and limit <= 0:
        limit = None
    start = None
    exact = False
    if token:
        if rv_text not in ("", "0"):
            raise st.bad_request("specifying resource version is not allowed when using continue")
        try:
            rv, start = decode_continue(token, namespaced=target.resource.namespaced)
        except InvalidContinue as exc:
            # storage/interfaces.go and cacher/watch_cache.go wrap every decoding error so.
            raise st.bad_request(f"invalid continue token: {exc}") from None
        exact = True
        with server.lock:
            if rv < server.storage.compacted_rv:
                raise st.expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
    elif rv is not None and rv > 0:
        # API Concepts: Exact when asked, or when paging from a specific RV; else NotOlderThan.
        exact = match == "Exact" or (limit is not None and match != "NotOlderThan")
        with server.lock:
            if rv > server.storage.rv:
                from kubesim.apiserver.watch_cache import too_large_resource_version

                raise too_large_resource_version(rv, server.storage.rv)
    # rv == 0 is "Any": served from the watch cache (list_page), possibly older than storage.
    page = server.list_page(
        target.resource,
        namespace=target.namespace,
        labels=labels,
        fields=fields,
        rv=rv,
        exact=exact,
        limit=limit,
        start=start,
    )
    if table is not None:
        return Response(200, tables.list_table(server, page, table), wait=page.took)
    return Response(200, _encode_list(page), wait=page.took)


def _encode_list(page: Any) -> bytes:
    resource: ResourceType = page.resource
    metadata: JSON = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        metadata["continue"] = page.continue_token
        if page.remaining is not None:
            metadata["remainingItemCount"] = page.remaining
    head = dumps(
        {"kind": resource.list_kind, "apiVersion": resource.api_version, "metadata": metadata}
    )
    keep = resource.list_items_have_type
    items = b",".join(stored.item_json(keep) for stored in page.items)
    # Splice the items in without re-encoding them: they are cached per stored version.
    return head[:-1] + b',"items":[' + items + b"]}"


def _watch(server: APIServer, target: _Target, query: Query) -> Response:
    rv_text = query.get("resourceVersion") or ""
    match = query.get("resourceVersionMatch") or ""
    send_initial = query.tristate("sendInitialEvents")
    allow_bookmarks = query.flag("allowWatchBookmarks")
    timeout = query.integer("timeoutSeconds")
    # apimachinery internalversion/validation validateWatchOptions: every cause, in its order.
    causes: list[JSON] = []
    if send_initial is not None:
        if match != "NotOlderThan":
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )
            )
        if not server.watch_list:
            causes.append(
                _forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate "
                    "is enabled",
                )
            )
    if match:
        if send_initial is None:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != "NotOlderThan":
            causes.append(st.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if query.get("continue"):
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    if causes:
        raise _list_options_invalid(*causes)
    _parse_rv(rv_text)
    labels, fields = _selectors(server, target, query)
    stream = server.watch(
        target.resource,
        namespace=target.namespace,
        labels=labels,
        fields=fields,
        resource_version=rv_text,
        allow_bookmarks=allow_bookmarks,
        send_initial_events=send_initial,
        timeout_seconds=float(timeout) if timeout is not None else None,
    )
    return Response(200, stream)


# -- admin API (fault control for a running server) ----------------------------------------
ADMIN_ENDPOINTS: dict[str, str] = {
    "GET /kubesim/state": (
        "resourceVersion, compactedResourceVersion, openWatches, historyWindow, now"
    ),
    "POST /kubesim/expire-watches": "close every open watch cleanly (server-side timeout)",
    "POST /kubesim/drop-watches": "cut every open watch abruptly (no terminating chunk)",
    "POST /kubesim/compact": "forget the history: older RVs now get 410 Expired",
    "POST /kubesim/advance?seconds=N": "move virtual time forward by N seconds",
    "POST /kubesim/stall-watch-cache": (
        "stop the watch cache at the current RV: stale lists, 504 on newer RVs"
    ),
    "POST /kubesim/resume-watch-cache": "let a stalled watch cache catch up",
    "POST /kubesim/fail-requests?code=C&count=N|seconds=S&verbs=list,watch&retryAfter=R": (
        "answer the next N requests, or all for S seconds, with an error Status"
    ),
    "POST /kubesim/reset-connections?count=N|seconds=S&verbs=list,watch": (
        "read the next N requests, or all for S seconds, and reset their connections unanswered"
    ),
}


def _admin(server: APIServer, request: Request, rest: list[str]) -> Response:
    verb = "/".join(rest)
    actions: dict[str, Callable[[], JSON]] = {
        "expire-watches": lambda: {"closed": server.expire_watches()},
        "drop-watches": lambda: {"dropped": server.drop_watches()},
        "compact": lambda: {"compactedResourceVersion": str(server.compact())},
        "advance": lambda: _advance(server, Query(request.query)),
        "stall-watch-cache": lambda: {"stalledAt": str(server.stall_watch_cache())},
        "resume-watch-cache": lambda: {"held": server.resume_watch_cache()},
        "fail-requests": lambda: _fail_requests(server, Query(request.query)),
        "reset-connections": lambda: _fail_requests(server, Query(request.query), reset=True),
    }
    if request.method == "GET" and verb in ("", "state"):
        if verb == "":
            return _json(200, {"endpoints": ADMIN_ENDPOINTS})
        with server.lock:
            return _json(
                200,
                {
                    "resourceVersion": str(server.storage.rv),
                    "compactedResourceVersion": str(server.storage.compacted_rv),
                    "openWatches": len(server.watchers()),
                    "historyWindow": server.storage.window,
                    "now": server.clock.now(),
                    "requests": server.request_count,
                    "traceHash": server.trace.hexdigest(),
                },
            )
    if verb in actions:
        if request.method != "POST":
            raise st.method_not_allowed(request.method)
        return _json(200, actions[verb]())
    raise st.not_found_path()


def _fail_requests(server: APIServer, query: Query, *, reset: bool = False) -> JSON:
    """``fail-requests`` (``reset-connections``): the query names the arguments of
    :meth:`APIServer.fail_requests` (:meth:`APIServer.reset_connections`); a bad one is a 400
    that says which and what was expected (the server's own ValueError message)."""
    arguments: dict[str, Any] = {}
    integers = {"count": "count"}  # query name -> keyword
    if not reset:
        integers = {"code": "code", **integers, "retryAfter": "retry_after"}
    unknown = [name for name in ("code", "retryAfter") if reset and query.get(name) is not None]
    if unknown:
        raise st.bad_request(f"reset-connections takes count, seconds and verbs, not {unknown[0]}")
    for name, keyword in integers.items():
        text = query.get(name)
        if text is not None:
            try:
                arguments[keyword] = int(text)
            except ValueError:
                raise st.bad_request(f"{name} must be an integer, got {name}={text!r}") from None
    seconds = query.get("seconds")
    if seconds is not None:
        try:
            arguments["seconds"] = float(seconds)
        except ValueError:
            raise st.bad_request(f"seconds must be a number > 0, got seconds={seconds!r}") from None
    verbs = query.get("verbs")
    if verbs is not None:
        arguments["verbs"] = [verb for verb in verbs.split(",") if verb]
    try:
        if reset:
            server.reset_connections(**arguments)
        else:
            server.fail_requests(**arguments)
    except ValueError as error:
        raise st.bad_request(str(error)) from None
    return {"resetting" if reset else "failing": arguments}


def _advance(server: APIServer, query: Query) -> JSON:
    text = query.get("seconds")
    try:
        seconds = float(text) if text is not None else -1.0
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise st.bad_request(f"seconds must be a number >= 0, got seconds={text!r}")
    server.advance(seconds)
    return {"now": server.clock.now()}
