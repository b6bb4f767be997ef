"""Kubernetes ``Status`` objects and the exception that carries one.

Every error the fake API server reports, on any transport, is a :class:`StatusError`
whose ``status`` dict is exactly what kube-apiserver would put on the wire (apimachinery
``pkg/api/errors/errors.go``). Constructors below are named after their apimachinery twins
(``NewNotFound`` -> :func:`not_found`) and reproduce the message formats byte for byte, because
clients match on ``code``, ``reason`` and sometimes ``message``.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


class StatusError(Exception):
    """A request failed; ``status`` is the Kubernetes ``Status`` to send back."""

    def __init__(self, status: JSON) -> None:
        super().__init__(status.get("message", ""))
        self.status = status

    @property
    def code(self) -> int:
        return int(self.status["code"])

    @property
    def reason(self) -> str:
        return str(self.status.get("reason", ""))


def warning(text: str) -> str:
    """One value of a ``Warning`` response header (RFC 7234: code 299, agent ``-``, the text
    quoted), as the apiserver's warning recorder writes it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def failure(
    code: int,
    reason: str,
    message: str,
    details: JSON | None = None,
    *,
    metadata: JSON | None = None,
) -> JSON:
    """A ``Status`` with ``status: Failure`` in apimachinery's field order."""
    status: JSON = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def success(details: JSON | None = None) -> JSON:
    status: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        status["details"] = details
    return status


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def bad_request(message: str) -> StatusError:
    return StatusError(failure(400, "BadRequest", message))


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(failure(401, "Unauthorized", message))


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        failure(
            404,
            "NotFound",
            f'{_qualified(resource, group)} "{name}" not found',
            {"name": name, "group": group, "kind": resource}
            if group
            else {"name": name, "kind": resource},
        )
    )


def not_found_path() -> StatusError:
    """The 404 for a path that names no resource at all."""
    return StatusError(
        failure(404, "NotFound", "the server could not find the requested resource", {})
    )


def method_not_allowed(method: str) -> StatusError:
    return StatusError(
        failure(
            405,
            "MethodNotAllowed",
            f"the server does not allow this method on the requested resource ({method})",
            {},
        )
    )


def not_acceptable(accepted: list[str]) -> StatusError:
    return StatusError(
        failure(
            406,
            "NotAcceptable",
            "only the following media types are accepted: " + ", ".join(accepted),
        )
    )


def not_acceptable_conversion(message: str) -> StatusError:
    """406 for an ``as=`` conversion that does not apply to the answer (a list asked for as one
    object's metadata), as endpoints/handlers/response.go's errNotAcceptable words it."""
    return StatusError(failure(406, "NotAcceptable", message))


def forbidden(resource: str, group: str, name: str, why: str) -> StatusError:
    """403 Forbidden as apimachinery's NewForbidden words it (admission and RBAC refusals)."""
    qualified = _qualified(resource, group)
    message = (
        f'{qualified} "{name}" is forbidden: {why}' if name else f"{qualified} is forbidden: {why}"
    )
    details: JSON = {"name": name, "group": group, "kind": resource}
    if not group:
        del details["group"]
    if not name:
        del details["name"]
    return StatusError(failure(403, "Forbidden", message, details))


def already_exists(resource: str, group: str, name: str) -> StatusError:
    details: JSON = (
        {"name": name, "group": group, "kind": resource}
        if group
        else {"name": name, "kind": resource}
    )
    return StatusError(
        failure(
            409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists', details
        )
    )


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    details: JSON = (
        {"name": name, "group": group, "kind": resource}
        if group
        else {"name": name, "kind": resource}
    )
    return StatusError(
        failure(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
            details,
        )
    )


# apiserver pkg/registry/generic/registry/store.go
OPTIMISTIC_LOCK_ERROR = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def expired(message: str, *, continue_token: str | None = None) -> StatusError:
    metadata: JSON = {"continue": continue_token} if continue_token else {}
    return StatusError(failure(410, "Expired", message, metadata=metadata))


def too_large_entity(limit: int) -> StatusError:
    return StatusError(
        failure(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")
    )


def unsupported_media_type(accepted: list[str]) -> StatusError:
    return StatusError(
        failure(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(accepted),
        )
    )


def invalid(kind: str, group: str, name: str, causes: list[JSON]) -> StatusError:
    """422 Invalid. ``causes`` are ``{"reason", "message", "field"}`` dicts (``StatusCause``).

    The message aggregates the causes the way ``field.ErrorList.ToAggregate`` does: one cause is
    printed alone, several are wrapped in ``[a, b]``.
    """
    texts = [
        f"{c['field']}: {c['message']}" if c.get("field") else str(c["message"]) for c in causes
    ]
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details: JSON = (
        {"name": name, "group": group, "kind": kind} if group else {"name": name, "kind": kind}
    )
    if not name:
        del details["name"]  # StatusDetails.Name is omitempty (ListOptions errors have none)
    if not kind:
        del details["kind"]  # so is Kind (a patch that does not decode names no kind)
    details["causes"] = causes
    return StatusError(
        failure(422, "Invalid", f'{qualified} "{name}" is invalid: {aggregate}', details)
    )


def not_supported(field: str, value: str, supported: list[str]) -> JSON:
    """The ``StatusCause`` of field.NotSupported: ``value`` of ``field`` is none of
    ``supported``."""
    choices = ", ".join(f'"{choice}"' for choice in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f'Unsupported value: "{value}": supported values: {choices}',
        "field": field,
    }


def unsupported_option(
    options_kind: str, field: str, value: str, supported: list[str]
) -> StatusError:
    """422 on a request's options (``CreateOptions``, ``PatchOptions``, ...): ``field`` holds
    ``value``, which is not one of ``supported``."""
    return invalid(options_kind, "meta.k8s.io", "", [not_supported(field, value, supported)])


def timeout(message: str, *, causes: list[JSON] | None = None, retry_after: int = 1) -> StatusError:
    details: JSON = {"retryAfterSeconds": retry_after}
    if causes:
        details["causes"] = causes
    # NewTimeoutError formats the message as "Timeout: %s".
    return StatusError(failure(504, "Timeout", f"Timeout: {message}", details))


def unknown(code: int, message: str) -> StatusError:
    """What apimachinery's ErrorToAPIStatus makes of an error that is not an API error: the
    code, the error's text, and no reason (StatusReasonUnknown is empty, so left out)."""
    status = failure(code, "", message)
    del status["reason"]
    return StatusError(status)


def internal_error(message: str) -> StatusError:
    return StatusError(
        failure(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            {"causes": [{"message": message}]},
        )
    )
