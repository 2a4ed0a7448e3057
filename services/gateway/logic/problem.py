"""Errors as ``application/problem+json``: the RPC code, ``err_code`` and the offending field's path."""

from __future__ import annotations

import msgspec


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An error as ``application/problem+json`` (RFC 9457) with the RPC error's fields."""

    type: str
    title: str
    status: int
    detail: str
    err_code: str
    field: str | None = None  # the JSON path of the offending field, e.g. ``$.content``
    error_id: str | None = None  # 500s: the log entry with the full error


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


def problem(code: int, err_code: str, detail: str, error_id: str | None = None, field: str | None = None) -> Problem:
    return Problem(
        type=f"urn:memoryd:error:{err_code}",
        title=_TITLES.get(code, "Error"),
        status=code,
        detail=detail,
        err_code=err_code,
        field=field,
        error_id=error_id,
    )
