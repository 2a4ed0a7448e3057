"""The Responses API and the model list through the memory proxy, driven by the official SDKs
(``openai`` and the OpenAI Agents SDK) against the scripted upstream: memory reaches the upstream
in ``instructions``, answers come back unchanged (streamed and not), the exchange becomes memory,
``/v1/models`` is the key's upstream's list."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from agents import Agent, Runner, set_default_openai_api, set_default_openai_client, set_tracing_disabled

from shared.api_keys import new_key
from tests.support.fake_llm import FakeLlm

from .conftest import GATEWAY_LLM_KEY, Stack
from .test_proxy import _remember, _sdk, _searchable

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def _known(stack: Stack, fact: str, question: str, session: str) -> None:
    """``fact`` is a memory of alice's that a search for ``question`` finds (it is embedded)."""
    await _remember(stack, fact, session)
    assert await _searchable(stack, fact, session, question)


async def test_non_streamed_response_with_memory_in_instructions_and_remembered(stack: Stack) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    question = "Which database should I pick for the billing service?"
    await _known(stack, "I decided to use PostgreSQL for billing data.", question, session)
    stack.llm.reply_text("PostgreSQL, as you decided.")
    sdk = _sdk(stack, stack.alice_key, **{"x-memory-session": session})
    raw = await sdk.responses.with_raw_response.create(
        model="fake", input=question, instructions="Answer in one line.", previous_response_id="resp_earlier"
    )
    response = raw.parse()
    assert response.output_text == "PostgreSQL, as you decided."
    assert response.usage is not None and response.usage.output_tokens > 0
    assert raw.headers["x-memory-status"] == "injected" and int(raw.headers["x-memory-injected"]) >= 1
    assert stack.llm.request_routes[-1] == "responses"
    sent = stack.llm.requests[-1]
    assert sent["instructions"].startswith("Memory context:") and "PostgreSQL" in sent["instructions"]
    assert sent["instructions"].endswith("\n\nAnswer in one line.")  # the caller's own, verbatim, last
    assert sent["input"] == question and sent["previous_response_id"] == "resp_earlier"
    assert await _searchable(stack, "PostgreSQL, as you decided.", session)
    assert await _searchable(stack, question, session)


async def test_streamed_response_passes_through_and_is_remembered(stack: Stack) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    question = "What editor do I like for writing Go?"
    await _known(stack, "I love Helix as my editor for Go.", question, session)
    stack.llm.reply_text("Helix, with gopls configured.")
    sdk = _sdk(stack, stack.alice_key, **{"x-memory-session": session})
    stream = await sdk.responses.create(
        model="fake", stream=True, input=[{"role": "user", "content": [{"type": "input_text", "text": question}]}]
    )
    kinds, deltas, completed = [], [], None
    async for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type == "response.completed":
            completed = event.response
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert deltas == ["Helix, ", "with ", "gopls ", "configured."]
    assert completed is not None and completed.output_text == "Helix, with gopls configured."
    assert completed.usage is not None and completed.usage.total_tokens > 0
    sent = stack.llm.requests[-1]
    assert sent["stream"] is True and "Helix" in sent["instructions"] and "instructions" not in sent["input"][0]
    assert await _searchable(stack, "Helix, with gopls configured.", session)


async def test_no_memory_header_skips_memory_and_a_bad_input_is_a_400(stack: Stack) -> None:
    marker = uuid.uuid4().hex[:10]
    stack.llm.reply_text(f"Private answer marker{marker}")
    sdk = _sdk(stack, stack.alice_key, **{"x-memory-no-memory": "yes"})
    raw = await sdk.responses.with_raw_response.create(model="fake", input=f"Private question marker{marker}")
    assert raw.parse().output_text == f"Private answer marker{marker}"
    assert raw.headers["x-memory-status"] == "skipped" and "instructions" not in stack.llm.requests[-1]
    await asyncio.sleep(1.0)
    async with stack.client(stack.alice_key) as http:
        assert (await http.get("/v1/memories", params={"q": f"marker{marker}"})).json()["total"] == 0
        bad = await http.post("/v1/responses", json={"model": "fake", "input": {"role": "user"}})
    assert bad.status_code == 400 and bad.json()["field"] == "$.input"
    assert bad.headers["content-type"] == "application/problem+json"


