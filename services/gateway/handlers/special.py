"""REST routes that are more than one RPC: chat events, the streamed export, health, receipts
(the probes are ``probes.py``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import msgspec
import nats.errors
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from memoryd import tracing
from memoryd.codec import decode, encode
from memoryd.errors import DependencyDown, Forbidden, MemorydError, ValidationFailed
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.events import ChatEvent
from memoryd.schemas.memory import MemoryExportRequest, MemoryExportResult
from memoryd.schemas.ops import HealthRequest, HealthResult, SleepStatusRequest, SleepStatusResult
from memoryd.schemas.text import nul_path
from memoryd.subjects import CHAT_EVENTS, MSG_ID_HEADER, chat_msg_id, rpc_subject
from shared.nats_auth import SERVICE_ROLES

from ..context import Gateway
from ..routes import BY_NAME, NDJSON
from ..schemas import ChatPublishRequest, ChatPublishResult, ServicesHealth, SleepReceiptsResult
from .common import Endpoint, authenticate, guarded, json_response
from .proxy_limits import admit_events
from .rest import build_request, raw_fields


async def publish_event(gw: Gateway, event: ChatEvent, identity: bytes | None = None) -> bool:
    """Publish a chat event to JetStream; True when it was a duplicate (stored once already).

    ``Nats-Msg-Id`` is ``chat_msg_id`` (owner, event id and a digest), as on every door: the
    same event id from two owners is two events. The digest is of ``identity`` when given (what
    makes a retry the same event, e.g. the request as the caller sent it), else of the event.
    """
    data = encode(event)
    decode(data, ChatEvent)  # the ingest service's own validation, before anything is sent
    msg_id = chat_msg_id(event.owner, event.event_id, data if identity is None else identity)
    try:
        headers = tracing.inject({MSG_ID_HEADER: msg_id})
        ack = await gw.js.publish(CHAT_EVENTS, data, headers=headers, timeout=gw.config.rpc_timeout_s)
    except (nats.errors.Error, TimeoutError) as exc:
        raise DependencyDown(f"cannot publish to {CHAT_EVENTS}: {type(exc).__name__}: {exc}") from exc
    return bool(ack.duplicate)


def events_endpoint(gw: Gateway) -> Endpoint:
    route = BY_NAME["events_publish"]

    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        req: ChatPublishRequest = build_request(route, key, request, await raw_fields(gw, route, request))
        assert req.owner is not None
        found = nul_path(msgspec.to_builtins(req))
        if found:  # the ingest service would refuse the event after the 202: say so now
            raise ValidationFailed(f"text contains a NUL character (U+0000) - at `{found}`")
        await admit_events(gw, key)  # over the key's events per second: 429, nothing published
        event = ChatEvent(
            event_id=req.event_id or uuid.uuid4().hex,
            owner=req.owner,
            messages=req.messages,
            occurred_at=req.occurred_at or datetime.now(UTC),
            session_id=req.session_id,
            agent_id=req.agent_id,
            provider=req.provider,
            model=req.model,
            metadata=req.metadata,
            no_memory=req.no_memory,
        )
        # a retry of this request (same owner, event id and fields) is the same event, even when
        # the gateway filled in the time: so the digest is of the request, not of the event
        identity = encode(req) if req.event_id else None
        duplicate = await publish_event(gw, event, identity)
        return json_response(ChatPublishResult(event_id=event.event_id, duplicate=duplicate), status=202)

    return endpoint


def export_endpoint(gw: Gateway) -> Endpoint:
    route = BY_NAME["export"]

    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        query = build_request(route, key, request, await raw_fields(gw, route, request))
        first: MemoryExportResult = await gw.call(
            "memory.export", MemoryExportRequest(owner=query.owner, include_archived=query.include_archived)
        )  # an error on the first page is still a problem response

        async def pages() -> AsyncIterator[bytes]:
            page = first
            while True:
                if page.lines:
                    yield page.lines.encode()
                if page.next_after_id is None:
                    return
                page = await gw.call(
                    "memory.export",
                    MemoryExportRequest(
                        owner=query.owner, include_archived=query.include_archived, after_id=page.next_after_id
                    ),
                )

        return StreamingResponse(pages(), media_type=NDJSON)

    return endpoint


async def services_health(gw: Gateway, *, deep: bool = True, timeout: float = 5.0) -> ServicesHealth:
    """Every service's (deep) health, asked concurrently."""

    async def one(name: str) -> HealthResult:
        subject = f"{rpc_subject('health')}.{name}"
        result: HealthResult = await gw.call(HEALTH_OP, HealthRequest(deep=deep), subject=subject, timeout=timeout)
        return result

    names = [n for n in SERVICE_ROLES if n != "gateway"]
    results = await asyncio.gather(*(one(n) for n in names), return_exceptions=True)
    services: dict[str, HealthResult] = {}
    errors: dict[str, str] = {}
    for name, result in zip(names, results, strict=True):
        if isinstance(result, HealthResult):
            services[name] = result
        elif isinstance(result, MemorydError):
            errors[name] = result.description
        else:
            errors[name] = f"{type(result).__name__}: {result}"
    ok = gw.nc.is_connected and not errors and all(h.status == "ok" for h in services.values())
    return ServicesHealth(status="ok" if ok else "degraded", services=services, errors=errors)


def health_endpoint(gw: Gateway) -> Endpoint:
    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        if key.role != "operator":  # versions, model, error text and a write per deep check: for operators
            raise Forbidden("the services' health needs an operator key (/readyz answers anyone)")
        return json_response(await services_health(gw))

    return endpoint


def receipts_endpoint(gw: Gateway) -> Endpoint:
    route = BY_NAME["sleep_receipts"]

    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        req: SleepStatusRequest = build_request(route, key, request, await raw_fields(gw, route, request))
        status: SleepStatusResult = await gw.call("sleep.status", req)
        return json_response(SleepReceiptsResult.of(status.runs))

    return endpoint
