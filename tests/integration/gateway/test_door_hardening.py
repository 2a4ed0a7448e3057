"""The HTTP doors held to the NATS door's standard, against a real stack: event ids are per owner,
deep JSON is a 400 on every body route, the gateway's LLM key never reaches a key's own upstream,
the proxy remembers only user and assistant turns and lets no identifying upstream header or
address out, owner keys see no global counters or infrastructure, slow headers lose the
connection, and huge list positions are a 400."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from aiohttp import web

from services.gateway.routes import ROUTES, Route
from shared.api_keys import new_key

from .conftest import GATEWAY_LLM_KEY, HEADER_TIMEOUT_S, Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROBLEM = "application/problem+json"
LEAKY_HEADERS = {
    "set-cookie": "session=upstream-secret; Path=/",
    "openai-organization": "org-upstream-tenant",
    "openai-project": "proj_upstream",
    "x-request-id": "req_upstream_123",
    "server": "upstream-llm/1.2",
    "via": "1.1 upstream-proxy.internal",
    "x-ratelimit-remaining-requests": "99",
}


class LeakyUpstream:
    """An OpenAI-compatible upstream on 127.0.0.1 that answers with identifying headers and
    records the headers it was sent."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.reply = "From the key's own upstream."
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.seen.append({k.lower(): v for k, v in request.headers.items()})
        body = await request.json()
        if body.get("stream"):
            response = web.StreamResponse(headers={**LEAKY_HEADERS, "content-type": "text/event-stream"})
            await response.prepare(request)
            for word in self.reply.split(" "):
                chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
                chunk["choices"] = [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        completion = {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}, "finish_reason": "stop"}],
        }
        return web.json_response(completion, headers=LEAKY_HEADERS)

    async def __aenter__(self) -> LeakyUpstream:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


@pytest.fixture
async def leaky() -> AsyncIterator[LeakyUpstream]:
    async with LeakyUpstream() as upstream:
        yield upstream


async def _key(stack: Stack, owner: str, upstream_url: str | None = None) -> str:
    token, record = new_key("owner", owner, upstream_url=upstream_url)
    await stack.keys.put(record)
    return token


def _sdk(stack: Stack, key: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=key, default_headers=headers or None, max_retries=0)


async def _listed(stack: Stack, key: str, q: str, *, want: int, within_s: float = 15.0) -> list[dict[str, Any]]:
    """The owner's memories matching ``q``, once at least ``want`` are there (or the deadline passed)."""
    memories: list[dict[str, Any]] = []
    async with stack.client(key) as http:
        for _ in range(int(within_s / 0.2)):
            reply = await http.get("/v1/memories", params={"q": q, "limit": 100})
            assert reply.status_code == 200, reply.text
            memories = reply.json()["memories"]
            if len(memories) >= want:
                return memories
            await asyncio.sleep(0.2)
    return memories


# --- 1. event ids are per owner ---------------------------------------------------------------
async def test_the_same_event_id_from_two_owners_stores_both(stack: Stack) -> None:
    event_id = f"msg-{uuid.uuid4().hex[:8]}"
    marker = uuid.uuid4().hex[:10]
    replies = {}
    for owner_key, who in ((stack.bob_key, "bob"), (stack.alice_key, "carol")):
        body = {"event_id": event_id, "messages": [{"role": "user", "content": f"{who} marker{marker} turn"}]}
        async with stack.client(owner_key) as http:
            reply = await http.post("/v1/events", json=body)
        assert reply.status_code == 202, reply.text
        replies[who] = reply.json()
    assert replies == {
        "bob": {"event_id": event_id, "duplicate": False},
        "carol": {"event_id": event_id, "duplicate": False},
    }
    bobs = await _listed(stack, stack.bob_key, f"marker{marker}", want=1)
    carols = await _listed(stack, stack.alice_key, f"marker{marker}", want=1)
    assert [m["content"] for m in bobs] == [f"bob marker{marker} turn"]
    assert [m["content"] for m in carols] == [f"carol marker{marker} turn"]


async def test_a_retry_from_the_same_owner_is_reported_as_a_duplicate(stack: Stack) -> None:
    event_id = f"retry-{uuid.uuid4().hex[:8]}"
    marker = uuid.uuid4().hex[:10]
    body = {"event_id": event_id, "messages": [{"role": "user", "content": f"once only marker{marker}"}]}
    async with stack.client(stack.bob_key) as http:
        first = await http.post("/v1/events", json=body)
        await asyncio.sleep(0.05)  # the gateway fills in a later time: still the same event
        again = await http.post("/v1/events", json=body)
    assert (first.status_code, first.json()) == (202, {"event_id": event_id, "duplicate": False})
    assert (again.status_code, again.json()) == (202, {"event_id": event_id, "duplicate": True})
    assert len(await _listed(stack, stack.bob_key, f"marker{marker}", want=1)) == 1


