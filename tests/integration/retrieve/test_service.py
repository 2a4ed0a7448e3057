"""Injection, recall heat (touch vs dry_run), hostile queries, engine.status, deep health, the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import asyncpg
import msgspec
import pytest
from nats.aio.client import Client

from memoryd.codec import decode_reply
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.events import ChatMessage
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult, HealthRequest, HealthResult, RpcError
from memoryd.schemas.retrieval import InjectRequest, InjectResult, RetrieveRequest, RetrieveResult
from services.retrieve.logic.injection import format_memory_context
from shared.service import ServiceContext

from .conftest import SIG, ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")


async def test_inject_system_role_provider(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    await put(pool, who, "User prefers {{dark}} mode in every editor")
    req = InjectRequest(
        owner=who,
        provider="openai",
        model="gpt-4o",
        messages=[
            ChatMessage(role="system", content="You are terse."),
            ChatMessage(role="user", content="Which editor mode do I prefer?"),
        ],
    )
    res: InjectResult = await call(nc, "inject", req, timeout=10)
    assert res.placement == "system"
    assert [m.role for m in res.messages] == ["system", "system", "user"]
    assert res.messages[0].content == format_memory_context(["User prefers {{dark}} mode in every editor"])
    assert '\n"User prefers \uff5b\uff5bdark\uff5d\uff5d mode in every editor"\n' in res.messages[0].content
    assert res.messages[1:] == req.messages
    assert "{" not in res.context and [m.content for m in res.injected] == [
        "User prefers {{dark}} mode in every editor"
    ]
    assert res.retrieval is not None and res.retrieval.memories[0].tier == "keyword"


async def test_inject_provider_without_system_role(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    who = owner()
    await put(pool, who, "The deploy target is Frankfurt")
    messages = [
        ChatMessage(role="user", content="hello"),
        ChatMessage(role="assistant", content="hi"),
        ChatMessage(role="user", content="where do we deploy?"),
    ]
    res: InjectResult = await call(
        nc, "inject", InjectRequest(owner=who, provider="glm", messages=messages, query="deploy target"), timeout=10
    )
    assert res.placement == "user"
    assert [m.role for m in res.messages] == ["user", "assistant", "user"]
    assert res.messages[0].content == format_memory_context(["The deploy target is Frankfurt"]) + "\n\n---\n\nhello"
    assert res.messages[1:] == messages[1:]
    # the o1 family by model name, whatever the provider; default query = the last user message
    o1 = InjectRequest(owner=who, provider="openai", model="o1-mini-2024-09-12", messages=messages)
    res = await call(nc, "inject", o1, timeout=10)
    assert res.placement == "user" and res.messages[0].content.endswith("---\n\nhello")
    # nothing found -> nothing injected, the request unchanged
    res = await call(nc, "inject", InjectRequest(owner=who, messages=messages, query="zzzunmatched"), timeout=10)
    assert res.placement == "none" and res.messages == messages and res.injected == [] and res.context == ""


async def test_dry_run_does_not_touch_and_retrieve_does(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    who = owner()
    previewed = await put(pool, who, "preview only gecko")
    recalled = await put(pool, who, "recalled salamander")
    res: RetrieveResult = await call(
        nc, "retrieve", RetrieveRequest(owner=who, query="gecko", dry_run=True), timeout=10
    )
    assert [m.id for m in res.memories] == [previewed]
    res = await call(nc, "retrieve", RetrieveRequest(owner=who, query="salamander"), timeout=10)
    assert [m.id for m in res.memories] == [recalled]
    for _ in range(200):  # the touch is asynchronous: poll (the loop flushes every second)
        touched = await pool.fetchval("SELECT last_accessed_at FROM memories WHERE id = $1::uuid", recalled)
        if touched is not None:
            break
        await asyncio.sleep(0.05)
    assert touched is not None
    # both were queued in order; the preview, had it been queued, would have been written first
    assert await pool.fetchval("SELECT last_accessed_at FROM memories WHERE id = $1::uuid", previewed) is None


HOSTILE = [
    "",
    " \t\n ",
    "x" * 100_000,
    "word " * 20_000,
    "?!.,;:()[]<>",
    "a & !b | c:*",
    "!!! & | <-> :* '' \"\" ()",
    '"unclosed quote',
    "-not -this or that",
    "{{x}} {% raw %} ${y}",
    "'; DROP TABLE memories; --",
    "\\x00\\\\",
    "مرحبا بالعالم",
    "你好世界 東京",
    "🙂🚀🔥",
    "e\u0301\u200b\u202e",
]


@pytest.mark.parametrize("strategy", ["hybrid", "semantic", "exact"])
async def test_hostile_queries_answer_or_4xx(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, strategy: str
) -> None:
    who = owner()
    await put(pool, who, "ordinary memory about tokyo 東京 and مرحبا", vector=unit(1, 0, 0, 0))
    embed = await ScriptedEmbed().start(nc)
    try:
        payloads = [msgspec.json.encode(RetrieveRequest(owner=who, query=q, strategy=strategy)) for q in HOSTILE]
        base = f'{{"type":"mem.v1.retrieve_request","owner":"{who}","strategy":"{strategy}","query":'.encode()
        payloads += [
            base + b'"\\u0000abc\\u0000"}',  # NUL (Postgres text cannot hold it)
            base + b'"\\ud800 lone surrogate"}',
            base + json.dumps("y" * 100_001).encode() + b"}",  # over the query limit: 400
            b'{"type":"mem.v1.retrieve_request","owner":"bad owner!","query":"x"}',
            base + b'"x","max_tokens":-1}',
        ]
        for payload in payloads:
            msg = await nc.request("mem.v1.rpc.retrieve", payload, timeout=10)
            reply = decode_reply(msg.data, RetrieveResult)
            if isinstance(reply, RpcError):
                assert 400 <= reply.code < 500, (payload[:80], reply)
            else:
                assert reply.strategy == ("exact" if strategy == "exact" else strategy)
                assert all(m.id for m in reply.memories)
    finally:
        await embed.stop()


async def test_engine_status_and_deep_health(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    await put(pool, who, "needs a vector")
    await call(nc, "retrieve", RetrieveRequest(owner=who, query="vector"), timeout=10)  # one embed fallback
    status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=who), timeout=10)
    assert "websearch_to_tsquery" in status.keyword_tier
    assert status.embedding["stores"]["pgvector"]["signature"] == SIG
    assert status.embedding["probe"]["ok"] is False  # no embed service in this test
    assert status.vector_stores["pgvector"]["active_signature"] == SIG
    assert status.vector_stores["pgvector"]["healthy"] is True
    assert status.pending_reindex == 1  # inserted directly, never embedded
    assert status.fallbacks.get("embed_unavailable", 0) >= 1
    embed = await ScriptedEmbed().start(nc)
    try:
        status = await call(nc, "engine.status", EngineStatusRequest(), timeout=10)
    finally:
        await embed.stop()
    assert status.embedding["probe"]["ok"] is True and status.embedding["probe"]["signature"] == SIG

    health: HealthResult = await call(nc, HEALTH_OP, HealthRequest(deep=True), subject="mem.v1.rpc.health.retrieve")
    assert health.status == "ok", health.checks
    assert health.checks["round_trip"].startswith("ok create->retrieve->delete")
    assert health.checks["vector_pgvector"].startswith("ok")
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE owner = '__health__'") == 0
    shallow: HealthResult = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.retrieve")
    assert "round_trip" not in shallow.checks


async def test_cli_search(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    mid = await put(pool, who, "the narwhal tusk is a tooth")
    url = retrieve_svc.config.nats.url
    cmd = [sys.executable, "-m", "memoryd.cli.main", "search", "--owner", who, "--nats-url", url]
    env = {k: v for k, v in os.environ.items() if k != "MEMORYD_NATS_URL"}

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=60, env=env, check=False)

    text, as_json = await asyncio.gather(asyncio.to_thread(run, "narwhal"), asyncio.to_thread(run, "--json", "tusk"))
    assert text.returncode == 0, text.stderr
    assert "narwhal tusk" in text.stdout and "keyword" in text.stdout
    assert "fallback pgvector->keyword:embed_unavailable" in text.stdout
    assert as_json.returncode == 0, as_json.stderr
    assert [m["id"] for m in json.loads(as_json.stdout)["memories"]] == [mid]
    bad = await asyncio.to_thread(run, "--strategy", "exact", "x", "--limit", "0")
    assert bad.returncode == 2  # a usage error


async def test_cli_inject_and_status(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    await put(pool, who, "User prefers dark mode in every editor")
    url = retrieve_svc.config.nats.url
    env = {k: v for k, v in os.environ.items() if k != "MEMORYD_NATS_URL"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "memoryd.cli.main", *args, "--nats-url", url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, check=False)

    args = ("inject", "--owner", who, "--system", "You are terse.", "--provider", "openai", "Which editor mode?")
    text, as_json, status = await asyncio.gather(
        asyncio.to_thread(run, *args), asyncio.to_thread(run, *args, "--json"), asyncio.to_thread(run, "status")
    )
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("1 memories injected into the system message")
    assert "User prefers dark mode in every editor" in text.stdout and "Which editor mode?" in text.stdout
    assert as_json.returncode == 0, as_json.stderr
    injected = json.loads(as_json.stdout)
    assert injected["placement"] == "system" and [m["role"] for m in injected["messages"]] == [
        "system",
        "system",
        "user",
    ]
    assert status.returncode == 0, status.stderr
    assert "keyword tier" in status.stdout and "pending reindex" in status.stdout
