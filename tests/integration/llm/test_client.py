"""The LLM client against the scripted server (real HTTP) and real Postgres audit rows."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import httpx
import msgspec
import pytest
from prometheus_client import REGISTRY

from memoryd.errors import BudgetExceeded, DependencyDown
from shared.llm import LlmBadReply, LlmClient, LlmNotConfigured, LlmUnavailable
from shared.llm.reply import estimate_prompt_tokens
from shared.settings.env import LlmConfig
from tests.support.fake_llm import FakeLlm


class Facts(msgspec.Struct):
    facts: list[str]


MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "List facts."}]


def _owner() -> str:
    return f"o-{uuid.uuid4().hex[:8]}"


def _client(llm: FakeLlm, pool: asyncpg.Pool | None, **cfg: Any) -> LlmClient:
    return LlmClient(LlmConfig(base_url=llm.base_url, model="m1", **cfg), pool, retry_backoff_s=0.01)


async def _audit(pool: asyncpg.Pool, owner: str) -> list[tuple[str, str, int, int, str | None]]:
    rows = await pool.fetch(
        "SELECT operation, status, prompt_tokens, completion_tokens, error FROM llm_audit_logs"
        " WHERE owner = $1 ORDER BY id",
        owner,
    )
    return [(r["operation"], r["status"], r["prompt_tokens"], r["completion_tokens"], r["error"]) for r in rows]


def _calls(operation: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("memoryd_llm_calls_total", {"operation": operation, "outcome": outcome}) or 0.0


async def test_json_reply_is_decoded_and_audited(pool: asyncpg.Pool) -> None:
    owner = _owner()
    async with FakeLlm() as llm:
        llm.reply_json({"facts": ["a", "b"]}, prompt_tokens=11, completion_tokens=5)
        client = _client(llm, pool, api_key="sk-test")
        try:
            result = await client.complete_json(
                owner=owner, operation="t.json", messages=MESSAGES, response_type=Facts, max_tokens=64
            )
        finally:
            await client.close()
        [request] = llm.requests
        headers = llm.request_headers[0]
    assert result.value == Facts(facts=["a", "b"])
    assert (result.prompt_tokens, result.completion_tokens, result.total_tokens) == (11, 5, 16)
    assert result.model == "fake-llm" and result.raw == '{"facts": ["a", "b"]}'
    assert request["response_format"] == {"type": "json_object"}
    assert request["model"] == "m1" and request["max_tokens"] == 64 and request["temperature"] == 0.0
    assert request["messages"] == MESSAGES
    assert headers["authorization"] == "Bearer sk-test"
    assert await _audit(pool, owner) == [("t.json", "ok", 11, 5, None)]


async def test_fenced_json_and_prose_around_it_are_tolerated(pool: asyncpg.Pool) -> None:
    owner = _owner()
    async with FakeLlm() as llm:
        llm.reply_text('```json\n{"facts": ["x"]}\n```')
        llm.reply_text('Sure! Here it is:\n```\n{"facts": ["y"]}\n```\nAnything else?')
        llm.reply_text('The answer is {"facts": ["z"]} as requested.')
        client = _client(llm, pool)
        try:
            values = [
                (await client.complete_json(owner=owner, operation="t", messages=MESSAGES, response_type=Facts)).value
                for _ in range(3)
            ]
        finally:
            await client.close()
    assert values == [Facts(facts=["x"]), Facts(facts=["y"]), Facts(facts=["z"])]


async def test_text_completion_has_no_json_mode(pool: asyncpg.Pool) -> None:
    async with FakeLlm() as llm:
        llm.reply_text("A short summary.")
        client = _client(llm, pool)
        try:
            result = await client.complete_text(owner=_owner(), operation="t.text", messages=MESSAGES, model="m2")
        finally:
            await client.close()
        [request] = llm.requests
    assert result.value == "A short summary."
    assert "response_format" not in request and request["model"] == "m2"


@pytest.mark.parametrize(
    ("content", "needle"),
    [("not json at all", "not JSON"), ('{"facts": "oops"}', "wrong shape"), ("   ", "empty")],
)
async def test_bad_reply_raises_and_counts_its_tokens(pool: asyncpg.Pool, content: str, needle: str) -> None:
    owner = _owner()
    before = _calls("t.bad", "bad_reply")
    async with FakeLlm() as llm:
        llm.reply_text(content, prompt_tokens=7, completion_tokens=3)
        client = _client(llm, pool)
        try:
            with pytest.raises(LlmBadReply) as info:
                await client.complete_json(owner=owner, operation="t.bad", messages=MESSAGES, response_type=Facts)
        finally:
            await client.close()
    assert needle in info.value.description
    assert info.value.code == 502 and info.value.err_code == "llm_bad_reply"
    [(op, status, prompt, completion, error)] = await _audit(pool, owner)
    assert (op, status, prompt, completion) == ("t.bad", "bad_reply", 7, 3)
    assert error is not None and needle in error
    assert _calls("t.bad", "bad_reply") == before + 1


async def test_response_that_is_not_a_completion_is_a_bad_reply(pool: asyncpg.Pool) -> None:
    owner = _owner()
    async with FakeLlm() as llm:
        llm.reply_raw(200, {"choices": "nope"})
        llm.reply_raw(200, {"choices": []})
        client = _client(llm, pool)
        try:
            for _ in range(2):
                with pytest.raises(LlmBadReply):
                    await client.complete_text(owner=owner, operation="t", messages=MESSAGES)
        finally:
            await client.close()
    assert [row[1] for row in await _audit(pool, owner)] == ["bad_reply", "bad_reply"]


async def test_server_error_is_retried_once(pool: asyncpg.Pool) -> None:
    owner = _owner()
    async with FakeLlm() as llm:
        llm.fail(500)
        llm.reply_json({"facts": []}, prompt_tokens=4, completion_tokens=2)
        client = _client(llm, pool)
        try:
            result = await client.complete_json(owner=owner, operation="t", messages=MESSAGES, response_type=Facts)
        finally:
            await client.close()
        assert len(llm.requests) == 2
    assert result.value == Facts(facts=[])
    assert await _audit(pool, owner) == [("t", "ok", 4, 2, None)]


async def test_two_server_errors_make_the_llm_unavailable(pool: asyncpg.Pool) -> None:
    owner = _owner()
    before = _calls("t.down", "unavailable")
    async with FakeLlm() as llm:
        llm.fail(503, "overloaded")
        llm.fail(503, "still overloaded")
        llm.reply_json({"facts": []})  # never reached: only one retry
        client = _client(llm, pool)
        try:
            with pytest.raises(LlmUnavailable) as info:
                await client.complete_json(owner=owner, operation="t.down", messages=MESSAGES, response_type=Facts)
        finally:
            await client.close()
        assert len(llm.requests) == 2 and llm.pending == 1
    assert isinstance(info.value, DependencyDown) and info.value.status == 503
    assert "still overloaded" in info.value.description
    [(op, status, prompt, completion, error)] = await _audit(pool, owner)
    assert (op, status, prompt, completion) == ("t.down", "error", 0, 0)
    assert error is not None and "HTTP 503" in error
    assert _calls("t.down", "unavailable") == before + 1


@pytest.mark.parametrize("status", [429, 401, 400])
async def test_client_errors_are_not_retried(pool: asyncpg.Pool, status: int) -> None:
    async with FakeLlm() as llm:
        llm.fail(status)
        llm.reply_json({"facts": []})
        client = _client(llm, pool)
        try:
            with pytest.raises(LlmUnavailable) as info:
                await client.complete_text(owner=_owner(), operation="t", messages=MESSAGES)
        finally:
            await client.close()
        assert len(llm.requests) == 1
    assert info.value.status == status


async def test_timeout_is_retried_then_unavailable(pool: asyncpg.Pool) -> None:
    owner = _owner()
    async with FakeLlm() as llm:
        llm.reply_json({"facts": []}, delay_s=2.0)
        llm.reply_json({"facts": []}, delay_s=2.0)
        client = _client(llm, pool, timeout_s=0.2)
        try:
            with pytest.raises(LlmUnavailable) as info:
                await client.complete_text(owner=owner, operation="t", messages=MESSAGES)
        finally:
            await client.close()
    assert "timed out" in info.value.description
    # a timed-out call may have been worked on: its reserved worst case stays counted
    assert [row[1:4] for row in await _audit(pool, owner)] == [("timeout", estimate_prompt_tokens(MESSAGES), 1024)]


async def test_unreachable_endpoint_is_unavailable() -> None:
    async with FakeLlm() as llm:
        base_url = llm.base_url
    client = LlmClient(LlmConfig(base_url=base_url, model="m"), None, retry_backoff_s=0.01)
    try:
        with pytest.raises(LlmUnavailable) as info:
            await client.complete_text(owner="a", operation="t", messages=MESSAGES)
    finally:
        await client.close()
    assert "cannot reach" in info.value.description


async def test_not_configured_sends_nothing_and_writes_nothing(pool: asyncpg.Pool) -> None:
    owner = _owner()
    client = LlmClient(LlmConfig(), pool)
    try:
        assert not client.configured
        with pytest.raises(LlmNotConfigured):
            await client.complete_text(owner=owner, operation="t", messages=MESSAGES)
    finally:
        await client.close()
    assert await _audit(pool, owner) == []


async def test_budget_stops_calls_and_every_call_is_audited(pool: asyncpg.Pool) -> None:
    """The budget is hard: a call runs only when today's tokens plus its worst case (prompt
    estimate + ``max_tokens``) fit, and its reservation is settled with what it used."""
    owner, other = _owner(), _owner()
    worst = estimate_prompt_tokens(MESSAGES) + 20
    async with FakeLlm() as llm:
        llm.handler = lambda req: (
            200,
            FakeLlm.completion(req, '{"facts": []}', prompt_tokens=30, completion_tokens=10),
        )
        client = _client(llm, pool, daily_token_budget=80 + worst)
        try:
            for _ in range(3):  # 0, 40, 80 used before each call: each worst case still fits
                await client.complete_json(
                    owner=owner, operation="t.b", messages=MESSAGES, response_type=Facts, max_tokens=20
                )
            with pytest.raises(BudgetExceeded) as info:  # 120 used
                await client.complete_json(
                    owner=owner, operation="t.b", messages=MESSAGES, response_type=Facts, max_tokens=20
                )
            # another owner has their own budget
            await client.complete_json(
                owner=other, operation="t.b", messages=MESSAGES, response_type=Facts, max_tokens=20
            )
            assert await client.tokens_used_today(owner) == 120
        finally:
            await client.close()
        assert len(llm.requests) == 4
    assert info.value.code == 429 and str(80 + worst) in info.value.description
    rows = await _audit(pool, owner)
    assert [row[:4] for row in rows] == [("t.b", "ok", 30, 10)] * 3 + [("t.b", "budget_exceeded", 0, 0)]
    assert await _audit(pool, other) == [("t.b", "ok", 30, 10, None)]


async def test_concurrent_calls_cannot_overshoot_the_budget(pool: asyncpg.Pool) -> None:
    owner = _owner()
    worst = estimate_prompt_tokens(MESSAGES) + 50
    async with FakeLlm() as llm:
        llm.handler = lambda req: (200, FakeLlm.completion(req, "ok", prompt_tokens=10, completion_tokens=50))
        client = _client(llm, pool, daily_token_budget=2 * worst)
        try:
            outcomes = await asyncio.gather(
                *(
                    client.complete_text(owner=owner, operation="t.c", messages=MESSAGES, max_tokens=50)
                    for _ in range(10)
                ),
                return_exceptions=True,
            )
        finally:
            await client.close()
        sent = len(llm.requests)
    assert sum(not isinstance(o, BaseException) for o in outcomes) == sent
    assert sum(isinstance(o, BudgetExceeded) for o in outcomes) == 10 - sent
    # each call's worst case was reserved before it was sent: together they fit the budget
    assert sent * worst <= 2 * worst and sent >= 1


async def test_a_cancelled_call_keeps_its_reservation(pool: asyncpg.Pool) -> None:
    """A caller's timeout (e.g. around a rerank) still counts against the budget."""
    owner = _owner()
    async with FakeLlm() as llm:
        llm.reply_json({"facts": []}, delay_s=2.0)
        client = _client(llm, pool, daily_token_budget=10_000)
        try:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(
                    client.complete_text(owner=owner, operation="t.r", messages=MESSAGES, max_tokens=100), 0.3
                )
            await asyncio.sleep(0.2)
        finally:
            await client.close()
    [(operation, status, prompt, completion, _)] = await _audit(pool, owner)
    assert (operation, status, prompt, completion) == ("t.r", "cancelled", estimate_prompt_tokens(MESSAGES), 100)


