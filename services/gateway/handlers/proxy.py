"""The OpenAI-compatible memory proxy: ``POST /v1/chat/completions`` and what every proxied API shares.

Shared (``responses.py`` and ``models.py`` use it too): the exchange (owner from the key, session,
provider and opt-out headers), ``recall`` (memory for the last user turn, within
``memory_timeout_s``), ``forward`` (to the key's upstream, else ``MEMORYD_LLM_BASE_URL``; the answer
back unchanged, SSE chunk by chunk; then ``remember`` publishes the exchange as a chat event). A
key's limits are checked before memory and the upstream (``proxy_limits.py``); ``forward`` charges
and releases what was granted. ``x-memory-status`` says what memory did: ``injected``, ``none``,
``skipped`` (``x-memory-no-memory``), ``unavailable`` (memoryd did not answer in time),
``rate_limited`` (the owner's searches per second) or ``failed`` (another error, logged); in the
last three the call went ahead without memory. Only allow-listed upstream headers pass
(``logic/exposure.py``); a key with an upstream of its own sends the caller's
``x-upstream-authorization`` there, never the gateway's key.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from memoryd.errors import BudgetExceeded, DependencyDown, ValidationFailed
from memoryd.schemas.base import MAX_QUERY_CHARS, AgentId, SessionId
from memoryd.schemas.events import ChatEvent, ChatMessage
from memoryd.schemas.retrieval import InjectRequest, InjectResult
from memoryd.subjects import NO_MEMORY_HEADER
from shared.api_keys import ApiKeyRecord
from shared.observability.logging import get_logger

from ..adapters.upstream import UpstreamResponse
from ..context import Gateway
from ..logic.auth import acting_owner
from ..logic.chat import SseData, SseText, apply_memory, last_user_text, reply_text, truthy, turns
from ..logic.exposure import pass_headers
from ..logic.problem import PROBLEM_MEDIA, problem
from .common import Endpoint, authenticate, json_object, named_owners, openai_guarded, read_body
from .proxy_limits import ProxyGrant, admit_proxy
from .special import publish_event

log = get_logger(__name__)

SESSION_HEADER = "x-memory-session"
AGENT_HEADER = "x-memory-agent"
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
    """One proxied call: who, which session and agent, what went in, and what memory did."""

    owner: str
    session_id: str | None
    provider: str | None
    model: str | None
    messages: list[Any]
    remember: bool
    status: str = "none"
    injected: int = 0
    agent_id: str | None = None


def header_session(request: Request, header: str = SESSION_HEADER) -> str | None:
    """The session the ``x-memory-session`` header names (or the agent ``x-memory-agent`` names:
    checked alike, as UTF-8); ``ValidationFailed`` before anything is forwarded when no event could carry
    it (the exchange would be answered and then not remembered)."""
    value = request.headers.get(header) or None
    if value is not None:
        try:  # the server reads header bytes as latin-1: the name the client sent is their UTF-8
            value = value.encode("latin-1").decode("utf-8")
        except UnicodeError as exc:
            raise ValidationFailed(f"the {header} header is not UTF-8 text") from exc
        try:
            msgspec.convert(value, AgentId if header == AGENT_HEADER else SessionId)
        except msgspec.ValidationError as exc:
            raise ValidationFailed(f"the {header} header: {exc}") from exc
    return value


def open_exchange(key: ApiKeyRecord, request: Request, messages: list[Any], model: Any) -> Exchange:
    """The exchange a proxied call starts: the owner from the key; session, agent, provider and opt-out
    from headers."""
    owner = acting_owner(key.role, key.owner, named_owners(request), required=True)
    assert owner is not None
    skip = truthy(request.headers.get(NO_MEMORY_HEADER))
    return Exchange(
        owner=owner,
        session_id=header_session(request),
        agent_id=header_session(request, AGENT_HEADER),
        provider=request.headers.get(PROVIDER_HEADER) or None,
        model=model if isinstance(model, str) else None,
        messages=messages,
        remember=not skip,
        status="skipped" if skip else "none",
    )


async def recall(gw: Gateway, ex: Exchange) -> InjectResult | None:
    """The owner's memory for the last user turn (``ex.status`` says what it was); None when memory is skipped,
    there is no user text, or memoryd does not answer in time."""
    query = last_user_text(ex.messages)[:MAX_QUERY_CHARS]
    if not ex.remember or not query.strip():
        return None
    req = InjectRequest(
        owner=ex.owner,
        messages=[ChatMessage(role="user", content=query)],
        provider=ex.provider,
        model=ex.model,
        session_id=ex.session_id,
        agent_id=ex.agent_id,
        query=query,
    )
    try:
        result: InjectResult = await asyncio.wait_for(
            gw.call("inject", req, timeout=gw.config.memory_timeout_s), gw.config.memory_timeout_s + 0.5
        )
    except (DependencyDown, TimeoutError) as exc:  # memoryd down or slow never breaks the chat call
        log.warning("proxy.memory_unavailable", error=str(exc) or type(exc).__name__)
        ex.status = "unavailable"
        return None
    except BudgetExceeded as exc:  # the owner's searches per second: this call goes without memory
        log.info("proxy.memory_rate_limited", owner=ex.owner, error=exc.description)
        ex.status = "rate_limited"
        return None
    except Exception as exc:  # any other failure is memoryd's, not the caller's: said, logged, not fatal
        log.error("proxy.memory_failed", owner=ex.owner, error=str(exc) or type(exc).__name__)
        ex.status = "failed"
        return None
    ex.injected = len(result.injected)
    ex.status = "injected" if result.injected and result.placement != "none" else "none"
    return result


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
        agent_id=ex.agent_id,
        provider=ex.provider,
        model=ex.model,
        metadata={"via": "gateway-proxy"},
    )
    try:
        await publish_event(gw, event)
    except Exception as exc:
        log.warning("proxy.remember_failed", error=str(exc))


@dataclass(frozen=True)
class Api:
    """One OpenAI API the proxy serves: its path under the upstream and where the answer's text is."""

    path: str
    reply_text: Callable[[bytes], str]  # of a whole answer
    stream_text: Callable[[], SseData]  # a collector of a streamed one
    ask_usage: bool = True  # a stream reports its usage only when asked (Responses streams always do)


