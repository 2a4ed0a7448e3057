"""Postgres queries of the chat-event consumer: the ``events`` record of each event and the
``turn_hashes`` that deduplicate turns per owner and session.

Every query is scoped by ``owner``; values only ever travel as bind parameters.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import asyncpg


async def record_event(
    conn: asyncpg.Connection, event_id: str, owner: str, session_id: str | None, outcome: str, *, opted_out: bool
) -> bool:
    """Record the event; False when it was recorded before (a redelivery or a concurrent delivery,
    which waits on the row). Only a ``stored`` event waits for its follow-ups to be published."""
    recorded = await conn.fetchval(
        "INSERT INTO events (event_id, owner, session_id, outcome, no_memory, published_at)"
        " VALUES ($1, $2, $3, $4, $5, CASE WHEN $4 = 'stored' THEN NULL ELSE now() END)"
        " ON CONFLICT (owner, event_id) DO NOTHING RETURNING true",
        event_id,
        owner,
        session_id,
        outcome,
        opted_out,
    )
    return bool(recorded)


async def insert_turn_hashes(
    conn: asyncpg.Connection,
    owner: str,
    session_key: str,
    event_id: str,
    turns: Sequence[tuple[str, str, uuid.UUID | None]],
) -> set[tuple[str, str]]:
    """Insert ``(role, hash, memory_id)`` of the event's turns; the ``(role, hash)`` that were new."""
    rows = await conn.fetch(
        "INSERT INTO turn_hashes (owner, session_key, role, hash, event_id, memory_id)"
        " SELECT $1, $2, r, h, $3, id FROM unnest($4::text[], $5::text[], $6::uuid[]) AS t(r, h, id)"
        " ORDER BY r, h ON CONFLICT DO NOTHING RETURNING role, hash",
        owner,
        session_key,
        event_id,
        [role for role, _h, _id in turns],
        [digest for _r, digest, _id in turns],
        [memory_id for _r, _h, memory_id in turns],
    )
    return {(r["role"], r["hash"]) for r in rows}


async def event_published(conn: asyncpg.Connection, owner: str, event_id: str) -> bool:
    """Whether a recorded event's follow-ups were published (the row stays locked until commit)."""
    published = await conn.fetchval(
        "SELECT published_at IS NOT NULL FROM events WHERE owner = $1 AND event_id = $2 FOR UPDATE",
        owner,
        event_id,
    )
    return bool(published)


async def event_turns(
    conn: asyncpg.Connection, owner: str, session_key: str, event_id: str
) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    """The turns an event added, by ``(role, hash)``: their memory id and its content hash (None
    when the turn was not stored, or its memory is gone)."""
    rows = await conn.fetch(
        "SELECT th.role, th.hash, th.memory_id, m.content_hash FROM turn_hashes th"
        " LEFT JOIN memories m ON m.id = th.memory_id AND m.owner = th.owner"
        " WHERE th.owner = $1 AND th.session_key = $2 AND th.event_id = $3",
        owner,
        session_key,
        event_id,
    )
    return {(r["role"], r["hash"]): (str(r["memory_id"]) if r["memory_id"] else None, r["content_hash"]) for r in rows}


async def mark_published(conn: asyncpg.Connection, owner: str, event_id: str, turns_stored: int) -> None:
    await conn.execute(
        "UPDATE events SET published_at = now(), turns_stored = $3"
        " WHERE owner = $1 AND event_id = $2 AND published_at IS NULL",
        owner,
        event_id,
        turns_stored,
    )
