"""Memories written straight into PostgreSQL for the keyword-tier tests (one COPY, oldest first)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg

from shared.db.memories import content_hash


async def seed_texts(pool: asyncpg.Pool, owner: str, texts: list[str]) -> dict[str, str]:
    """One ``api`` memory per text, a minute apart in the given order; returns text -> memory id
    (a repeated text keeps its last id)."""
    now = datetime.now(UTC)
    records, ids = [], {}
    for i, text in enumerate(texts):
        mid = uuid.uuid4()
        ids[text] = str(mid)
        created = now - timedelta(minutes=len(texts) - i)
        records.append((mid, owner, "episodic", text, "api", created, created, content_hash(text)))
    async with pool.acquire() as conn:
        await conn.copy_records_to_table(
            "memories",
            records=records,
            columns=["id", "owner", "type", "content", "source", "created_at", "updated_at", "content_hash"],
        )
    return ids
