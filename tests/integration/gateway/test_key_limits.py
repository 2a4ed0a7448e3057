"""Per-key limits hold across gateway replicas: two gateways (each with its own NATS connection,
one NATS server, one ``MEM_KEY_LIMITS`` bucket) behind one key share its requests per minute, its
day's LLM tokens and its open streams; a key over a limit gets a typed 429 with ``Retry-After``
and the upstream is not contacted; a model off the allowlist is 403; events over the key's rate
are refused before they reach the stream; a 429 from memory says so in ``x-memory-status``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import openai
import pytest
from nats.js.kv import KeyValue

from memoryd.subjects import EVENTS_STREAM
from services.gateway.adapters.limits_kv import LIMITS_BUCKET
from services.gateway.logic.limits import counter_key
from shared.api_keys import KeyLimits, new_key
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NO_MEMORY = {"x-memory-no-memory": "true"}
ASK = [{"role": "user", "content": "Say something short."}]


@pytest.fixture(scope="module")
async def second(stack: Stack, pg_dsn: str) -> AsyncIterator[str]:
    """The URL of a second gateway on the stack's NATS (its own connection, the same KV buckets)."""
    async with run_services(["gateway"], service_config(stack.nats_url, pg_dsn)) as contexts:
        url = contexts["gateway"].ready_fields["http"]
        assert url != stack.url
        yield url


async def _key(stack: Stack, **limits: Any) -> tuple[str, str]:
    token, record = new_key("owner", f"lim-{uuid.uuid4().hex[:8]}", limits=KeyLimits(**limits))
    await stack.keys.put(record)
    return token, record.id


def _sdk(url: str, token: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key=token, default_headers={**NO_MEMORY, **headers}, max_retries=0
    )


async def _fresh_window(seconds: float, need_s: float) -> None:
    """Wait for the next fixed window when fewer than ``need_s`` seconds are left in this one."""
    left = seconds - time.time() % seconds
    if left < need_s:
        await asyncio.sleep(left + 0.05)


async def _value(kv: KeyValue, key: str) -> bytes | None:
    return (await kv.get(key)).value


async def _eventually(read: Callable[[], Awaitable[object]], expected: object, within_s: float = 2.0) -> bool:
    """``read()`` gives ``expected`` within ``within_s`` (what a stream does after its last event)."""
    deadline = time.monotonic() + within_s
    while (value := await read()) != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return value == expected


def _problem(response: httpx.Response, err_code: str) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert body["err_code"] == err_code and body["status"] == response.status_code
    return body


async def test_requests_per_minute_hold_across_two_gateways(stack: Stack, second: str) -> None:
    token, _ = await _key(stack, requests_per_minute=3)
    await _fresh_window(60, 20)
    stack.llm.handler = lambda req: "ok"
    try:
        sent = len(stack.llm.requests)
        for url in (stack.url, second, stack.url):
            reply = await _sdk(url, token).chat.completions.create(model="fake", messages=ASK)
            assert reply.choices[0].message.content == "ok"
        assert len(stack.llm.requests) == sent + 3
        for url in (second, stack.url):
            with pytest.raises(openai.RateLimitError) as err:
                await _sdk(url, token).chat.completions.create(model="fake", messages=ASK)
            _problem(err.value.response, "rate_limited")
            assert 1 <= int(err.value.response.headers["retry-after"]) <= 60
        assert len(stack.llm.requests) == sent + 3  # the upstream never saw the refused calls
    finally:
        stack.llm.handler = None


def _with_usage_chunk(llm: FakeLlm) -> None:
    """The upstream sends the usage chunk OpenAI sends for ``stream_options.include_usage``."""

    def chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
        out = FakeLlm.sse_chunks(completion)
        if (llm.requests[-1].get("stream_options") or {}).get("include_usage") is True:
            base = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0}
            out.append({**base, "model": completion["model"], "choices": [], "usage": completion["usage"]})
        return out

    llm.sse_chunks = chunks  # type: ignore[method-assign]