# --- 2. deep JSON ------------------------------------------------------------------------------
BODY_ROUTES = [route for route in ROUTES if route.in_body]


@pytest.mark.parametrize("route", BODY_ROUTES, ids=[r.name for r in BODY_ROUTES])
async def test_deep_json_is_a_400_on_every_body_route(stack: Stack, route: Route) -> None:
    depth = 100_000
    deep = b'{"messages":' + b"[" * depth + b"]" * depth + b"}"
    path = route.path.replace("{id}", str(uuid.uuid4()))
    async with stack.client(stack.operator_key) as http:
        reply = await http.request(
            route.method,
            path,
            content=deep,
            headers={"content-type": "application/json", "x-memory-owner": stack.alice},
        )
    assert reply.status_code == 400, reply.text
    assert reply.headers["content-type"] == PROBLEM
    problem = reply.json()
    assert problem["err_code"] == "validation" and "deeper than" in problem["detail"]


# --- 3. the gateway's LLM key stays with the gateway's upstream --------------------------------
async def test_a_keys_own_upstream_never_receives_the_gateways_key(stack: Stack, leaky: LeakyUpstream) -> None:
    own = await _key(stack, stack.alice, leaky.base_url)
    reply = await _sdk(stack, own).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "From the key's own upstream."
    assert "authorization" not in leaky.seen[-1]
    await _sdk(stack, own, **{"x-upstream-authorization": "Bearer sk-callers-own"}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert leaky.seen[-1]["authorization"] == "Bearer sk-callers-own"
    stack.llm.reply_text("From the gateway's upstream.")
    await _sdk(stack, stack.alice_key).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert stack.llm.request_headers[-1]["authorization"] == f"Bearer {GATEWAY_LLM_KEY}"
    assert all(GATEWAY_LLM_KEY not in json.dumps(seen) for seen in leaky.seen)


# --- 4. only user and assistant turns are remembered -------------------------------------------
async def test_the_proxy_remembers_user_and_assistant_turns_only(stack: Stack) -> None:
    marker = uuid.uuid4().hex[:10]
    stack.llm.reply_text(f"assistant says marker{marker} reply")
    messages = [
        {"role": "system", "content": f"system says marker{marker} obey"},
        {"role": "developer", "content": f"developer says marker{marker} rules"},
        {"role": "user", "content": f"user says marker{marker} question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "type": "function",
                                                              "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": f"tool says marker{marker} output"},
    ]  # fmt: skip
    await _sdk(stack, stack.alice_key).chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    remembered = await _listed(stack, stack.alice_key, f"marker{marker}", want=2)
    await asyncio.sleep(1.0)  # anything else would have arrived with them
    remembered = await _listed(stack, stack.alice_key, f"marker{marker}", want=2)
    assert sorted(m["content"] for m in remembered) == sorted(
        [f"user says marker{marker} question", f"assistant says marker{marker} reply"]
    )


# --- 5. nothing identifying leaks --------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
async def test_upstream_headers_are_filtered(stack: Stack, leaky: LeakyUpstream, stream: bool) -> None:
    own = await _key(stack, stack.bob, leaky.base_url)
    sdk = _sdk(stack, own)
    messages = [{"role": "user", "content": "hello"}]
    if stream:
        async with sdk.chat.completions.with_streaming_response.create(
            model="m",
            messages=messages,
            stream=True,  # type: ignore[arg-type]
        ) as raw:
            headers = raw.headers
            text = "".join([line async for line in raw.iter_lines()])
        assert '"content": "From "' in text and text.endswith("data: [DONE]")
    else:
        raw_reply = await sdk.chat.completions.with_raw_response.create(model="m", messages=messages)  # type: ignore[arg-type]
        headers = raw_reply.headers
        assert raw_reply.parse().choices[0].message.content == "From the key's own upstream."
    names = {k.lower() for k in headers}
    for leaked in ("set-cookie", "openai-organization", "openai-project", "x-request-id", "server", "via"):
        assert leaked not in names, f"{leaked} passed through"
    assert headers["x-ratelimit-remaining-requests"] == "99"
    assert headers["content-type"].startswith("text/event-stream" if stream else "application/json")


async def test_an_unreachable_upstream_is_a_502_that_names_no_address(stack: Stack) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    own = await _key(stack, stack.bob, f"http://127.0.0.1:{port}/v1")
    with pytest.raises(openai.APIStatusError) as err:
        await _sdk(stack, own).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 502
    text = err.value.response.text
    assert err.value.response.headers["content-type"] == PROBLEM
    assert json.loads(text)["err_code"] == "upstream_unreachable"
    assert err.value.message.startswith("Error code: 502 - ") and err.value.code == "upstream_unreachable"
    assert "127.0.0.1" not in text and str(port) not in text


async def test_owner_keys_see_no_global_counters_or_infrastructure(stack: Stack) -> None:
    async with stack.client(stack.operator_key) as op, stack.client(stack.bob_key) as owner:
        op_status = (await op.get("/v1/engine/status")).json()
        own_status = (await owner.get("/v1/engine/status")).json()
        op_settings = (await op.get("/v1/settings")).json()
        own_settings = (await owner.get("/v1/settings")).json()
        own_health = await owner.get("/v1/health")
        op_health = await op.get("/v1/health")
    assert own_health.status_code == 403 and "version" not in own_health.text
    assert op_health.status_code == 200 and op_health.json()["services"]
    assert op_status["lag"] and any("vectors" in s or "detail" in s for s in op_status["vector_stores"].values())
    assert own_status.get("lag", {}) == {} and own_status.get("fallbacks", {}) == {}
    for name, store in own_status["vector_stores"].items():
        assert set(store) <= {"active_signature", "healthy", "dim"}, name
    assert own_status["keyword_tier"] == op_status["keyword_tier"]
    assert {"embeddingUrl", "qdrantUrl"} <= set(op_settings["settings"])
    hidden = {"embeddingUrl", "qdrantUrl", "qdrantCollection", "embeddingApiKey", "qdrantApiKey"}
    assert not hidden & set(own_settings["settings"]) and not hidden & set(own_settings.get("sources", {}))
    assert "maxTokens" in own_settings["settings"] or len(own_settings["settings"]) > 5


# --- 6. slow headers lose the connection -------------------------------------------------------
@pytest.mark.parametrize("sent", [b"", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"], ids=["silent", "partial"])
async def test_a_connection_that_never_finishes_its_headers_is_closed(stack: Stack, sent: bytes) -> None:
    url = httpx.URL(stack.url)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(sent)
        await writer.drain()
        started = asyncio.get_running_loop().time()
        data = await asyncio.wait_for(reader.read(), HEADER_TIMEOUT_S + 10)  # EOF: the server closed it
        waited = asyncio.get_running_loop().time() - started
    finally:
        writer.close()
    assert data == b"" and HEADER_TIMEOUT_S - 0.5 <= waited <= HEADER_TIMEOUT_S + 5


async def test_a_request_sent_in_time_is_served(stack: Stack) -> None:
    url = httpx.URL(stack.url)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        await asyncio.sleep(HEADER_TIMEOUT_S / 3)
        writer.write(b"\r\n")
        status = await asyncio.wait_for(reader.readline(), 10)
    finally:
        writer.close()
    assert status.startswith(b"HTTP/1.1 200")


# --- 7. list positions and ids -----------------------------------------------------------------
@pytest.mark.parametrize(
    "params",
    [{"offset": "99999999999999999999"}, {"offset": "1000001"}, {"page": "99999999999999999"}, {"offset": "-1"}],
)
async def test_a_huge_list_position_is_a_400(stack: Stack, params: dict[str, str]) -> None:
    async with stack.client(stack.bob_key) as http:
        reply = await http.get("/v1/memories", params=params)
    assert reply.status_code == 400, reply.text
    assert reply.headers["content-type"] == PROBLEM and reply.json()["field"] == f"$.{next(iter(params))}"


@pytest.mark.parametrize("event_id", ["msg-1\n", "msg\r\n", "msg\x00", "msg\u2028"])
async def test_an_event_id_with_a_newline_or_control_is_a_400(stack: Stack, event_id: str) -> None:
    async with stack.client(stack.bob_key) as http:
        reply = await http.post(
            "/v1/events", json={"event_id": event_id, "messages": [{"role": "user", "content": "x"}]}
        )
    assert reply.status_code == 400 and reply.json()["field"] == "$.event_id"
