"""``POST /v1/chat/completions``: the OpenAI-compatible memory proxy.

Retrieve for the last user turn and inject (the retrieve service's inject RPC decides placement),
forward to the upstream (the key's, else ``MEMORYD_LLM_BASE_URL``), return its answer unchanged
(SSE passed through chunk by chunk), then publish the exchange as a chat event. The response
header ``x-memory-status`` says what memory did: ``injected``, ``none`` (nothing relevant),
``skipped`` (``x-memory-no-memory``), ``unavailable`` (memoryd down or not answering in time),
``rate_limited`` (the owner is over its searches per second) or ``failed`` (memoryd answered
with another error, logged); in the last three the call went ahead without memory. A key's
limits are checked before anything else (``proxy_limits.py``). Upstream errors come back with
the upstream's status and body; of the upstream's headers only the allow-listed ones pass
(``logic/exposure.py``). A key with an upstream of its own sends the caller's
``x-upstream-authorization`` there, never the gateway's key. A caller that stops reading a stream
for ``stream_write_timeout_s`` loses it, and the upstream connection goes back to the pool.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from memoryd.errors import BudgetExceeded, DependencyDown, ValidationFailed
from memoryd.schemas.base import MAX_QUERY_CHARS
from memoryd.schemas.events import ChatEvent, ChatMessage
from memoryd.schemas.retrieval import InjectRequest, InjectResult
from memoryd.subjects import NO_MEMORY_HEADER
from shared.api_keys import ApiKeyRecord
from shared.observability.logging import get_logger

from ..context import Gateway
from ..logic.auth import acting_owner
from ..logic.chat import SseText, apply_memory, last_user_text, reply_text, truthy, turns
from ..logic.exposure import pass_headers
from ..logic.problem import PROBLEM_MEDIA, problem
from .common import Endpoint, authenticate, guarded, json_object, named_owners, read_body
from .proxy_limits import ProxyGrant, admit_proxy
from .special import publish_event

log = get_logger(__name__)

SESSION_HEADER = "x-memory-session"
PROVIDER_HEADER = "x-memory-provider"
STATUS_HEADER = "x-memory-status"
INJECTED_HEADER = "x-memory-injected"
UPSTREAM_AUTH_HEADER = "x-upstream-authorization"


class _Abandoned(Exception):
    """The caller did not take a piece of a streamed answer in time."""


class BoundedStream(StreamingResponse):
    """A streamed answer whose every write must be taken by the caller within ``write_timeout_s``.

    A caller that stops reading would otherwise hold the stream, and the upstream connection
    behind it, for as long as it likes; past the timeout the stream is closed (its ``finally``
    releases the upstream connection).
    """

    def __init__(
        self,
        content: AsyncIterator[bytes],
        *,
        write_timeout_s: float,
        on_close: Callable[[], Awaitable[None]] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(content, **kw)
        self.write_timeout_s = write_timeout_s
        self._content = content
        self._on_close = on_close  # also when the stream never started (the caller left first)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded_send(message: Message) -> None:
            try:
                await asyncio.wait_for(send(message), self.write_timeout_s)
            except TimeoutError:  # an OSError, which Starlette would take for a disconnect
                raise _Abandoned from None

        try:
            await super().__call__(scope, receive, bounded_send)
        except _Abandoned:
            log.warning("proxy.stream_abandoned", write_timeout_s=self.write_timeout_s)
        finally:
            await self._content.aclose()  # type: ignore[attr-defined]
            if self._on_close is not None:
                await self._on_close()


class Exchange(msgspec.Struct, kw_only=True):
    """One proxied call: who, which session, what went in, and what memory did."""

    owner: str
    session_id: str | None
    provider: str | None
    model: str | None
    messages: list[Any]
    remember: bool
    status: str = "none"
    injected: int = 0


async def with_memory(gw: Gateway, ex: Exchange) -> list[Any]:
    """The messages to forward: with memory when memoryd answers in time, else as they came."""
    query = last_user_text(ex.messages)[:MAX_QUERY_CHARS]
    if not query.strip():
        return ex.messages
    req = InjectRequest(
        owner=ex.owner,
        messages=[ChatMessage(role="user", content=query)],
        provider=ex.provider,
        model=ex.model,
        session_id=ex.session_id,
        query=query,
    )
    try:
        result: InjectResult = await asyncio.wait_for(
            gw.call("inject", req, timeout=gw.config.memory_timeout_s), gw.config.memory_timeout_s + 0.5
        )
    except (DependencyDown, TimeoutError) as exc:  # memoryd down or slow never breaks the chat call
        log.warning("proxy.memory_unavailable", error=str(exc) or type(exc).__name__)
        ex.status = "unavailable"
        return ex.messages
    except BudgetExceeded as exc:  # the owner's searches per second: this call goes without memory
        log.info("proxy.memory_rate_limited", owner=ex.owner, error=exc.description)
        ex.status = "rate_limited"
        return ex.messages
    except Exception as exc:  # any other failure is memoryd's, not the caller's: said, logged, not fatal
        log.error("proxy.memory_failed", owner=ex.owner, error=str(exc) or type(exc).__name__)
        ex.status = "failed"
        return ex.messages
    ex.injected = len(result.injected)
    ex.status = "injected" if result.injected and result.placement != "none" else "none"
    return apply_memory(ex.messages, result.context, result.placement)


async def remember(gw: Gateway, ex: Exchange, reply: str) -> None:
    """Publish the exchange (request turns + reply) as a chat event; a failure is only logged."""
    if not ex.remember or not reply.strip():
        return
    messages = turns(ex.messages, reply)
    event = ChatEvent(
        event_id=uuid.uuid4().hex,
        owner=ex.owner,
        messages=messages,
        occurred_at=datetime.now(UTC),
        session_id=ex.session_id,
        provider=ex.provider,
        model=ex.model,
        metadata={"via": "gateway-proxy"},
    )
    try:
        await publish_event(gw, event)
    except Exception as exc:
        log.warning("proxy.remember_failed", error=str(exc))


def _exchange(key: ApiKeyRecord, request: Request, body: dict[str, Any]) -> Exchange:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValidationFailed.at("$.messages", "Expected a non-empty `array` of messages")
    owner = acting_owner(key.role, key.owner, named_owners(request), required=True)
    assert owner is not None
    skip = truthy(request.headers.get(NO_MEMORY_HEADER))
    model = body.get("model") if isinstance(body.get("model"), str) else None
    return Exchange(
        owner=owner,
        session_id=request.headers.get(SESSION_HEADER) or None,
        provider=request.headers.get(PROVIDER_HEADER) or None,
        model=model,
        messages=messages,
        remember=not skip,
        status="skipped" if skip else "none",
    )


def chat_endpoint(gw: Gateway) -> Endpoint:
    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        body = json_object(await read_body(gw, request))
        ex = _exchange(key, request, body)
        grant = await admit_proxy(gw, key, body)  # the key's limits, before memory and the upstream
        streaming = False
        try:
            response, streaming = await _forward(gw, key, request, body, ex, grant)
            return response
        finally:
            if not streaming:  # a stream frees its slot when it ends
                await grant.release()

    return endpoint


async def _forward(
    gw: Gateway, key: ApiKeyRecord, request: Request, body: dict[str, Any], ex: Exchange, grant: ProxyGrant
) -> tuple[Response, bool]:
    """The upstream's answer to the call, and whether it is a stream (which then owns the grant)."""
    forwarded = body if not ex.remember else {**body, "messages": await with_memory(gw, ex)}
    forwarded, usage = grant.forwarded(forwarded)
    data = msgspec.json.encode(forwarded)
    url = gw.upstream.url(key.upstream_url)
    headers = gw.upstream.headers(request.headers.get(UPSTREAM_AUTH_HEADER), own_upstream=bool(key.upstream_url))
    memory_headers = {STATUS_HEADER: ex.status, INJECTED_HEADER: str(ex.injected)}
    try:
        upstream = await gw.upstream.open(url, data, headers)
    except DependencyDown as exc:
        body502 = problem(502, "upstream_unreachable", exc.description)
        return Response(msgspec.json.encode(body502), 502, media_type=PROBLEM_MEDIA, headers=memory_headers), False
    passed = pass_headers(upstream.headers.items())
    media = upstream.headers.get("content-type", "application/json")
    if upstream.status_code == 200 and media.startswith("text/event-stream"):
        sse = SseText()

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    sse.feed(chunk)
                    out = usage.feed(chunk)
                    if out:
                        yield out
                rest = usage.flush()
                if rest:
                    yield rest
            finally:
                await upstream.aclose()
                await grant.release()
                await grant.spend_stream(len(data), usage)
            await remember(gw, ex, sse.text)

        stream = BoundedStream(
            relay(),
            write_timeout_s=gw.config.stream_write_timeout_s,
            on_close=grant.release,
            status_code=200,
            headers={**passed, **memory_headers},
        )
        return stream, True
    try:
        content = await upstream.aread()
    finally:
        await upstream.aclose()
    response = Response(content, status_code=upstream.status_code, headers={**passed, **memory_headers})
    if upstream.status_code == 200:
        await grant.spend_answer(len(data), content)
        reply = reply_text(content)
        if reply:
            # after the reply is sent: the caller never waits for the event
            response.background = BackgroundTask(remember, gw, ex, reply)
    return response, False
