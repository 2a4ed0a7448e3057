"""Search keeps serving vectors while a reindex runs, and says so.

``vectorQuantization=half`` is put at run time and the reindex is run for one owner only, so the
change cannot complete: meanwhile a semantic search of the other owner finds a paraphrased memory
that full-text search misses (the old, full-precision vectors serve), a memory added during the
change is found the same way (its batch writes the old signature too), as is one edited after its
reindex job was queued, and ``engine.status`` and
the retrieve health check say "reindexing, n of N, searching the old vectors". Once every owner is
reindexed, the half signature is active, the old vectors are gone, and search serves the new ones.
"""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult, HealthRequest, ReindexRequest
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult, RetrieveRequest, RetrieveResult
from shared.db.memories import content_hash
from shared.settings.cache import announce_change
from shared.settings.env import ServiceConfig
from shared.settings.store import put_values
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .helpers import SIG, add_memories, embedded_count, job_of, publish

SIG_HALF = f"{SIG}:half"
HERONS = "Ida watched grey herons fishing at the lake on Sunday."
TOPICS = ["tulips", "violins", "sourdough", "glaciers", "kayaks"]
IDA = [HERONS, *(f"Ida's note {i}: she has been reading about {t}." for i, t in enumerate(TOPICS))]
OTTO = [f"Otto's reminder {i}: renew the {t} subscription." for i, t in enumerate(["chess", "jazz", "opera"])]
#: shares no word with HERONS (nor with Ida's other notes) after stemming
PARAPHRASE = "which wading birds did she spot?"
KITTEN = "Ida adopted a tabby kitten called Miso."
KITTEN_QUERY = "a young cat as a new pet"
ORCHARD = "Ida planted a row of apple trees in her orchard."
ORCHARD_QUERY = "growing fruit in the garden"


async def test_search_serves_the_old_vectors_until_the_reindex_completes(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_EMBED_META_POLL_S", "0.2")
    monkeypatch.setenv("MEMORYD_EMBED_RETIRE_GRACE_S", "0")
    monkeypatch.setenv("MEMORYD_RETRIEVE_META_TTL_S", "0.3")
    ida, otto = await add_memories(pool, "ida", IDA), await add_memories(pool, "otto", OTTO)
    js = nc.jetstream()
    async with run_services(["embed", "retrieve"], config):
        await publish(js, [job_of(m) for m in ida + otto])
        await eventually(lambda: _embedded(pool, ida + otto, SIG), what="full-precision vectors")

        await put_values(pool, None, {"vectorQuantization": "half"})
        await announce_change(nc, None)
        await eventually(lambda: _pending(nc), timeout=30, what="the change to halfvec pending")
        await call(nc, "reindex", ReindexRequest(owner="otto"))  # Ida's memories keep only their old vectors
        await eventually(lambda: _embedded(pool, otto, SIG_HALF), what="Otto's memories reindexed")

        keyword = await _ask(nc, PARAPHRASE, "hybrid")
        assert [t.hits for t in keyword.tiers if t.tier == "keyword"] == [0]  # full text misses it
        found = await _ask(nc, PARAPHRASE, "semantic")
        assert found.memories[0].content == HERONS
        assert _served_by_vectors(found)

        status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest())
        total = len(IDA) + len(OTTO)
        detail = f"reindexing to {SIG_HALF}, {len(OTTO)} of {total}, searching the old vectors ({SIG})"
        assert status.vector_stores["pgvector"]["reindex"] == {
            "from": SIG,
            "to": SIG_HALF,
            "done": len(OTTO),
            "total": total,
            "searching": "old",
            "detail": detail,
        }
        assert status.embedding["reindex"] == {"pgvector": detail}
        health = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.retrieve")
        assert health.checks["vector_pgvector"].startswith("ok ") and detail in health.checks["vector_pgvector"]

        # a memory added during the change is searched too: its batch writes the old signature as well
        (kitten,) = await add_memories(pool, "ida", [KITTEN])
        await publish(js, [job_of(kitten)])
        await eventually(lambda: _embedded(pool, [kitten], SIG_HALF), what="the new memory embedded")
        assert await _vector_count(pool, [kitten], SIG) == 1
        found = await _ask(nc, KITTEN_QUERY, "semantic")
        assert found.memories[0].content == KITTEN and _served_by_vectors(found)

        # an edit whose reindex job (queued before it, with the old text's hash) runs first
        kayaks = ida[-1]
        await pool.execute(
            "UPDATE memories SET content = $2, content_hash = $3, needs_reindex = true WHERE id = $1",
            uuid.UUID(kayaks.id),
            ORCHARD,
            content_hash(ORCHARD),
        )
        await publish(js, [job_of(kayaks, "reindex")])
        await eventually(lambda: _embedded(pool, [kayaks], SIG_HALF), what="the edited memory re-embedded")
        found = await _ask(nc, ORCHARD_QUERY, "semantic")
        assert found.memories[0].content == ORCHARD and _served_by_vectors(found)

        await call(nc, "reindex", ReindexRequest())
        await eventually(lambda: _active(nc, SIG_HALF), timeout=60, what="the half signature active")
        everyone = [*ida, *otto, kitten]
        await eventually(lambda: _no_vectors(pool, SIG), what="the old vectors retired")
        query: EmbedResult = await call(nc, "embed", EmbedRequest(texts=[PARAPHRASE]))
        assert query.signature == SIG_HALF
        assert await _vector_count(pool, everyone, SIG_HALF) == len(everyone)
        found = await _ask(nc, PARAPHRASE, "semantic")
        assert found.memories[0].content == HERONS and _served_by_vectors(found)
        status = await call(nc, "engine.status", EngineStatusRequest())
        assert "reindex" not in status.vector_stores["pgvector"] and "reindex" not in status.embedding
        health = await call(nc, HEALTH_OP, HealthRequest(), subject="mem.v1.rpc.health.retrieve")
        assert health.checks["vector_pgvector"] == f"ok {len(everyone)} vectors ({SIG_HALF})"


async def _embedded(pool: asyncpg.Pool, mems: list, sig: str) -> bool:  # type: ignore[type-arg]
    return await embedded_count(pool, [m.id for m in mems], sig) == len(mems)


async def _vector_count(pool: asyncpg.Pool, mems: list, sig: str) -> int:  # type: ignore[type-arg]
    return int(
        await pool.fetchval(
            "SELECT count(*) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[]) AND signature = $2",
            [m.id for m in mems],
            sig,
        )
    )


async def _no_vectors(pool: asyncpg.Pool, sig: str) -> bool:
    return await pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE signature = $1", sig) == 0


async def _pending(nc: Client) -> bool:
    status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest())
    return bool(status.embedding["stores"]["pgvector"] == {"signature": SIG, "dim": 384, "pending_signature": SIG_HALF})


async def _active(nc: Client, sig: str) -> bool:
    status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest())
    return bool(status.embedding["stores"]["pgvector"] == {"signature": sig, "dim": 384, "pending_signature": None})


async def _ask(nc: Client, query: str, strategy: str) -> RetrieveResult:
    req = RetrieveRequest(owner="ida", query=query, strategy=strategy, limit=3)  # type: ignore[arg-type]
    return await call(nc, "retrieve", req)


def _served_by_vectors(result: RetrieveResult) -> bool:
    return not result.fallbacks and any(t.tier == "pgvector" and t.served and t.hits for t in result.tiers)
