"""Errors as ``application/problem+json``: the RPC code, ``err_code`` and the offending field's path.

On the OpenAI-compatible routes the same document also carries OpenAI's error envelope
(``error.message``/``type``/``param``/``code``): OpenAI SDKs and the tools built on them read the
message from there, and without it a caller saw only "Error code: 502".
"""

from __future__ import annotations

import msgspec


class OpenAIError(msgspec.Struct, frozen=True):
    """An error as OpenAI's API writes it (the ``error`` member of its error bodies)."""

    message: str
    type: str
    param: str | None
    code: str


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An error as ``application/problem+json`` (RFC 9457) with the RPC error's fields."""

    type: str
    title: str
    status: int
    detail: str
    err_code: str
    field: str | None = None  # the JSON path of the offending field, e.g. ``$.content``
    error_id: str | None = None  # 500s: the log entry with the full error
    error: OpenAIError | None = None  # the OpenAI-compatible routes: the same error as OpenAI writes it


PROBLEM_MEDIA = "application/problem+json"
_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


#: OpenAI's error ``type`` for an HTTP status (its SDKs pick the exception class by status alone)
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def problem(
    code: int,
    err_code: str,
    detail: str,
    error_id: str | None = None,
    field: str | None = None,
    *,
    openai: bool = False,
) -> Problem:
    """The problem document; ``openai``: with OpenAI's error envelope too (the proxy's routes)."""
    envelope = OpenAIError(detail, _OPENAI_TYPES.get(code, "api_error"), field, err_code) if openai else None
    return Problem(
        type=f"urn:memoryd:error:{err_code}",
        title=_TITLES.get(code, "Error"),
        status=code,
        detail=detail,
        err_code=err_code,
        field=field,
        error_id=error_id,
        error=envelope,
    )
