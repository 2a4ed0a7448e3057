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
from memoryd.errors import DependencyDown, error_for
from memoryd.schemas import RPC_OPS, RpcError, RpcOp
from memoryd.subjects import REQUEST_ID_HEADER, rpc_subject

T = TypeVar("T")


def raise_for(err: RpcError) -> None:
    raise error_for(
        err.code,
        err.err_code,
        err.description,
        error_id=err.error_id,
        retry_after_s=err.retry_after_s,
        field=err.field,
    )


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