async def test_tool_calls_tool_outputs_and_instructions_are_not_remembered(stack: Stack) -> None:
    marker = uuid.uuid4().hex[:10]
    stack.llm.reply_text(f"assistant says marker{marker} reply")
    items = [
        {"role": "developer", "content": f"developer says marker{marker} rules"},
        {"role": "user", "content": f"user says marker{marker} question"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": f'{{"q": "call marker{marker}"}}'},
        {"type": "function_call_output", "call_id": "c1", "output": f"tool says marker{marker} output"},
    ]
    sdk = _sdk(stack, stack.alice_key)
    await sdk.responses.create(model="fake", input=items, instructions=f"system says marker{marker} obey")  # type: ignore[arg-type]
    async with stack.client(stack.alice_key) as http:
        contents: list[str] = []
        for _ in range(100):
            listed = (await http.get("/v1/memories", params={"q": f"marker{marker}", "limit": 50})).json()
            contents = sorted(m["content"] for m in listed["memories"] if m["source"] == "chat_turn")
            if len(contents) >= 2:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # nothing more arrives
        listed = (await http.get("/v1/memories", params={"q": f"marker{marker}", "limit": 50})).json()
    assert sorted(m["content"] for m in listed["memories"]) == [
        f"assistant says marker{marker} reply",
        f"user says marker{marker} question",
    ]


async def test_models_are_the_keys_upstreams_with_the_same_header_rules(stack: Stack) -> None:
    models = await _sdk(stack, stack.alice_key).models.list()
    assert [m.id for m in models.data] == [stack.llm.model]
    assert stack.llm.models_headers[-1]["authorization"] == f"Bearer {GATEWAY_LLM_KEY}"
    async with FakeLlm(model="own-model") as own:
        token, record = new_key("owner", stack.alice, upstream_url=own.base_url)
        await stack.keys.put(record)
        assert [m.id async for m in _sdk(stack, token).models.list()] == ["own-model"]
        assert "authorization" not in own.models_headers[-1]  # never the gateway's key
        caller = _sdk(stack, token, **{"x-upstream-authorization": "Bearer sk-callers-own"})
        assert [m.id for m in (await caller.models.list()).data] == ["own-model"]
        assert own.models_headers[-1]["authorization"] == "Bearer sk-callers-own"
    async with httpx.AsyncClient(headers={"authorization": "Bearer wrong"}) as http:
        assert (await http.get(f"{stack.url}/v1/models")).status_code == 401


async def test_an_agents_sdk_run_answers_with_memory_through_the_proxy_and_is_remembered(stack: Stack) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    marker = uuid.uuid4().hex[:10]
    question = f"Which language should my next systems tool use, marker{marker}?"
    await _known(stack, "I always write systems tools in Zig.", question, session)
    stack.llm.reply_text("Zig, since you always use it.")
    set_default_openai_client(_sdk(stack, stack.alice_key, **{"x-memory-session": session}), use_for_tracing=False)
    set_default_openai_api("responses")
    set_tracing_disabled(True)
    agent = Agent(name="helper", instructions="You are a concise assistant.", model="fake")
    result = await Runner.run(agent, question)
    assert result.final_output == "Zig, since you always use it."
    assert stack.llm.request_routes[-1] == "responses"
    sent = stack.llm.requests[-1]
    memory, _, own = sent["instructions"].partition("\n\n---\n\n")
    assert memory.startswith("Memory context:") and "Zig" in memory and own == "You are a concise assistant."
    assert any(item.get("role") == "user" and item.get("content") == question for item in sent["input"])
    assert await _searchable(stack, question, session, query=f"systems tool marker{marker}")


async def test_a_streamed_agents_sdk_run_is_remembered(stack: Stack) -> None:
    marker = uuid.uuid4().hex[:10]
    stack.llm.reply_text(f"Streamed agents answer marker{marker} done.")
    set_default_openai_client(_sdk(stack, stack.alice_key), use_for_tracing=False)
    set_default_openai_api("responses")
    set_tracing_disabled(True)
    agent = Agent(name="helper", instructions="You are a concise assistant.", model="fake")
    run = Runner.run_streamed(agent, f"Tell me something, marker{marker}.")
    kinds = {event.type async for event in run.stream_events()}
    assert "raw_response_event" in kinds
    assert run.final_output == f"Streamed agents answer marker{marker} done."
    assert stack.llm.requests[-1]["stream"] is True
    assert stack.llm.requests[-1]["instructions"].endswith("You are a concise assistant.")
    assert await _searchable(stack, f"Streamed agents answer marker{marker} done.", query=f"marker{marker}")
