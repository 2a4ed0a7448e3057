"""Postgres queries of the memory API that ``shared.db.memories`` does not already cover:
list with filters, a memory's text history, partial update, clear selection, export pages and
import writes.

Every query is scoped by ``owner``; values only ever travel as bind parameters.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import asyncpg

from memoryd.errors import Forbidden
from memoryd.schemas.memory import MemoryRecord
from services.ingest.logic.chat import GLOBAL_REFUSED, like_pattern, utc
from services.ingest.logic.history import StoredChange
from services.ingest.logic.imports import import_id, record_differs
from shared.db import memories
from shared.db.memories import COLUMNS, content_hash, to_record
from shared.metadata_filter import Filter, to_sql


# --- list ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ListFilter:
    owner: str
    memory_type: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    state: str | None = None
    q: str | None = None
    source: str | None = None
    event_id: str | None = None
    metadata: Filter | None = None


def _where(f: ListFilter) -> tuple[str, list[Any], str | None]:
    """``WHERE`` clause, its arguments and the query's parameter reference (when ``q``)."""
    args: list[Any] = [f.owner]
    clauses = ["owner = $1"]
    for column, value in (
        ("type", f.memory_type),
        ("session_id", f.session_id),
        ("agent_id", f.agent_id),
        ("state", f.state),
        ("source", f.source),
    ):
        if value is not None:
            args.append(value)
            clauses.append(f"{column} = ${len(args)}")
    if f.event_id is not None:
        args.append(f.event_id)
        clauses.append(f"metadata->>'event_id' = ${len(args)}")
    if f.metadata is not None:

        def param(value: Any) -> str:
            args.append(value)
            return f"${len(args)}"

        clauses.append(to_sql(f.metadata, "metadata", param))
    q_ref = None
    if f.q is not None and f.q.strip():
        args += [f.q, like_pattern(f.q)]
        q_ref = f"websearch_to_tsquery('english', ${len(args) - 1})"
        # full-text match, or the text itself anywhere (punctuation-only queries have no lexemes)
        clauses.append(f"(tsv @@ {q_ref} OR content ILIKE ${len(args)})")
    return " AND ".join(clauses), args, q_ref


async def list_memories(
    conn: asyncpg.Connection | asyncpg.Pool, f: ListFilter, limit: int, offset: int
) -> tuple[list[MemoryRecord], int, int]:
    """A page of matching memories, the number matching, and how many of those were ever retrieved."""
    where, args, q_ref = _where(f)
    order = f"ts_rank_cd(tsv, {q_ref}) DESC, created_at DESC, id" if q_ref else "created_at DESC, id"
    counts = await conn.fetchrow(
        f"SELECT count(*) AS n, count(last_accessed_at) AS hits FROM memories WHERE {where}", *args
    )
    assert counts is not None
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM memories WHERE {where} ORDER BY {order} LIMIT ${len(args) + 1} OFFSET ${len(args) + 2}",
        *args,
        limit,
        offset,
    )
    return [to_record(r) for r in rows], int(counts["n"]), int(counts["hits"])


async def event_processed(conn: asyncpg.Connection | asyncpg.Pool, owner: str, event_id: str) -> bool:
    """Whether ingest has recorded and published the event and, when it had new turns, the
    extraction of those turns has committed (``extract_runs``)."""
    done = await conn.fetchval(
        "SELECT e.published_at IS NOT NULL AND ("
        " NOT EXISTS (SELECT 1 FROM turn_hashes t WHERE t.owner = $1 AND t.event_id = $2)"
        " OR EXISTS (SELECT 1 FROM extract_runs x WHERE x.owner = $1 AND x.event_id = $2))"
        " FROM events e WHERE e.owner = $1 AND e.event_id = $2",
        owner,
        event_id,
    )
    return bool(done)


async def content_history(
    conn: asyncpg.Connection | asyncpg.Pool, owner: str, memory_id: str, limit: int
) -> list[StoredChange]:
    """The newest ``limit`` changes of the memory's text, oldest first."""
    rows = await conn.fetch(
        "SELECT old_content, reason, changed_at, run_id FROM ("
        " SELECT id, old_content, reason, changed_at, run_id FROM content_history"
        " WHERE owner = $1 AND memory_id = $2 ORDER BY changed_at DESC, id DESC LIMIT $3"
        ") newest ORDER BY changed_at, id",
        owner,
        uuid.UUID(memory_id),
        limit,
    )
    return [
        StoredChange(
            old_content=r["old_content"],
            reason=r["reason"],
            changed_at=r["changed_at"],
            run_id=None if r["run_id"] is None else str(r["run_id"]),
        )
        for r in rows
    ]


