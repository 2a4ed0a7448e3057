"""Embed jobs on real NATS + Postgres (service in-process): vectors written with the signature,
`needs_reindex` cleared, deleted / foreign / changed memories handled, redelivery harmless."""

from __future__ import annotations

import uuid

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.schemas import EmbedJob
from services.embed.adapters import LocalEmbedder
from shared.bus.provision import ensure_streams
from shared.db import memories
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .helpers import (
    SIG,
    add_memories,
    cosine,
    embedded_count,
    job_of,
    publish,
    queue_drained,
    sample,
    vectors_of,
)

TEXTS = [
    f"Memory {i}: I prefer {w} for {t}."
    for i, (w, t) in enumerate(
        [("green tea", "breakfast"), ("Rust", "systems work"), ("trains", "long trips"), ("jazz", "focus")] * 6
    )
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder.default()


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_EMBED_BATCH_MAX", "8")


async def test_jobs_flow_to_vectors(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, embedder: LocalEmbedder
) -> None:
    alice = await add_memories(pool, "alice", TEXTS[:16])
    bob = await add_memories(pool, "bob", TEXTS[16:])
    everyone = alice + bob
    ids = [m.id for m in everyone]
    async with run_services(["embed"], config):
        js = nc.jetstream()
        await publish(js, [job_of(m) for m in everyone])
        await eventually(lambda: _all(pool, ids), what="all memories embedded")
        await eventually(lambda: queue_drained(js), what="every job acked")
    stored = await vectors_of(pool, ids)
    assert sorted(stored) == sorted(ids)
    expected = embedder.embed([m.content for m in everyone])
    for i, m in enumerate(everyone):
        assert stored[m.id].shape == (384,)
        assert abs(float(np.linalg.norm(stored[m.id])) - 1.0) < 1e-5
        assert cosine(stored[m.id], expected[i]) > 0.9999
    owners = {
        str(r["memory_id"]): r["owner"] for r in await pool.fetch("SELECT memory_id, owner FROM memory_embeddings")
    }
    assert {owners[m.id] for m in alice} == {"alice"} and {owners[m.id] for m in bob} == {"bob"}
    meta = await pool.fetchrow("SELECT * FROM memory_vec_meta WHERE store = 'pgvector'")
    assert meta["embedding_signature"] == SIG and meta["active_dim"] == 384 and meta["pending_signature"] is None
    assert meta["details"]["source"] == "local"
    assert meta["details"]["resolution"] == "source=local"


async def _all(pool: asyncpg.Pool, ids: list[str]) -> bool:
    return await embedded_count(pool, ids) == len(ids)


async def test_deleted_foreign_changed_and_repeated_jobs(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, embedder: LocalEmbedder
) -> None:
    kept, doomed, edited = await add_memories(
        pool, "carol", ["Carol keeps bees.", "Carol had a red car.", "Carol lives in Oslo."]
    )
    async with pool.acquire() as conn:
        await memories.delete(conn, "carol", [doomed.id])
    await pool.execute(
        "UPDATE memories SET content = $2, content_hash = $3 WHERE id = $1",
        uuid.UUID(edited.id),
        "Carol moved to Bergen.",
        memories.content_hash("Carol moved to Bergen."),
    )
    never = EmbedJob(memory_id=str(uuid.uuid4()), owner="carol", content_hash="0" * 64)
    foreign = EmbedJob(memory_id=kept.id, owner="mallory", content_hash=kept.content_hash)
    deleted_before = sample("memoryd_embed_skipped_total", {"reason": "deleted"})
    async with run_services(["embed"], config):
        js = nc.jetstream()
        await publish(js, [job_of(kept), job_of(doomed), job_of(edited), never, foreign])
        await eventually(lambda: queue_drained(js), what="every job acked")
        await eventually(lambda: _all(pool, [kept.id, edited.id]), what="kept and edited embedded")
        deleted = sample("memoryd_embed_skipped_total", {"reason": "deleted"}) - deleted_before
        assert deleted == 3  # the deleted memory, a memory that never existed, another owner's id
        # Redelivery of an already written job: acked, nothing written again.
        unchanged_before = sample("memoryd_embed_skipped_total", {"reason": "unchanged"})
        before = await pool.fetchval(
            "SELECT max(created_at) FROM memory_embeddings WHERE memory_id = $1", uuid.UUID(kept.id)
        )
        await publish(js, [job_of(kept, "reindex")])
        await eventually(
            lambda: _greater(sample("memoryd_embed_skipped_total", {"reason": "unchanged"}), unchanged_before),
            what="the repeated job skipped",
        )
        await eventually(lambda: queue_drained(js), what="repeat acked")
    after = await pool.fetchval(
        "SELECT max(created_at) FROM memory_embeddings WHERE memory_id = $1", uuid.UUID(kept.id)
    )
    assert after == before
    stored = await vectors_of(pool, [kept.id, doomed.id, edited.id])
    assert sorted(stored) == sorted([kept.id, edited.id])
    # The job carried the old content's hash: the current content was embedded.
    assert cosine(stored[edited.id], embedder.embed(["Carol moved to Bergen."])[0]) > 0.9999
    row = await memories.get(pool, "carol", edited.id)
    assert row is not None and not row.needs_reindex and row.embedding_signature == SIG
    assert await pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE owner = 'mallory'") == 0


async def _greater(value: float, than: float) -> bool:
    return value > than


async def test_a_job_batch_is_written_at_once_and_embedded_in_calls_of_batch_max(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """24 queued jobs, ``job_batch_max`` 64, ``batch_max`` 4: one pull takes them all and one write
    statement stores their vectors (its ``now()`` is every row's ``created_at``), while no inference
    call holds more than 4 texts; the vectors are the model's own."""
    monkeypatch.setenv("MEMORYD_EMBED_BATCH_MAX", "4")
    monkeypatch.setenv("MEMORYD_EMBED_JOB_BATCH_MAX", "64")
    monkeypatch.setenv("MEMORYD_EMBED_BATCH_WAIT_MS", "200")
    texts = [f"{t} (note {i}{' and a longer tail of words' * (i % 3)})" for i, t in enumerate(TEXTS)]
    dave = await add_memories(pool, "dave-batch", texts)
    ids = [m.id for m in dave]
    js = nc.jetstream()
    await ensure_streams(js, config.nats)
    await publish(js, [job_of(m) for m in dave])  # queued before the worker starts: one pull sees them all
    calls_before = sample("memoryd_embed_batch_texts_count")
    small_before = sample("memoryd_embed_batch_texts_bucket", {"le": "4.0"})
    async with run_services(["embed"], config):
        await eventually(lambda: _all(pool, ids), what="all memories embedded")
        await eventually(lambda: queue_drained(js), what="every job acked")
    calls = sample("memoryd_embed_batch_texts_count") - calls_before
    assert calls >= len(ids) / 4  # cut into calls of at most batch_max ...
    assert sample("memoryd_embed_batch_texts_bucket", {"le": "4.0"}) - small_before == calls  # ... every one
    writes = await pool.fetchval(
        "SELECT count(DISTINCT created_at) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])",
        [uuid.UUID(i) for i in ids],
    )
    assert writes == 1
    stored = await vectors_of(pool, ids)
    expected = embedder.embed(texts)
    assert min(cosine(stored[m.id], expected[i]) for i, m in enumerate(dave)) > 0.9999
