"""Engine settings changed through ``settings.put`` are applied by the running embed and
retrieve services within a second, without a restart:

- ``vectorStore`` pgvector -> qdrant: the embed worker attaches Qdrant (``engine.status``
  shows it pending, retrieval says ``reindex_in_progress`` and pgvector serves), a reindex
  fills it and Qdrant serves; back to pgvector: Qdrant is no longer searched, its collection
  is dropped; attached again, it starts afresh instead of serving stale vectors;
- ``embeddingModel`` m1 -> m2: a signature change starts (pending in ``engine.status``),
  queries keep the active signature until the reindex switches it;
- a row the embed worker cannot run is refused: it keeps running, its health says why.

The remote embedder is the scripted OpenAI-compatible server; Qdrant is qdrant-client's
local mode (``:memory:``, shared by the in-process services and this test).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.ops import (
    EngineStatusRequest,
    EngineStatusResult,
    HealthRequest,
    ReindexRequest,
    SettingsPutRequest,
)
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult, RetrieveRequest, RetrieveResult
from shared.settings.cache import announce_change
from shared.settings.store import put_values
from shared.vectors.registry import open_stores
from tests.support.eventually import eventually
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

from ..embed.helpers import add_memories, embedded_count, job_of, publish

SIG1 = "remote:m1:384:turn1"
SIG2 = "remote:m2:384:turn1"
TEXTS = [f"Gus keeps note {i}: the heron nests by the {w}." for i, w in enumerate(["mill", "weir", "ford", "dam"])]


async def within(seconds: float, check: Callable[[], Awaitable[bool]], what: str) -> float:
    """Poll ``check`` until true; fail after ``seconds``. Returns how long it took."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s: {what}"
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_running_services_follow_engine_settings(
    nats_server: EmbeddedNats, pg_dsn: str, nc: Client, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeLlm(model="m1") as embedder:
        for key, value in {
            "SOURCE": "remote",
            "REMOTE_URL": embedder.base_url,
            "REMOTE_MODEL": "m1",
            "REMOTE_DIM": "384",
            "META_POLL_S": "0.2",
            "RETIRE_GRACE_S": "0",
        }.items():
            monkeypatch.setenv(f"MEMORYD_EMBED_{key}", value)
        monkeypatch.setenv("MEMORYD_RETRIEVE_META_TTL_S", "0.3")  # how soon retrieval sees a completed switch
        cfg = service_config(
            nats_server.url,
            pg_dsn,
            {"MEMORYD_QDRANT_URL": ":memory:", "MEMORYD_QDRANT_COLLECTION": f"t{uuid.uuid4().hex[:8]}"},
        )
        mine = await open_stores(cfg, pool)  # this test's handle on the same in-memory Qdrant
        assert mine.qdrant is not None
        await put_values(pool, None, {"vectorStore": "pgvector"})  # the stack starts without Qdrant
        mems = await add_memories(pool, "gus", TEXTS)
        ids = [m.id for m in mems]
        try:
            async with run_services(["ingest", "embed", "retrieve"], cfg):
                await publish(nc.jetstream(), [job_of(m) for m in mems])
                await eventually(lambda: _all_embedded(pool, ids, SIG1), what="first vectors")
                first = await _ask(nc)
                assert _served(first) == "pgvector" and "qdrant" not in _tried(first)

                # pgvector -> qdrant: attached, pending, not searched before it is filled
                await _put(nc, vectorStore="qdrant")

                async def qdrant_pending() -> bool:
                    store = (await _status(nc)).embedding["stores"].get("qdrant", {})
                    reply = await _ask(nc)
                    return (
                        store.get("pending_signature") == SIG1
                        and "qdrant->pgvector:reindex_in_progress" in reply.fallbacks
                        and _served(reply) == "pgvector"
                    )

                await within(1.0, qdrant_pending, "Qdrant attached and pending")
                assert (await _status(nc)).pending_reindex == len(mems)
                await call(nc, "reindex", ReindexRequest())
                await eventually(lambda: _served_by(nc, "qdrant"), what="Qdrant serving after the reindex")
                assert (await mine.qdrant.status(SIG1)).vectors == len(mems)

                # qdrant -> pgvector: Qdrant is no longer searched, and nothing of ours stays in it
                await _put(nc, vectorStore="pgvector")
                await within(1.0, lambda: _served_by(nc, "pgvector", qdrant_tried=False), "back to pgvector only")
                await within(1.0, lambda: _collection_gone(mine.qdrant, SIG1), "Qdrant collection dropped")

                # m1 -> m2: a signature change starts at once, queries keep m1 until the switch
                await _put(nc, embeddingModel="m2")

                async def model_pending() -> bool:
                    status = await _status(nc)
                    return status.embedding["stores"]["pgvector"]["pending_signature"] == SIG2

                await within(1.0, model_pending, "signature change to m2 pending")
                query: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["heron"]))
                assert query.signature == SIG1 and _served(await _ask(nc)) == "pgvector"
                await call(nc, "reindex", ReindexRequest())
                await eventually(lambda: _all_embedded(pool, ids, SIG2), what="m2 vectors")
                await eventually(lambda: _query_signature(nc, SIG2), what="queries switched to m2")
                await eventually(lambda: _served_by(nc, "pgvector"), what="pgvector serving m2")
                assert embedder.embedding_requests[-1]["model"] == "m2"

                # Qdrant again: it starts afresh (pending, backfilled) instead of serving what it missed
                await _put(nc, vectorStore="qdrant")

                async def afresh() -> bool:
                    store = (await _status(nc)).embedding["stores"].get("qdrant", {})
                    return store.get("pending_signature") == SIG2 and store.get("signature") is None

                await within(1.0, afresh, "Qdrant starts afresh")
                assert "qdrant->pgvector:reindex_in_progress" in (await _ask(nc)).fallbacks

                # a row this worker cannot run (written around the API's check) is refused, said so
                await put_values(pool, None, {"embeddingUrl": None})
                await announce_change(nc, None)

                async def refused() -> bool:
                    health = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.embed")
                    return "engine settings not applied" in health.checks["embedder"] and "embeddingUrl" in str(
                        health.checks["embedder"]
                    )

                await within(1.0, refused, "embed refuses a remote source without a URL")
                assert await _query_signature(nc, SIG2)  # still running what it ran
        finally:
            await mine.close()