async def memory_stats(conn: asyncpg.Connection | asyncpg.Pool, owner: str) -> list[asyncpg.Record]:
    """Per (type, state, source): the count, the estimated tokens and the newest change."""
    return await conn.fetch(
        "SELECT type, state, source, count(*) AS n, sum(ceil(length(content) / 4.0))::bigint AS tokens,"
        " max(greatest(updated_at, last_accessed_at)) AS last_at"
        " FROM memories WHERE owner = $1 GROUP BY type, state, source",
        owner,
    )


# --- update ----------------------------------------------------------------------------------
async def update_memory(
    conn: asyncpg.Connection,
    owner: str,
    memory_id: str,
    *,
    content: str | None,
    memory_type: str | None,
    metadata: dict[str, Any] | None,
    expires_at: datetime | None,
    session_id: str | None,
    operator: bool = False,
) -> tuple[MemoryRecord, bool] | None:
    """Change the given fields; ``(record, reembed)`` or None when absent.

    A content change keeps the old text in ``content_history``, sets ``needs_reindex``
    and makes a demoted memory active again. A global memory changes only for an ``operator``.
    ``reembed``: the text the memory is embedded as changed, its content or (a chat turn whose
    text or speaker changed) the context head the database derives (``shared.turn_context``).
    """
    async with conn.transaction():
        current = await conn.fetchrow(
            "SELECT content, content_hash, scope, context FROM memories WHERE owner = $1 AND id = $2 FOR UPDATE",
            owner,
            uuid.UUID(memory_id),
        )
        if current is None:
            return None
        if current["scope"] == "global" and not operator:
            raise Forbidden(f"memory {memory_id} is global: {GLOBAL_REFUSED}")
        digest = content_hash(content) if content is not None else None
        changed = digest is not None and digest != current["content_hash"]
        if changed:
            await conn.execute(
                "INSERT INTO content_history (memory_id, owner, old_content, reason) VALUES ($1, $2, $3, 'api_update')",
                uuid.UUID(memory_id),
                owner,
                current["content"],
            )
        row = await conn.fetchrow(
            f"""
            UPDATE memories SET
                content = coalesce($3, content),
                content_hash = coalesce($4, content_hash),
                type = coalesce($5, type),
                metadata = coalesce($6::jsonb, metadata),
                expires_at = coalesce($7, expires_at),
                session_id = coalesce($8, session_id),
                needs_reindex = needs_reindex OR $9,
                state = CASE WHEN $9 THEN 'active' ELSE state END,
                full_content = CASE WHEN $9 THEN NULL ELSE full_content END,
                updated_at = now()
            WHERE owner = $1 AND id = $2
            RETURNING {COLUMNS}, context
            """,
            owner,
            uuid.UUID(memory_id),
            content,
            digest,
            memory_type,
            metadata,
            expires_at,
            session_id,
            changed,
        )
    assert row is not None
    return to_record(row), changed or row["context"] != current["context"]


# --- clear / export --------------------------------------------------------------------------
async def ids_to_clear(
    conn: asyncpg.Connection,
    owner: str,
    memory_type: str | None,
    older_than_days: int | None,
    agent_id: str | None = None,
) -> list[uuid.UUID]:
    """The owner's memories ``memory.clear`` removes (of one agent, when given): never a global
    one (only the operator's ``admin.memory.delete`` removes those)."""
    rows = await conn.fetch(
        "SELECT id FROM memories WHERE owner = $1 AND scope <> 'global' AND ($2::text IS NULL OR type = $2)"
        " AND ($3::int IS NULL OR created_at < now() - make_interval(days => $3::int))"
        " AND ($4::text IS NULL OR agent_id = $4)",
        owner,
        memory_type,
        older_than_days,
        agent_id,
    )
    return [r["id"] for r in rows]


