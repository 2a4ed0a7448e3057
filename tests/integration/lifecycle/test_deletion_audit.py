"""Deleting a memory after every kind of derived processing leaves nothing of it behind:
not in any table, not in pgvector or Qdrant, not in the DLQ. The receipt says what went where,
and the orphan sweep removes a point an embed wrote back after the row was gone."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client
from qdrant_client import AsyncQdrantClient

from memoryd.codec import encode
from memoryd.schemas import DeadLetter
from memoryd.subjects import DLQ_STREAM, dlq_subject
from services.ingest.adapters.nats import purge_dead_letters
from services.ingest.adapters.stores import MemoryStores
from shared.bus.provision import ensure_streams
from shared.db import memories
from shared.settings.env import NatsConfig
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorItem
from shared.vectors.qdrant import QdrantStore

SIG = "test:audit:4"
SECRET = "My locker code at the gym is 4471-zebra"


@pytest.fixture
async def qdrant() -> AsyncIterator[QdrantStore]:
    client = AsyncQdrantClient(location=":memory:")
    yield QdrantStore(client, f"audit{uuid.uuid4().hex[:6]}")
    await client.close()


async def _vector(pg: PgVectorStore, qdrant: QdrantStore, owner: str, memory_id: str) -> None:
    item = VectorItem(memory_id=memory_id, owner=owner, vector=np.array([1, 0, 0, 0], dtype=np.float32))
    await pg.upsert(SIG, [item])
    await qdrant.upsert(SIG, [item])


async def residues(pool: asyncpg.Pool, needles: list[str]) -> dict[str, int]:
    """Rows of every table whose text form holds any needle."""
    tables = [r["tablename"] for r in await pool.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    found: dict[str, int] = {}
    for table in tables:
        n = await pool.fetchval(
            f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE ANY($1::text[])', [f"%{x}%" for x in needles]
        )
        if n:
            found[table] = int(n)
    return found


async def test_deletion_reaches_every_store_and_everything_derived(
    pool: asyncpg.Pool, nc: Client, qdrant: QdrantStore
) -> None:
    owner = f"o-{uuid.uuid4().hex[:8]}"
    pg = PgVectorStore(pool)
    await pg.ensure(SIG, 4)
    secret = await memories.insert(pool, owner=owner, memory_type="factual", content=SECRET, source="api")
    other = await memories.insert(pool, owner=owner, memory_type="factual", content="I like tea", source="api")
    for rec in (secret, other):
        await _vector(pg, qdrant, owner, rec.id)
    sid, oid = uuid.UUID(secret.id), uuid.UUID(other.id)
    # summarize: both archived under a summary quoting the secret
    summary = await memories.insert(
        pool,
        owner=owner,
        memory_type="summary",
        content=f"Summary: {SECRET}; likes tea",
        source="api",
        metadata={"source_ids": [secret.id, other.id]},
    )
    await pool.execute(
        "UPDATE memories SET state = 'archived', full_content = content,"
        " metadata = metadata || jsonb_build_object('summary_id', $2::text) WHERE id = ANY($1::uuid[])",
        [sid, oid],
        summary.id,
    )
    # sleep: a pattern with the secret as evidence, a differentiated pair, a reviewed pair
    pattern = await memories.insert(
        pool,
        owner=owner,
        memory_type="pattern",
        content=f"Pattern: keeps quoting {SECRET}",
        source="sleep",
        metadata={"evidence": [secret.id]},
    )
    a, b = sorted([sid, oid])
    await pool.execute(
        "INSERT INTO differentiated_pairs (owner, memory_a, memory_b, hash_a, hash_b, distinctions)"
        " VALUES ($1, $2, $3, 'x', 'y', $4)",
        owner,
        a,
        b,
        f"one is about {SECRET}",
    )
    await pool.execute(
        "INSERT INTO conflict_reviewed (owner, memory_a, memory_b, judged_at, outcome)"
        " VALUES ($1, $2, $3, now(), 'keep')",
        owner,
        a,
        b,
    )
    # extraction: an entity only the secret mentions
    entity = uuid.uuid4()
    await pool.execute(
        "INSERT INTO entities (id, owner, name, normalized) VALUES ($1, $2, '4471-zebra', '4471-zebra')", entity, owner
    )
    await pool.execute("INSERT INTO entity_mentions (entity_id, memory_id) VALUES ($1, $2)", entity, sid)
    # an LLM call that failed quoting it, and a dead letter holding it
    await pool.execute(
        "INSERT INTO llm_audit_logs (owner, operation, status, error) VALUES ($1, 'sleep', 'bad_reply', $2)",
        owner,
        f"reply was not JSON: {SECRET[:40]}...",
    )
    js = nc.jetstream()
    await ensure_streams(js, NatsConfig())
    letter = DeadLetter(
        stage="extract",
        subject="mem.v1.jobs.extract",
        error="boom",
        deliveries=5,
        payload=encode({"memory_id": secret.id, "content": SECRET}),
        failed_at=datetime.now(UTC),
    )
    await js.publish(dlq_subject("extract"), encode(letter))

    stores = MemoryStores(pool, [qdrant], pg)
    stores.dead_letters = lambda quotes: purge_dead_letters(js, quotes)
    receipt = await stores.delete(owner, [secret.id])

    assert receipt.rows == 1 and receipt.derived_memories == 2  # the summary and the pattern
    assert receipt.restored_members == 1 and receipt.entities == 1 and receipt.pair_rows == 2
    assert receipt.audit_redacted == 1 and receipt.dlq_messages == 1
    assert receipt.pgvector_vectors == 1 and receipt.qdrant_points == 1 and receipt.pending_points == 0
    needles = [secret.id, summary.id, pattern.id, SECRET[:20], "4471-zebra"]
    assert await residues(pool, needles) == {}
    assert [mid for page in [p async for p in qdrant.point_refs()] for mid, _ in page] == [other.id]
    assert (await js.stream_info(DLQ_STREAM)).state.messages == 0
    # the other member of the deleted summary has its own text back
    back = await memories.get(pool, owner, other.id)
    assert back is not None and (back.state, back.content, back.full_content) == ("active", "I like tea", None)


async def test_the_orphan_sweep_removes_points_without_rows(pool: asyncpg.Pool, qdrant: QdrantStore) -> None:
    owner = f"o-{uuid.uuid4().hex[:8]}"
    pg = PgVectorStore(pool)
    await pg.ensure(SIG, 4)
    kept = await memories.insert(pool, owner=owner, memory_type="factual", content="kept", source="api")
    gone = await memories.insert(pool, owner=owner, memory_type="factual", content="gone", source="api")
    await _vector(pg, qdrant, owner, kept.id)
    stores = MemoryStores(pool, [qdrant], pg)
    receipt = await stores.delete(owner, [gone.id])
    assert receipt.rows == 1
    # an embed batch that read the row before the delete writes its point afterwards
    item = VectorItem(memory_id=gone.id, owner=owner, vector=[0.0, 1.0, 0.0, 0.0])
    await qdrant.upsert(SIG, [item])
    assert await stores.sweep_orphans() == 1
    assert [mid for page in [p async for p in qdrant.point_refs()] for mid, _ in page] == [kept.id]
    assert await stores.sweep_orphans() == 0
