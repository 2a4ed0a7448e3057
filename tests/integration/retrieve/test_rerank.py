"""The ``rerank`` setting through the service: the LLM's listwise order replaces the fused order
of the top ``rerankDepth``; without an LLM, or when it fails, times out or answers nonsense,
the fused order stands and ``fallbacks`` say why (never an error)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.settings.env import ServiceConfig
from shared.settings.store import put_values
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

from .conftest import ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")

Q = unit(1, 0, 0, 0)
VECTORS = {  # semantic order for Q: A, B, C, D
    "A": unit(1, 0, 0, 0),
    "B": unit(1, 0.3, 0, 0),
    "C": unit(1, 1, 0, 0),
    "D": unit(0.2, 1, 0, 0),
}


def reverse_order(request: dict[str, Any]) -> str:
    """The scripted model: the candidates in reverse."""
    n = len(re.findall(r"^\[\d+\] ", request["messages"][-1]["content"], re.M))
    return json.dumps({"order": list(range(n, 0, -1))})


async def _owner(pool: asyncpg.Pool, **settings: Any) -> tuple[str, dict[str, str]]:
    who = owner()
    ids = {name: await put(pool, who, f"heron note {name}", vector=v) for name, v in VECTORS.items()}
    if settings:
        await put_values(pool, who, settings)
    return who, ids


async def _ask(nc: Client, who: str) -> RetrieveResult:
    return await call(nc, "retrieve", RetrieveRequest(owner=who, query="heron", strategy="semantic"))


def _names(result: RetrieveResult, ids: dict[str, str]) -> str:
    by_id = {v: k for k, v in ids.items()}
    return "".join(by_id[m.id] for m in result.memories)


async def test_llm_rerank_and_every_fallback(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_RETRIEVE_RERANK_TIMEOUT_S", "0.5")
    embed = await ScriptedEmbed({"heron": Q}).start(nc)
    try:
        async with FakeLlm() as llm:
            llm.handler = reverse_order
            cfg = service_config(
                config.nats.url, config.pg.dsn, {"MEMORYD_LLM_BASE_URL": llm.base_url, "MEMORYD_LLM_MODEL": "ranker"}
            )
            async with run_services(["retrieve"], cfg):
                plain, plain_ids = await _owner(pool)
                assert _names(await _ask(nc, plain), plain_ids) == "ABCD"
                assert llm.requests == []  # rerank is off by default

                ranked, ids = await _owner(pool, rerank=True)
                result = await _ask(nc, ranked)
                assert _names(result, ids) == "DCBA" and result.fallbacks == []
                scores = [m.score for m in result.memories]
                assert scores == sorted(scores, reverse=True)
                prompt = llm.requests[-1]["messages"][-1]["content"]
                assert 'Query: "heron"' in prompt and '[4] "heron note D"' in prompt

                shallow, shallow_ids = await _owner(pool, rerank=True, rerankDepth=2)
                assert _names(await _ask(nc, shallow), shallow_ids) == "BACD"  # only the top two

                llm.fail(503)
                llm.fail(503)  # the client retries once
                down = await _ask(nc, ranked)
                assert _names(down, ids) == "ABCD" and "rerank->fused:rerank_unavailable" in down.fallbacks

                llm.reply_text("The first one looks best to me.")
                nonsense = await _ask(nc, ranked)
                assert _names(nonsense, ids) == "ABCD" and "rerank->fused:rerank_bad_reply" in nonsense.fallbacks

                llm.reply_json({"order": [4, 3, 2, 1]}, delay_s=1.5)
                started = time.monotonic()
                slow = await _ask(nc, ranked)
                assert time.monotonic() - started < 1.2
                assert _names(slow, ids) == "ABCD" and "rerank->fused:rerank_timeout" in slow.fallbacks

                status = await call(nc, "engine.status", EngineStatusRequest())
                for code in ("rerank_unavailable", "rerank_bad_reply", "rerank_timeout"):
                    assert status.fallbacks.get(code) == 1, status.fallbacks
                audit = await pool.fetchval("SELECT count(*) FROM llm_audit_logs WHERE operation = 'rerank'")
                assert audit >= 4  # every call counts in the owner's budget
    finally:
        await embed.stop()


async def test_without_an_llm_the_fused_order_stands_and_says_why(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig
) -> None:
    embed = await ScriptedEmbed({"heron": Q}).start(nc)
    try:
        async with run_services(["retrieve"], config):
            who, ids = await _owner(pool, rerank=True)
            result = await _ask(nc, who)
            assert _names(result, ids) == "ABCD"
            assert result.fallbacks == ["rerank->fused:rerank_no_llm"]
    finally:
        await embed.stop()