async def _put(nc: Client, **values: object) -> None:
    await call(nc, "settings.put", SettingsPutRequest(values=values))


async def _ask(nc: Client) -> RetrieveResult:
    return await call(nc, "retrieve", RetrieveRequest(owner="gus", query="heron nests", strategy="semantic"))


async def _status(nc: Client) -> EngineStatusResult:
    return await call(nc, "engine.status", EngineStatusRequest())


def _served(result: RetrieveResult) -> str:
    return "+".join(t.tier for t in result.tiers if t.served)


def _tried(result: RetrieveResult) -> list[str]:
    return [t.tier for t in result.tiers]


async def _served_by(nc: Client, tier: str, *, qdrant_tried: bool | None = None) -> bool:
    result = await _ask(nc)
    if qdrant_tried is not None and ("qdrant" in _tried(result)) != qdrant_tried:
        return False
    return _served(result) == tier and len(result.memories) == len(TEXTS)


async def _all_embedded(pool: asyncpg.Pool, ids: list[str], sig: str) -> bool:
    return await embedded_count(pool, ids, sig) == len(ids)


async def _collection_gone(store: object, sig: str) -> bool:
    status = await store.status(sig)  # type: ignore[attr-defined]
    return not status.healthy and "does not exist" in status.detail


async def _query_signature(nc: Client, sig: str) -> bool:
    result: EmbedResult = await call(nc, "embed", EmbedRequest(texts=["heron"]))
    return result.signature == sig