async def test_daily_tokens_hold_across_two_gateways_streamed_or_not(stack: Stack, second: str) -> None:
    token, key_id = await _key(stack, max_tokens_per_day=100)
    _with_usage_chunk(stack.llm)
    try:
        stack.llm.reply_text("Not streamed.", prompt_tokens=30, completion_tokens=20)
        await _sdk(stack.url, token).chat.completions.create(model="fake", messages=ASK)
        stack.llm.reply_text("Streamed back to you.", prompt_tokens=25, completion_tokens=25)
        stream = await _sdk(second, token).chat.completions.create(model="fake", messages=ASK, stream=True)
        chunks = [chunk async for chunk in stream]
        assert stack.llm.requests[-1]["stream_options"] == {"include_usage": True}  # asked for by the gateway
        assert all(chunk.choices for chunk in chunks)  # ... and taken out: the caller did not ask for it
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Streamed back to you."
        kv = await stack.nc.jetstream().key_value(LIMITS_BUCKET)
        tokens = counter_key("tokens", key_id, "day", time.time())
        # 30 + 20 counted by one gateway, 25 + 25 by the other (as its stream ends, maybe after [DONE] is read)
        assert await _eventually(lambda: _value(kv, tokens), b"100")

        sent = len(stack.llm.requests)
        for url in (stack.url, second):
            with pytest.raises(openai.RateLimitError) as err:
                await _sdk(url, token).chat.completions.create(model="fake", messages=ASK)
            body = _problem(err.value.response, "budget_exceeded")
            assert "100 of its 100" in body["detail"]
            assert 1 <= int(err.value.response.headers["retry-after"]) <= 86_400
        assert len(stack.llm.requests) == sent
    finally:
        del stack.llm.sse_chunks  # type: ignore[attr-defined]


async def test_a_caller_that_asks_for_usage_gets_the_usage_chunk(stack: Stack) -> None:
    token, _ = await _key(stack, max_tokens_per_day=1000)
    _with_usage_chunk(stack.llm)
    try:
        stack.llm.reply_text("With usage.", prompt_tokens=3, completion_tokens=4)
        stream = await _sdk(stack.url, token).chat.completions.create(
            model="fake", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 7
    finally:
        del stack.llm.sse_chunks  # type: ignore[attr-defined]


async def test_streams_over_the_cap_get_429_and_a_slot_frees_when_a_stream_ends(stack: Stack, second: str) -> None:
    token, _ = await _key(stack, max_streams=1)
    sent = len(stack.llm.requests)
    stack.llm.reply_text("The slow one.", delay_s=2.0)
    first = asyncio.create_task(_sdk(stack.url, token).chat.completions.create(model="fake", messages=ASK, stream=True))
    for _ in range(100):
        if len(stack.llm.requests) == sent + 1:
            break
        await asyncio.sleep(0.02)
    assert len(stack.llm.requests) == sent + 1  # the first stream holds its slot
    with pytest.raises(openai.RateLimitError) as err:
        await _sdk(second, token).chat.completions.create(model="fake", messages=ASK, stream=True)
    _problem(err.value.response, "rate_limited")
    assert err.value.response.headers["retry-after"] == "1"
    assert len(stack.llm.requests) == sent + 1
    stack.llm.reply_text("Not a stream.")  # a whole answer needs no slot
    whole = await _sdk(second, token).chat.completions.create(model="fake", messages=ASK)
    assert whole.choices[0].message.content == "Not a stream."

    text = "".join([c.choices[0].delta.content or "" async for c in await first if c.choices])
    assert text == "The slow one."
    stack.llm.handler = lambda req: "Next one."
    try:
        for _ in range(20):  # the slot is freed as the stream ends (well before its lease would lapse)
            try:
                stream = await _sdk(second, token).chat.completions.create(model="fake", messages=ASK, stream=True)
                break
            except openai.RateLimitError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("the slot of the finished stream was not freed")
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == "Next one."
    finally:
        stack.llm.handler = None


async def test_the_model_allowlist_refuses_another_model_with_403(stack: Stack, second: str) -> None:
    token, _ = await _key(stack, models=["fake-a"])
    sent = len(stack.llm.requests)
    with pytest.raises(openai.PermissionDeniedError) as err:
        await _sdk(second, token).chat.completions.create(model="fake-b", messages=ASK)
    body = _problem(err.value.response, "forbidden")
    assert "'fake-b'" in body["detail"] and "fake-a" in body["detail"]
    assert len(stack.llm.requests) == sent
    stack.llm.reply_text("Allowed.")
    reply = await _sdk(stack.url, token).chat.completions.create(model="fake-a", messages=ASK)
    assert reply.choices[0].message.content == "Allowed."


async def test_events_over_the_rate_are_refused_before_they_reach_the_stream(stack: Stack, second: str) -> None:
    token, _ = await _key(stack, events_per_second=2)
    js = stack.nc.jetstream()
    before = (await js.stream_info(EVENTS_STREAM)).state.last_seq
    await _fresh_window(1, 0.7)
    replies = []
    for url in (stack.url, second, stack.url):
        async with httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {token}"}) as http:
            body = {"messages": [{"role": "user", "content": f"I prefer tea {uuid.uuid4().hex[:6]}."}]}
            replies.append(await http.post("/v1/events", json=body))
    assert [r.status_code for r in replies] == [202, 202, 429]
    _problem(replies[2], "rate_limited")
    assert replies[2].headers["retry-after"] == "1"
    assert (await js.stream_info(EVENTS_STREAM)).state.last_seq == before + 2  # the refused one never got in


async def test_a_batch_counts_its_messages_items_as_events(stack: Stack) -> None:
    token, _ = await _key(stack, events_per_second=2)
    js = stack.nc.jetstream()
    before = (await js.stream_info(EVENTS_STREAM)).state.last_seq
    chat = [{"messages": [{"role": "user", "content": f"I prefer tea {i} {uuid.uuid4().hex[:6]}."}]} for i in range(3)]
    async with stack.client(token) as http:
        over = await http.post("/v1/memories/batch", json={"items": [{"content": "Walks to work"}, *chat]})
        assert over.status_code == 429, over.text
        _problem(over, "rate_limited")
        assert (await js.stream_info(EVENTS_STREAM)).state.last_seq == before  # nothing published ...
        assert (await http.get("/v1/memories")).json()["memories"] == []  # ... and nothing stored
        await _fresh_window(1, 0.7)
        fits = await http.post("/v1/memories/batch", json={"items": [{"content": "Walks to work"}, *chat[:2]]})
        assert fits.status_code == 200, fits.text
        assert (fits.json()["stored"], fits.json()["published"]) == (1, 2)
    assert (await js.stream_info(EVENTS_STREAM)).state.last_seq == before + 2


async def test_a_429_from_memory_says_rate_limited_and_the_call_goes_ahead(stack: Stack) -> None:
    token, record_id = await _key(stack)
    owner = (await stack.keys.get(record_id)).owner  # type: ignore[union-attr]
    async with stack.client(stack.operator_key) as op:
        put = await op.put("/v1/settings", json={"values": {"searchesPerSecond": 0.01}, "owner": owner})
        assert put.status_code == 200, put.text
    stack.llm.handler = lambda req: "Answered anyway."
    sdk = openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=token, max_retries=0)
    try:
        statuses = []
        for _ in range(30):  # the setting reaches retrieve within a second; then the second search is over
            raw = await sdk.chat.completions.with_raw_response.create(model="fake", messages=ASK)
            assert raw.parse().choices[0].message.content == "Answered anyway."
            statuses.append(raw.headers["x-memory-status"])
            if statuses[-1] == "rate_limited":
                break
            await asyncio.sleep(0.1)
        assert statuses[-1] == "rate_limited", statuses
        assert all(m["role"] != "system" for m in stack.llm.requests[-1]["messages"])  # went without memory
    finally:
        stack.llm.handler = None