CHAT = Api("chat/completions", reply_text, SseText)


async def open_upstream(
    gw: Gateway, key: ApiKeyRecord, request: Request, path: str, body: bytes | None
) -> UpstreamResponse:
    """``path`` at the key's upstream (else the gateway's), with the forwarded headers' rules; ``DependencyDown``
    when it cannot be reached."""
    url = gw.upstream.url(key.upstream_url, path)
    headers = gw.upstream.headers(request.headers.get(UPSTREAM_AUTH_HEADER), own_upstream=bool(key.upstream_url))
    return await gw.upstream.open(url, body, headers)


def unreachable(exc: DependencyDown, headers: dict[str, str] | None = None) -> Response:
    """The 502 a caller gets when the upstream cannot be reached."""
    body = problem(502, "upstream_unreachable", exc.description, openai=True)
    return Response(msgspec.json.encode(body), 502, media_type=PROBLEM_MEDIA, headers=headers)


async def read_through(upstream: UpstreamResponse, headers: dict[str, str] | None = None) -> Response:
    """The upstream's whole answer with its status and allow-listed headers (plus ``headers``); released."""
    try:
        content = await upstream.aread()
    finally:
        await upstream.aclose()
    passed = pass_headers(upstream.headers.items())
    return Response(content, status_code=upstream.status_code, headers={**passed, **(headers or {})})


async def forward(
    gw: Gateway,
    key: ApiKeyRecord,
    request: Request,
    ex: Exchange,
    api: Api,
    forwarded: dict[str, Any],
    grant: ProxyGrant,
) -> Response:
    """Send ``forwarded`` upstream, pass its answer back (streamed or whole) and remember the exchange;
    charge the key for what the upstream reports and give back what ``grant`` holds (a stream, when it ends)."""
    memory_headers = {STATUS_HEADER: ex.status, INJECTED_HEADER: str(ex.injected)}
    forwarded, usage = grant.forwarded(forwarded, ask_usage=api.ask_usage)
    data = msgspec.json.encode(forwarded)
    streaming = False
    try:
        try:
            upstream = await open_upstream(gw, key, request, api.path, data)
        except DependencyDown as exc:
            return unreachable(exc, memory_headers)
        media = upstream.headers.get("content-type", "application/json")
        if upstream.status_code == 200 and media.startswith("text/event-stream"):
            sse = api.stream_text()

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

            streaming = True
            return BoundedStream(
                relay(),
                write_timeout_s=gw.config.stream_write_timeout_s,
                on_close=grant.release,
                status_code=200,
                headers={**pass_headers(upstream.headers.items()), **memory_headers},
            )
        response = await read_through(upstream, memory_headers)
        if upstream.status_code == 200:
            await grant.spend_answer(len(data), bytes(response.body))
            reply = api.reply_text(bytes(response.body))
            if reply:
                # after the reply is sent: the caller never waits for the event
                response.background = BackgroundTask(remember, gw, ex, reply)
        return response
    finally:
        if not streaming:  # a stream gives its slot back when it ends
            await grant.release()


def chat_endpoint(gw: Gateway) -> Endpoint:
    @openai_guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        body = json_object(await read_body(gw, request))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValidationFailed.at("$.messages", "Expected a non-empty `array` of messages")
        ex = open_exchange(key, request, messages, body.get("model"))
        grant = await admit_proxy(gw, key, body)  # the key's limits, before memory and the upstream
        memory = await recall(gw, ex)
        forwarded = (
            body if memory is None else {**body, "messages": apply_memory(messages, memory.context, memory.placement)}
        )
        return await forward(gw, key, request, ex, CHAT, forwarded, grant)

    return endpoint