async def test_yesterdays_tokens_do_not_count(pool: asyncpg.Pool) -> None:
    owner = _owner()
    await pool.execute(
        "INSERT INTO llm_audit_logs (owner, operation, prompt_tokens, completion_tokens, status, created_at)"
        " VALUES ($1, 't', 1000, 0, 'ok', (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"
        " - interval '1 second')",
        owner,
    )
    async with FakeLlm() as llm:
        llm.reply_text("ok")
        client = _client(llm, pool, daily_token_budget=100)
        try:
            result = await client.complete_text(owner=owner, operation="t", messages=MESSAGES, max_tokens=50)
        finally:
            await client.close()
    assert result.value == "ok"


async def test_concurrent_calls_share_one_server() -> None:
    async with FakeLlm() as llm:

        async def answer(req: dict[str, Any]) -> str:
            await asyncio.sleep(0.05)
            return json.dumps({"facts": [req["messages"][-1]["content"]]})

        llm.handler = answer
        client = _client(llm, None)
        try:
            results = await asyncio.gather(
                *(
                    client.complete_json(
                        owner="a", operation="t", messages=[{"role": "user", "content": f"q{i}"}], response_type=Facts
                    )
                    for i in range(20)
                )
            )
        finally:
            await client.close()
    assert [r.value.facts for r in results] == [[f"q{i}"] for i in range(20)]