async def test_a_slot_of_a_gateway_that_died_lapses_with_its_lease(stack: Stack) -> None:
    token, key_id = await _key(stack, max_streams=1)
    kv = await stack.nc.jetstream().key_value(LIMITS_BUCKET)
    await kv.put(f"streams.{key_id}", json.dumps({"gone": time.time() + 60}).encode())  # renewed a moment ago
    with pytest.raises(openai.RateLimitError):
        await _sdk(stack.url, token).chat.completions.create(model="fake", messages=ASK, stream=True)
    await kv.put(f"streams.{key_id}", json.dumps({"gone": time.time() - 1}).encode())  # not renewed: lapsed
    stack.llm.reply_text("Your turn.")
    stream = await _sdk(stack.url, token).chat.completions.create(model="fake", messages=ASK, stream=True)
    assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == "Your turn."
    assert await _eventually(lambda: _value(kv, f"streams.{key_id}"), b"{}")  # freed, and the dead one dropped


def _keys_cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd.cli.main", "keys", *args, "--nats-url", stack.nats_url],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_limits_set_by_keys_create_are_listed_and_enforced(stack: Stack) -> None:
    args = ("create", "--owner", f"cli-{uuid.uuid4().hex[:6]}", "--models", "fake-a,fake-b", "--max-streams", "0")
    created = await asyncio.to_thread(_keys_cli, stack, *args, "--requests-per-minute", "5")
    assert created.returncode == 0, created.stderr
    key_id = created.stdout.strip().split("_")[1]
    listed = await asyncio.to_thread(_keys_cli, stack, "list", "--json")
    entry = {e["id"]: e for e in json.loads(listed.stdout)}[key_id]
    assert entry["limits"] == {"requests_per_minute": 5, "max_streams": 0, "models": ["fake-a", "fake-b"]}
    lines = (await asyncio.to_thread(_keys_cli, stack, "list")).stdout.splitlines()
    assert any(
        line.startswith(key_id) and line.endswith("requests_per_minute=5 max_streams=0 models=fake-a,fake-b")
        for line in lines
    ), lines
    with pytest.raises(openai.PermissionDeniedError):
        await _sdk(stack.url, created.stdout.strip()).chat.completions.create(model="fake-c", messages=ASK)
    bad = await asyncio.to_thread(_keys_cli, stack, "create", "--owner", "x", "--requests-per-minute", "-1")
    assert bad.returncode == 2 and "--requests-per-minute" in bad.stderr
