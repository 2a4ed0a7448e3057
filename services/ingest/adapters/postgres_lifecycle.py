"""Postgres queries of the lifecycle RPCs: restore, the compaction candidates and their
archiving, and what retention ``cleanup`` removes.

Global-scope memories are never candidates; values only ever travel as bind parameters.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import asyncpg

from memoryd.schemas.memory import MemoryRecord
from services.ingest.logic.lifecycle import Candidate
from shared.db import memories

_CANDIDATES = """
SELECT id, owner, session_id, type, content, agent_id FROM memories
WHERE state = 'active' AND scope <> 'global' AND type <> 'summary' AND created_at < $1
  AND ($2::text IS NULL OR owner = $2) AND ($3::text IS NULL OR session_id = $3)
ORDER BY owner, session_id NULLS FIRST, created_at, id
LIMIT $4
"""


async def restore(conn: asyncpg.Connection, owner: str, memory_id: str, original: str) -> MemoryRecord:
    """Put ``original`` back as the active content, flagged for re-embedding."""
    row = await conn.fetchrow(
        f"UPDATE memories SET content = $3, full_content = NULL, state = 'active', content_hash = $4,"
        f" needs_reindex = true, updated_at = now(), metadata = metadata - 'summary_id'"
        f" WHERE owner = $1 AND id = $2 RETURNING {memories.COLUMNS}",
        owner,
        uuid.UUID(memory_id),
        original,
        memories.content_hash(original),
    )
    assert row is not None  # the caller read the row in this transaction
    return memories.to_record(row)


async def summarize_candidates(
    pool: asyncpg.Pool, created_before: datetime, owner: str | None, session_id: str | None, limit: int
) -> list[Candidate]:
    rows = await pool.fetch(_CANDIDATES, created_before, owner, session_id, limit)
    return [Candidate(str(r["id"]), r["owner"], r["session_id"], r["type"], r["content"], r["agent_id"]) for r in rows]


async def archive_into_summary(conn: asyncpg.Connection, owner: str, member_ids: list[str], summary_id: str) -> None:
    """Archive the summarized memories (restorable: ``full_content`` keeps the original)."""
    await conn.execute(
        "UPDATE memories SET state = 'archived', full_content = coalesce(full_content, content),"
        " metadata = metadata || jsonb_build_object('summary_id', $3::text), updated_at = now()"
        " WHERE owner = $1 AND id = ANY($2::uuid[]) AND state = 'active'",
        owner,
        [uuid.UUID(i) for i in member_ids],
        summary_id,
    )


async def expired(pool: asyncpg.Pool, now: datetime, owner: str | None) -> list[tuple[str, str]]:
    """``(owner, id)`` of the memories past their ``expires_at``."""
    rows = await pool.fetch(
        "SELECT id, owner FROM memories WHERE scope <> 'global' AND expires_at IS NOT NULL AND expires_at <= $1"
        " AND ($2::text IS NULL OR owner = $2) ORDER BY owner, id",
        now,
        owner,
    )
    return [(r["owner"], str(r["id"])) for r in rows]


async def owners(pool: asyncpg.Pool) -> list[str]:
    """Every owner with a memory of its own."""
    return [r["owner"] for r in await pool.fetch("SELECT DISTINCT owner FROM memories WHERE scope <> 'global'")]


async def past_retention(pool: asyncpg.Pool, owner: str, created_before: datetime, now: datetime) -> list[str]:
    """Ids of the owner's memories created before the retention cutoff (and not already expired)."""
    rows = await pool.fetch(
        "SELECT id FROM memories WHERE owner = $1 AND scope <> 'global' AND created_at < $2"
        " AND (expires_at IS NULL OR expires_at > $3) ORDER BY id",
        owner,
        created_before,
        now,
    )
    return [str(r["id"]) for r in rows]


async def vector_count(pool: asyncpg.Pool, memory_ids: list[str]) -> int:
    """pgvector rows of these memories (every signature)."""
    count = await pool.fetchval(
        "SELECT count(*) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])", [uuid.UUID(i) for i in memory_ids]
    )
    return int(count or 0)
