"""The OpenAI-compatible memory proxy, driven by the official ``openai`` SDK: memory reaches the
upstream, answers come back unchanged (streamed and not), the exchange becomes memory, the
no-memory header skips both, upstream errors keep their status and body."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import openai
import pytest

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _sdk(stack: Stack, key: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=key, default_headers=headers or None, max_retries=0)


async def _searchable(stack: Stack, text: str, session: str | None = None, query: str | None = None) -> bool:
    """``text`` is among what a search for ``query`` (default: ``text``) returns, within 10 s."""
    async with stack.client(stack.alice_key) as http:
        for _ in range(100):
            body = {"query": query or text, **({"session_id": session} if session else {})}
            hits = (await http.post("/v1/search", json=body)).json()["memories"]
            if any(text in m["content"] for m in hits):
                return True
            await asyncio.sleep(0.1)
    return False


async def _remember(stack: Stack, text: str, session: str | None = None) -> None:
    async with stack.client(stack.alice_key) as http:
        body = {"content": text, **({"session_id": session} if session else {})}
        assert (await http.post("/v1/memories", json=body)).status_code == 200


async def test_non_streamed_answer_with_memory_and_the_exchange_is_remembered(stack: Stack) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    question = "Which language should I use for my web project?"
    await _remember(stack, "I prefer TypeScript for web projects.", session)
    assert await _searchable(stack, "I prefer TypeScript for web projects.", session, question)  # embedded
    stack.llm.reply_text("Use TypeScript with Vite.")
    sdk = _sdk(stack, stack.alice_key, **{"x-memory-session": session})
    raw = await sdk.chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": question}]
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Use TypeScript with Vite."
    assert raw.headers["x-memory-status"] == "injected" and int(raw.headers["x-memory-injected"]) >= 1
    sent = stack.llm.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and sent[0]["content"].startswith("Memory context:")
    assert "TypeScript" in sent[0]["content"]
    assert sent[1] == {"role": "user", "content": question}
    assert await _searchable(stack, "Use TypeScript with Vite.", session)


async def test_agent_header_scopes_the_memory_and_the_remembered_exchange(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    coder, travel = f"coder-{tag}", f"travel-{tag}"
    question = "Which language should I use for my web project?"
    async with stack.client(stack.alice_key) as http:
        for agent, text in (
            (coder, f"I prefer TypeScript for web projects {tag}."),
            (travel, f"I prefer Perl for web projects {tag}."),
        ):
            made = await http.post("/v1/memories", json={"content": text, "agent_id": agent})
            assert made.status_code == 200, made.text
        for _ in range(100):
            hits = (await http.post("/v1/search", json={"query": question, "agent_id": coder})).json()["memories"]
            if any(tag in m["content"] for m in hits):
                break
            await asyncio.sleep(0.1)
    stack.llm.reply_text(f"Use TypeScript, {tag}.")
    sdk = _sdk(stack, stack.alice_key, **{"x-memory-agent": coder})
    raw = await sdk.chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": question}]
    )
    assert raw.headers["x-memory-status"] == "injected"
    context = stack.llm.requests[-1]["messages"][0]["content"]
    assert f"TypeScript for web projects {tag}" in context and "Perl" not in context  # only the coder's memory
    async with stack.client(stack.alice_key) as http:
        for _ in range(100):
            listed = (await http.get("/v1/memories", params={"agent_id": coder, "source": "chat_turn"})).json()
            if any(m["content"] == f"Use TypeScript, {tag}." for m in listed["memories"]):
                break
            await asyncio.sleep(0.1)
        assert {m["agent_id"] for m in listed["memories"]} == {coder} and len(listed["memories"]) == 2, listed
        others = (await http.get("/v1/memories", params={"agent_id": travel, "source": "chat_turn"})).json()
        assert others["memories"] == []
        bad = await http.post(
            "/v1/chat/completions",
            headers={"x-memory-agent": "a" * 257},
            json={"model": "fake", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert bad.status_code == 400 and "x-memory-agent" in bad.json()["detail"], bad.text
    assert stack.llm.requests[-1]["messages"][-1]["content"] == question  # the bad call never went upstream


async def test_streamed_answer_passes_through_chunk_by_chunk(stack: Stack) -> None:
    stack.llm.reply_text("Stream me back exactly as sent.")
    sdk = _sdk(stack, stack.alice_key)
    stream = await sdk.chat.completions.create(
        model="fake", stream=True, messages=[{"role": "user", "content": [{"type": "text", "text": "Say it, please."}]}]
    )
    pieces = [
        chunk.choices[0].delta.content async for chunk in stream if chunk.choices and chunk.choices[0].delta.content
    ]
    assert len(pieces) == 6 and "".join(pieces) == "Stream me back exactly as sent."
    assert await _searchable(stack, "Stream me back exactly as sent.")


async def test_no_memory_header_skips_injection_and_remembering(stack: Stack) -> None:
    await _remember(stack, "I prefer Go for command line tools.")
    for value in ("true", "1", "YES"):
        marker = f"private-{uuid.uuid4().hex[:8]}"
        stack.llm.reply_text(f"Answer {marker}")
        sdk = _sdk(stack, stack.alice_key, **{"x-memory-no-memory": value})
        raw = await sdk.chat.completions.with_raw_response.create(
            model="fake", messages=[{"role": "user", "content": f"Which language for a CLI tool? {marker}"}]
        )
        assert raw.headers["x-memory-status"] == "skipped"
        assert all(m["role"] != "system" for m in stack.llm.requests[-1]["messages"])
        await asyncio.sleep(1.0)
        async with stack.client(stack.alice_key) as http:
            listed = (await http.get("/v1/memories", params={"q": marker})).json()
        assert listed["total"] == 0, listed


async def test_upstream_errors_keep_their_status_and_body(stack: Stack) -> None:
    stack.llm.fail(429, "slow down")
    sdk = _sdk(stack, stack.alice_key)
    with pytest.raises(openai.RateLimitError) as err:
        await sdk.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hello"}])
    assert err.value.status_code == 429 and err.value.body["message"] == "slow down"  # type: ignore[index]


async def test_proxy_needs_a_key_and_a_list_of_messages(stack: Stack) -> None:
    with pytest.raises(openai.AuthenticationError) as denied:
        await _sdk(stack, "wrong").chat.completions.create(model="fake", messages=[{"role": "user", "content": "x"}])
    # memoryd's own errors carry OpenAI's envelope too, so the SDK's message says what went wrong
    assert denied.value.message == "Error code: 401 - unknown or revoked API key"
    assert (denied.value.type, denied.value.code) == ("authentication_error", "unauthorized")
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {stack.alice_key}"}) as http:
        bad = await http.post(f"{stack.url}/v1/chat/completions", json={"model": "fake", "messages": "hi"})
    assert bad.status_code == 400 and bad.json()["field"] == "$.messages"
    assert bad.json()["error"] == {
        "message": "Expected a non-empty `array` of messages - at `$.messages`",
        "type": "invalid_request_error",
        "param": "$.messages",
        "code": "validation",
    }
    with pytest.raises(openai.BadRequestError) as invalid:
        await _sdk(stack, stack.alice_key).responses.create(model="fake", input=5)  # type: ignore[call-overload]
    assert invalid.value.message.startswith("Error code: 400 - ") and invalid.value.param == "$.input"
