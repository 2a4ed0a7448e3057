"""What every HTTP endpoint shares: JSON and problem responses, authentication, body reading.

``guarded`` turns any error into ``application/problem+json``: typed errors keep their code,
description and field path; anything else is a 500 with an opaque ``error_id`` (the full error
goes to the log, never to the caller); a 429 that says when to retry gets ``Retry-After``.
Every JSON body is decoded by ``json_object``, with the wire contract's depth-checked
``memoryd.codec.decode`` (deep nesting is a 400, as on NATS).
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from memoryd.codec import decode, validation_failed
from memoryd.errors import MemorydError, TooLarge, ValidationFailed
from shared.api_keys import ApiKeyRecord
from shared.observability.logging import get_logger

from ..context import Gateway
from ..logic.auth import OWNER_HEADER, Unauthorized, bearer_token
from ..logic.problem import PROBLEM_MEDIA, problem

log = get_logger(__name__)
_encoder = msgspec.json.Encoder()

Endpoint = Callable[[Request], Awaitable[Response]]


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_encoder.encode(value), status_code=status, media_type="application/json", headers=headers)


def problem_response(exc: BaseException, *, openai: bool = False) -> Response:
    """``exc`` as a problem response (``openai``: with OpenAI's error envelope too)."""
    if isinstance(exc, MemorydError) and exc.code != 500:
        field = exc.field if isinstance(exc, ValidationFailed) else None
        body = problem(exc.code, exc.err_code, exc.description, field=field, openai=openai)
    else:
        error_id = uuid.uuid4().hex[:12]
        log.error("gateway.internal_error", error_id=error_id, exc_info=exc)
        body = problem(500, "internal", "internal error", error_id, openai=openai)
    headers = {"www-authenticate": "Bearer"} if body.status == 401 else {}
    retry_after_s = getattr(exc, "retry_after_s", None)
    if body.status == 429 and isinstance(retry_after_s, int | float):
        headers["retry-after"] = str(max(1, math.ceil(retry_after_s)))
    return Response(_encoder.encode(body), status_code=body.status, media_type=PROBLEM_MEDIA, headers=headers)


def guarded(fn: Endpoint, *, openai: bool = False) -> Endpoint:
    """``fn`` with every error turned into a problem response (``openai``: the OpenAI-compatible routes)."""

    @functools.wraps(fn)
    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except Exception as exc:
            return problem_response(exc, openai=openai)

    return endpoint


def openai_guarded(fn: Endpoint) -> Endpoint:
    """``guarded`` for the OpenAI-compatible routes: errors carry OpenAI's envelope as well."""
    return guarded(fn, openai=True)


async def authenticate(gw: Gateway, request: Request) -> ApiKeyRecord:
    """The caller's key record, or ``Unauthorized`` (401)."""
    token = bearer_token(request.headers.get("authorization"), request.headers.get("x-api-key"))
    if token is None:
        raise Unauthorized("an API key is required: Authorization: Bearer mk_...")
    record = await gw.keys.authenticate(token)
    if record is None:
        raise Unauthorized("unknown or revoked API key")
    return record


async def read_body(gw: Gateway, request: Request) -> bytes:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > gw.config.max_body_bytes:
            raise TooLarge(f"request body over {gw.config.max_body_bytes} bytes")
    return body


def json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object (an empty body is ``{}``); ``ValidationFailed`` otherwise.

    The body's size was checked while reading it (``read_body``), so no second limit here.
    """
    if not body.strip():
        return {}
    return decode(body, dict[str, Any], max_bytes=len(body))


def named_owners(request: Request) -> list[str | None]:
    """The owners named outside the body: ``?owner=`` and the ``x-memory-owner`` header."""
    return [request.query_params.get("owner"), request.headers.get(OWNER_HEADER)]


def convert(raw: dict[str, Any], tp: type, *, strict: bool = True) -> Any:
    try:
        return msgspec.convert(raw, tp, strict=strict)
    except msgspec.ValidationError as exc:
        raise validation_failed(exc) from exc
