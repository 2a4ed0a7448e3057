"""The SQL of archival demotion: cold memories read in keyset batches, then locked, re-checked
and demoted in one transaction.

The owner's own memories only (imported ones stay as they came); every statement names the owner.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import asyncpg

from services.sleep.logic.demotion import DemotionCandidate, SummaryDemotion
from shared.db.memories import Conn, content_hash

_COLD = "coalesce(last_accessed_at, created_at)"
_SELECT = f"""
SELECT id, state, last_accessed_at, created_at, content, scope, {_COLD} AS cold_since FROM memories
WHERE owner = $1 AND state IN ('active', 'summary') AND source <> 'import' AND {_COLD} <= $2
  AND ({_COLD}, id) > ($3::timestamptz, $4::uuid)
ORDER BY {_COLD}, id LIMIT $5
"""
Cursor = tuple[datetime, uuid.UUID]
START: Cursor = (datetime(1, 1, 1, tzinfo=UTC), uuid.UUID(int=0))


async def cold_batch(
    conn: Conn, owner: str, cold_before: datetime, after: Cursor, limit: int
) -> tuple[list[DemotionCandidate], Cursor]:
    """The next ``limit`` memories not accessed since ``cold_before``, oldest access first, and
    the cursor after them."""
    rows = await conn.fetch(_SELECT, owner, cold_before, after[0], after[1], limit)
    candidates = [
        DemotionCandidate(
            id=str(r["id"]),
            state=r["state"],
            last_accessed_at=r["last_accessed_at"],
            created_at=r["created_at"],
            content=r["content"],
            scope=r["scope"],
        )
        for r in rows
    ]
    return candidates, ((rows[-1]["cold_since"], rows[-1]["id"]) if rows else after)


async def lock_own(conn: asyncpg.Connection, owner: str, ids: Sequence[str]) -> dict[str, asyncpg.Record]:
    """Lock the owner's non-global memories among ``ids``; by id (``state``, ``last_accessed_at``)."""
    rows = await conn.fetch(
        "SELECT id, state, scope, last_accessed_at FROM memories WHERE owner = $1 AND id = ANY($2::uuid[])"
        " ORDER BY id FOR UPDATE",
        owner,
        [uuid.UUID(i) for i in ids],
    )
    return {str(r["id"]): r for r in rows if r["scope"] != "global"}


async def summarize(conn: asyncpg.Connection, owner: str, plans: Sequence[SummaryDemotion]) -> None:
    """Active memories -> ``summary``, the original kept in ``full_content`` (restorable)."""
    await conn.execute(
        "UPDATE memories m SET state = 'summary', content = u.short_text, full_content = u.original,"
        " content_hash = u.hash, updated_at = now()"
        " FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[]) AS u(id, short_text, original, hash)"
        " WHERE m.owner = $1 AND m.id = u.id AND m.state = 'active'",
        owner,
        [uuid.UUID(s.id) for s in plans],
        [s.summary for s in plans],
        [s.full_content for s in plans],
        [content_hash(s.summary) for s in plans],
    )


async def archive(conn: asyncpg.Connection, owner: str, ids: Sequence[str]) -> None:
    await conn.execute(
        "UPDATE memories SET state = 'archived', updated_at = now() WHERE owner = $1 AND id = ANY($2::uuid[])",
        owner,
        [uuid.UUID(i) for i in ids],
    )
