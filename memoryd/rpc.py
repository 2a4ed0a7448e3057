"""Calling RPC operations: encode the request, decode ``Result | RpcError``, raise typed errors.

Each call is a client span (``rpc <op>``) whose context goes in the request's ``traceparent``
header, so the serving process continues the caller's trace."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from memoryd import tracing
from memoryd.codec import decode_reply, encode
from memoryd.errors import (
    BudgetExceeded,
    Conflict,
    DependencyDown,
    Forbidden,
    MemorydError,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RemoteError,
    SecretUnavailable,
    TooLarge,
    ValidationFailed,
)
from memoryd.schemas import RPC_OPS, RpcError, RpcOp
from memoryd.subjects import REQUEST_ID_HEADER, rpc_subject

T = TypeVar("T")

_BY_CODE: dict[int, type[MemorydError]] = {
    400: ValidationFailed,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: BudgetExceeded,
    503: DependencyDown,
}


def raise_for(err: RpcError) -> None:
    if err.code == 429 and err.err_code == RateLimited.err_code:
        raise RateLimited(err.description, err.retry_after_s or 1.0)
    if err.code == 429 and err.err_code == QuotaExceeded.err_code:
        raise QuotaExceeded(err.description)
    if err.code == 503 and err.err_code == SecretUnavailable.err_code:
        raise SecretUnavailable(err.description)
    if err.code == 400:
        raise ValidationFailed(err.description, field=err.field)
    cls = _BY_CODE.get(err.code)
    if cls is not None:
        raise cls(err.description)
    raise RemoteError(err.description, err.error_id)


async def call(nc: Client, op: str | RpcOp, request: Any, *, timeout: float = 10.0, subject: str | None = None) -> Any:
    """Send ``request`` to ``op`` and return its result, or raise the typed error."""
    spec = RPC_OPS[op] if isinstance(op, str) else op
    subject = subject or rpc_subject(spec.name)
    attributes = {"rpc.system": "nats", "rpc.method": spec.name, "messaging.destination.name": subject}
    with tracing.span(f"rpc {spec.name}", tracing.SpanKind.CLIENT, attributes=attributes) as span:
        headers = tracing.inject({REQUEST_ID_HEADER: uuid.uuid4().hex[:16]})
        try:
            msg = await nc.request(subject, encode(request), timeout=timeout, headers=headers)
        except NoRespondersError as exc:
            raise DependencyDown(f"no service answers {subject}") from exc
        except NatsTimeout as exc:
            raise DependencyDown(f"{subject} did not answer within {timeout} s") from exc
        reply = decode_reply(msg.data, spec.result)
        if isinstance(reply, RpcError):
            span.set_attribute("rpc.response.status_code", reply.code)
            if reply.code >= 500:
                tracing.mark_error(reply.description, span)
            raise_for(reply)
        return reply
