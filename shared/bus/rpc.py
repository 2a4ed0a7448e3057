"""The RPC layer: every operation served through ``nats.micro`` with the error envelope.

A reply is always ``<Op>Result | RpcError`` as JSON; on errors the micro headers
``Nats-Service-Error`` / ``Nats-Service-Error-Code`` are set too. Typed
``MemorydError``s keep their description; a transient failure (``transient.is_transient``:
PostgreSQL or NATS unreachable, restarting, in recovery) is a 503 ``dependency_down``, so a
caller retries; anything else is a 500 with an opaque ``error_id`` (the full error goes to
the log, never to the caller).

``nats.micro`` calls an endpoint's handler one request at a time; ``RpcServer`` hands
each request to its own task (bounded by ``max_concurrency``) so a slow request does
not queue the others, and ``drain`` waits for the tasks in flight. Each request is a server
span (``<op>``) continuing the caller's trace from its ``traceparent`` header.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from nats.aio.client import Client
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Service

from memoryd import tracing
from memoryd.codec import decode, encode
from memoryd.errors import DependencyDown, Forbidden, MemorydError, RateLimited, ValidationFailed
from memoryd.schemas import HEALTH_OP, RpcError, RpcOp
from memoryd.subjects import OWNER_BOUND_OPS, REQUEST_ID_HEADER, rpc_subject

from ..observability.logging import get_logger
from ..observability.metrics import RPC_REQUESTS, RPC_SECONDS
from .transient import is_transient

log = get_logger(__name__)

ERROR_HEADER = "Nats-Service-Error"
ERROR_CODE_HEADER = "Nats-Service-Error-Code"
RETRY_AFTER_HEADER = "Retry-After"  # whole seconds, as in HTTP, on 429 rate_limited replies

Handler = Callable[[Any], Awaitable[Any]]


def error_reply(exc: BaseException, op: str) -> RpcError:
    """Map an exception to the reply a caller may see."""
    if isinstance(exc, MemorydError) and exc.code != 500:
        retry = round(exc.retry_after_s, 3) if isinstance(exc, RateLimited) else None
        field = exc.field if isinstance(exc, ValidationFailed) else None
        return RpcError(
            code=exc.code, err_code=exc.err_code, description=exc.description, retry_after_s=retry, field=field
        )
    if is_transient(exc):  # e.g. PostgreSQL restarting: the caller may retry, nothing is wrong with the request
        log.warning("rpc.dependency_down", op=op, error=f"{type(exc).__name__}: {exc}"[:500])
        down = DependencyDown("a dependency (PostgreSQL or NATS) is unavailable; retry")
        return RpcError(code=down.code, err_code=down.err_code, description=down.description)
    error_id = uuid.uuid4().hex[:12]
    log.error("rpc.internal_error", op=op, error_id=error_id, exc_info=exc)
    return RpcError(code=500, err_code="internal", description="internal error", error_id=error_id)


class RpcServer:
    """One micro service (name, version, queue group) with typed endpoints."""

    def __init__(self, nc: Client, service: str, version: str, *, max_concurrency: int = 256) -> None:
        self._nc = nc
        self._service_name = service
        self._version = version
        self._micro: Service | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_concurrency)

    async def start(self) -> None:
        self._micro = await add_service(
            self._nc,
            name=f"memoryd-{self._service_name}",
            version=self._version,
            description=f"memoryd {self._service_name} service",
            queue_group=f"memoryd-{self._service_name}",
        )

    async def add(
        self, op: RpcOp, handler: Handler, *, subject: str | None = None, queue_group: str | None = None
    ) -> None:
        """Serve ``op`` on ``mem.v1.rpc.<op>`` (or ``subject``) with ``handler(request) -> result``."""
        assert self._micro is not None, "start() first"
        bindable = subject is None and op.name in OWNER_BOUND_OPS
        subject = subject or rpc_subject(op.name)

        def on_request_for(bound: bool) -> Callable[[Request], Awaitable[None]]:
            async def on_request(req: Request) -> None:
                await self._slots.acquire()
                owner = req.subject.rsplit(".", 1)[1] if bound else None
                task = asyncio.create_task(self._handle(op, handler, req, owner))
                self._tasks.add(task)
                task.add_done_callback(self._done)

            return on_request

        await self._micro.add_endpoint(
            name=subject.replace(".", "_"), subject=subject, handler=on_request_for(False), queue_group=queue_group
        )
        if bindable:  # mem.v1.rpc.<op>.<owner>: the payload's owner must match the subject's
            await self._micro.add_endpoint(
                name=subject.replace(".", "_") + "_owner",
                subject=f"{subject}.*",
                handler=on_request_for(True),
                queue_group=queue_group,
            )

    async def add_health(self, check: Callable[[bool], Awaitable[Any]]) -> None:
        """``mem.v1.rpc.health`` (any service answers) and ``mem.v1.rpc.health.<service>``."""
        await self.add(HEALTH_OP, check, queue_group="memoryd-health")
        await self.add(HEALTH_OP, check, subject=f"{rpc_subject('health')}.{self._service_name}")

    async def wait_subscribed(self, timeout: float = 5.0) -> None:
        """Return once the server has every endpoint subscribed so far.

        ``nc.flush()`` is not enough in nats-py 2.16: its PING is written to the socket directly,
        ahead of SUBs still queued for the flusher task, so its PONG can come back before the
        server knows the endpoints (a request right after "ready" then gets no responders). A
        ``$SRV.PING`` to this very instance goes through the same queue, after the SUBs, and is
        allowed by every role's permissions.
        """
        assert self._micro is not None, "start() first"
        await self._nc.request(f"$SRV.PING.memoryd-{self._service_name}.{self._micro.id}", b"", timeout=timeout)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def _handle(self, op: RpcOp, handler: Handler, req: Request, bound_owner: str | None) -> None:
        started = time.perf_counter()
        headers = req.headers or {}
        request_id = headers.get(REQUEST_ID_HEADER) or uuid.uuid4().hex[:16]
        attributes = {"rpc.system": "nats", "rpc.method": op.name, "rpc.service": self._service_name}
        with (
            tracing.span(op.name, tracing.SpanKind.SERVER, headers=headers, attributes=attributes) as span,
            structlog.contextvars.bound_contextvars(request_id=request_id, op=op.name),
        ):
            reply: Any
            try:
                request = decode(req.data, op.request)
                owner = getattr(request, "owner", None)
                if bound_owner is not None and owner != bound_owner:
                    raise Forbidden(f"this subject acts for owner {bound_owner!r}, not {owner!r}")
                if owner:
                    structlog.contextvars.bind_contextvars(owner=owner)
                reply = await handler(request)
            except Exception as exc:
                reply = error_reply(exc, op.name)
            code = reply.code if isinstance(reply, RpcError) else 200
            if code >= 500 and isinstance(reply, RpcError):
                tracing.mark_error(reply.error_id or reply.description, span)
            out_headers = {REQUEST_ID_HEADER: request_id}
            if isinstance(reply, RpcError):
                out_headers |= {ERROR_HEADER: reply.description, ERROR_CODE_HEADER: str(reply.code)}
                if reply.retry_after_s is not None:
                    out_headers[RETRY_AFTER_HEADER] = str(max(1, math.ceil(reply.retry_after_s)))
            try:
                await req.respond(encode(reply), headers=out_headers)
            except Exception as exc:
                log.warning("rpc.respond_failed", error=str(exc))
            RPC_REQUESTS.labels(self._service_name, op.name, str(code)).inc()
            RPC_SECONDS.labels(self._service_name, op.name).observe(time.perf_counter() - started)

    async def drain(self, timeout: float = 10.0) -> None:
        """Stop taking requests, then wait for those in flight."""
        if self._micro is not None:
            with contextlib.suppress(Exception):  # NATS may already be gone
                await asyncio.wait_for(self._micro.stop(), timeout=timeout)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