async def test_fake_embeddings_are_deterministic_unit_vectors() -> None:
    async with FakeLlm(embedding_dim=8) as llm:
        llm.fail_embeddings(503)
        async with httpx.AsyncClient() as http:
            failed = await http.post(f"{llm.base_url}/embeddings", json={"input": "x", "model": "e"})
            one = (await http.post(f"{llm.base_url}/embeddings", json={"input": ["a", "b"], "model": "e"})).json()
            two = (await http.post(f"{llm.base_url}/embeddings", json={"input": "a", "dimensions": 4})).json()
            models = (await http.get(f"{llm.base_url}/models")).json()
        assert len(llm.embedding_requests) == 3 and llm.requests == []
    assert failed.status_code == 503
    a, b = (item["embedding"] for item in one["data"])
    assert len(a) == 8 and a == FakeLlm.embedding("a", 8) and a != b
    assert abs(sum(v * v for v in a) - 1.0) < 1e-9
    assert len(two["data"][0]["embedding"]) == 4 and one["usage"]["prompt_tokens"] == 2
    assert models["data"][0]["id"] == "fake-llm"


async def test_default_without_script_or_handler_is_a_500() -> None:
    async with FakeLlm() as llm, httpx.AsyncClient() as http:
        response = await http.post(f"{llm.base_url}/chat/completions", json={"messages": []})
        missing = await http.post(f"{llm.base_url}/nope", json={})
    assert response.status_code == 500 and "no scripted reply" in response.json()["error"]["message"]
    assert missing.status_code == 404
