"""Migrations and runtime settings on a real PostgreSQL with pgvector."""

from __future__ import annotations

import uuid

import asyncpg
import numpy as np
import pytest

from memoryd.errors import ValidationFailed
from shared.db.migrate import migrate, migration_files
from shared.settings.store import effective_settings, put_values, read_values

TABLES = {
    "memories",
    "memory_embeddings",
    "turn_hashes",
    "events",
    "settings",
    "memory_vec_meta",
    "dream_runs",
    "conflict_reviewed",
    "differentiated_pairs",
    "conflict_pending",
    "entities",
    "entity_relations",
    "entity_mentions",
    "content_history",
    "llm_audit_logs",
    "schema_migrations",
}


async def test_schema_is_complete_and_migrations_idempotent(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        assert await migrate(conn) == []  # the fixture applied everything already
        assert await migrate(conn) == []
        versions = [r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations ORDER BY 1")]
        tables = {r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
    assert versions == [v for v, _ in migration_files()]
    assert tables >= TABLES


async def test_tsv_is_generated_and_searchable(pool: asyncpg.Pool) -> None:
    mid = uuid.uuid4()
    await pool.execute(
        "INSERT INTO memories (id, owner, type, content, source, content_hash) VALUES ($1,'o1','factual',$2,'api','h')",
        mid,
        "User prefers TypeScript for frontend projects",
    )
    hit = await pool.fetchval(
        "SELECT id FROM memories WHERE owner='o1' AND tsv @@ websearch_to_tsquery('english', $1)", "typescript project"
    )
    assert hit == mid


async def test_owner_key_is_unique_and_vectors_roundtrip(pool: asyncpg.Pool) -> None:
    a = uuid.uuid4()
    await pool.execute(
        "INSERT INTO memories (id, owner, type, key, content, source, content_hash) "
        "VALUES ($1,'o2','factual','preference:go','likes Go','rule','h')",
        a,
    )
    with pytest.raises(asyncpg.UniqueViolationError):
        await pool.execute(
            "INSERT INTO memories (id, owner, type, key, content, source, content_hash) "
            "VALUES ($1,'o2','factual','preference:go','x','rule','h')",
            uuid.uuid4(),
        )
    # the same key for another owner is fine
    await pool.execute(
        "INSERT INTO memories (id, owner, type, key, content, source, content_hash) "
        "VALUES ($1,'o3','factual','preference:go','x','rule','h')",
        uuid.uuid4(),
    )
    vec = np.linspace(-1, 1, 384, dtype=np.float32)
    await pool.execute(
        "INSERT INTO memory_embeddings (memory_id, signature, owner, dim, embedding) VALUES ($1,'s','o2',384,$2)",
        a,
        vec,
    )
    got = await pool.fetchval("SELECT embedding FROM memory_embeddings WHERE memory_id=$1", a)
    assert np.allclose(got.to_numpy(), vec)
    await pool.execute("DELETE FROM memories WHERE id=$1", a)
    assert await pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE memory_id=$1", a) == 0


async def test_settings_global_then_owner_override(pool: asyncpg.Pool) -> None:
    base = await effective_settings(pool, "alice")
    assert base.enabled is True and base.strategy == "hybrid" and base.max_tokens == 2000
    await put_values(pool, None, {"maxTokens": 1000, "strategy": "semantic"})
    await put_values(pool, "alice", {"maxTokens": 500})
    alice = await effective_settings(pool, "alice")
    bob = await effective_settings(pool, "bob")
    assert (alice.max_tokens, alice.strategy) == (500, "semantic")
    assert (bob.max_tokens, bob.strategy) == (1000, "semantic")
    assert await read_values(pool, "alice") == {"maxTokens": 500}


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"maxTokens": 99999}, "maxTokens"),
        ({"strategy": "magic"}, "strategy"),
        ({"bogus": 1}, "bogus"),
        ({"retentionDays": 0}, "retentionDays"),
    ],
)
async def test_bad_settings_rejected_and_nothing_written(pool: asyncpg.Pool, values: dict, field: str) -> None:
    before = await read_values(pool, "carol")
    with pytest.raises(ValidationFailed, match=field):
        await put_values(pool, "carol", values)
    assert await read_values(pool, "carol") == before


async def test_fulltext_indexes_keep_a_small_pending_list(pool: asyncpg.Pool) -> None:
    """Touches are never HOT updates, so a large GIN pending list would slow every keyword search."""
    options = {
        r["relname"]: r["reloptions"]
        for r in await pool.fetch(
            "SELECT relname, reloptions FROM pg_class WHERE relname IN ('memories_tsv', 'memories_owner_tsv')"
        )
    }
    assert options == {
        "memories_tsv": ["gin_pending_list_limit=64"],
        "memories_owner_tsv": ["gin_pending_list_limit=64"],
    }