async def export_page(
    conn: asyncpg.Connection | asyncpg.Pool, owner: str, include_archived: bool, after_id: str | None, limit: int
) -> list[MemoryRecord]:
    """Up to ``limit`` of the owner's memories with ids after ``after_id``, in id order."""
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM memories WHERE owner = $1 AND ($2 OR state <> 'archived')"
        " AND ($3::uuid IS NULL OR id > $3::uuid) ORDER BY id LIMIT $4",
        owner,
        include_archived,
        uuid.UUID(after_id) if after_id else None,
        limit,
    )
    return [to_record(r) for r in rows]


# --- import ----------------------------------------------------------------------------------
ImportStatus = Literal["imported", "updated", "unchanged"]


class KeyTaken(Exception):
    """The record's key belongs to another of the owner's memories (or to a global one)."""


async def _owner_of(conn: asyncpg.Connection, memory_id: uuid.UUID) -> str | None:
    owner: str | None = await conn.fetchval("SELECT owner FROM memories WHERE id = $1", memory_id)
    return owner


async def import_record(
    conn: asyncpg.Connection, owner: str, rec: MemoryRecord, *, operator: bool = False
) -> tuple[ImportStatus, MemoryRecord, bool]:
    """Write one imported record for ``owner`` (never another owner): ``(status, stored, reembed)``.

    Matched by id, else by key; a record whose id belongs to another owner gets a stable
    id of its own (``logic.import_id``), so importing the same file twice changes nothing.
    A record matching a global memory changes it only for an ``operator`` (else ``KeyTaken``).
    """
    target = uuid.UUID(rec.id)
    holder = await _owner_of(conn, target)
    if holder is not None and holder != owner:
        target = import_id(owner, rec.id)
    existing = await memories.get(conn, owner, target)
    if existing is None and rec.key is not None:
        row = await conn.fetchrow(f"SELECT {COLUMNS} FROM memories WHERE owner = $1 AND key = $2", owner, rec.key)
        existing = to_record(row) if row else None
    if existing is not None:
        if not record_differs(existing, rec):
            return "unchanged", existing, False
        if existing.scope == "global" and not operator:
            raise KeyTaken(f"memory {existing.id} is global: {GLOBAL_REFUSED}")
        if rec.key is not None:
            other = await conn.fetchval(
                "SELECT id FROM memories WHERE owner = $1 AND key = $2 AND id <> $3",
                owner,
                rec.key,
                uuid.UUID(existing.id),
            )
            if other is not None:
                raise KeyTaken(f"key {rec.key!r} belongs to memory {other}")
        changed = content_hash(rec.content) != existing.content_hash
        row = await conn.fetchrow(
            f"""
            UPDATE memories SET content = $3, content_hash = $4, type = $5, key = $6, session_id = $7,
                metadata = $8::jsonb, scope = $9, state = $10, full_content = $11, expires_at = $12,
                source = 'import', updated_at = now(), needs_reindex = needs_reindex OR $13, agent_id = $14
            WHERE owner = $1 AND id = $2 RETURNING {COLUMNS}
            """,
            owner,
            uuid.UUID(existing.id),
            rec.content,
            content_hash(rec.content),
            rec.memory_type,
            rec.key,
            rec.session_id,
            rec.metadata,
            rec.scope,
            rec.state,
            rec.full_content,
            utc(rec.expires_at) if rec.expires_at else None,
            changed,
            rec.agent_id,
        )
        assert row is not None
        return "updated", to_record(row), changed
    stored = await memories.insert(
        conn,
        owner=owner,
        memory_type=rec.memory_type,
        content=rec.content,
        source="import",
        session_id=rec.session_id,
        agent_id=rec.agent_id,
        key=rec.key,
        metadata=rec.metadata,
        scope=rec.scope,
        expires_at=utc(rec.expires_at) if rec.expires_at else None,
        created_at=utc(rec.created_at),
        memory_id=target,
    )
    if rec.state != "active" or rec.full_content is not None or rec.last_accessed_at is not None:
        row = await conn.fetchrow(
            f"UPDATE memories SET state = $3, full_content = $4, last_accessed_at = $5"
            f" WHERE owner = $1 AND id = $2 RETURNING {COLUMNS}",
            owner,
            target,
            rec.state,
            rec.full_content,
            utc(rec.last_accessed_at) if rec.last_accessed_at else None,
        )
        assert row is not None
        stored = to_record(row)
    return "imported", stored, True
