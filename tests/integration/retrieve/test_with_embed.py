"""Retrieve with the real embed service in-process (local MiniLM): vectors written by embed jobs,
the query embedded over the embed RPC, the active signature taken from ``memory_vec_meta``."""

from __future__ import annotations

import asyncio

import asyncpg
from nats.aio.client import Client

from memoryd.codec import encode
from memoryd.rpc import call
from memoryd.schemas import EmbedJob
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from memoryd.subjects import EMBED_JOBS
from shared.db import memories
from shared.settings.env import ServiceConfig
from tests.support.stack import run_services

from .conftest import owner

TEXTS = [
    "I love hiking mountain trails on weekends",
    "The quarterly invoice is due on Friday",
    "My favourite programming language is Rust",
    "We adopted Kubernetes for the deployment",
]


async def test_semantic_and_hybrid_through_the_embed_service(
    pool: asyncpg.Pool, nc: Client, config: ServiceConfig
) -> None:
    who = owner()
    async with run_services(["embed", "retrieve"], config):
        js = nc.jetstream()
        ids = []
        for text in TEXTS:
            record = await memories.insert(pool, owner=who, memory_type="factual", content=text, source="api")
            ids.append(record.id)
            job = EmbedJob(memory_id=record.id, owner=who, content_hash=record.content_hash)
            await js.publish(EMBED_JOBS, encode(job))
        for _ in range(600):  # embedding is asynchronous: poll
            pending = await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1 AND needs_reindex", who)
            if pending == 0:
                break
            await asyncio.sleep(0.05)
        assert pending == 0
        sem: RetrieveResult = await call(
            nc, "retrieve", RetrieveRequest(owner=who, query="walking outdoors in nature", strategy="semantic")
        )
        hyb: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(owner=who, query="which language do I like?"))
        status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=who))
    assert sem.memories[0].id == ids[0] and sem.memories[0].tier == "pgvector" and sem.fallbacks == []
    assert sem.memories[0].vec_score is not None and sem.memories[0].vec_score > sem.memories[1].vec_score  # type: ignore[operator]
    assert hyb.fallbacks == [] and hyb.memories[0].id == ids[2]
    assert {(t.tier, t.served) for t in hyb.tiers} == {("keyword", True), ("pgvector", True)}
    signature = status.embedding["stores"]["pgvector"]["signature"]
    assert signature.startswith("local:") and status.embedding["probe"]["signature"] == signature
    assert status.vector_stores["pgvector"]["vectors"] >= len(TEXTS) and status.pending_reindex == 0
    assert "embed" in status.lag
