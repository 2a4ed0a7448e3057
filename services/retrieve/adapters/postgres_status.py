"""Postgres reads of ``engine.status`` and of the store follower: memories waiting for a vector,
how far a reindex has come, and the bookkeeping of an attached Qdrant."""

from __future__ import annotations

from typing import Any

import asyncpg


async def pending_reindex(pool: asyncpg.Pool, owner: str | None) -> int:
    """Memories flagged ``needs_reindex`` (one owner's, or everyone's)."""
    if owner is None:
        return int(await pool.fetchval("SELECT count(*) FROM memories WHERE needs_reindex"))
    return int(await pool.fetchval("SELECT count(*) FROM memories WHERE needs_reindex AND owner = $1", owner))


async def reindex_progress(pool: asyncpg.Pool, signature: str) -> tuple[int, int]:
    """``(done, total)``: memories with a current vector of ``signature``, of all memories."""
    row = await pool.fetchrow(
        "SELECT count(*) FILTER (WHERE embedding_signature = $1 AND NOT needs_reindex) AS done, count(*) AS total"
        " FROM memories",
        signature,
    )
    assert row is not None
    return int(row["done"]), int(row["total"])


async def qdrant_details(pool: asyncpg.Pool) -> dict[str, Any] | None:
    """The ``details`` of the Qdrant row of ``memory_vec_meta`` (None before the embed service wrote it)."""
    details = await pool.fetchval("SELECT details FROM memory_vec_meta WHERE store = 'qdrant'")
    return None if details is None else dict(details)
