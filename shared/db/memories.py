"""The ``memories`` table: one place for its columns, row mapping, upsert and deletion.

Every service that reads or writes memories goes through these functions, so the
rules (content hash, key upsert with metadata merge, ``needs_reindex`` on content change,
deletion from every store with a receipt) live once.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg

from memoryd.errors import Forbidden, QuotaExceeded
from memoryd.schemas.memory import DeletionReceipt, MemoryRecord

from .derived import remove_derived

#: The columns of a full ``MemoryRecord``, in SELECT form.
COLUMNS = (
    "id, owner, session_id, agent_id, type, key, content, metadata, source, scope, created_at, updated_at, "
    "last_accessed_at, expires_at, state, full_content, content_hash, embedding_signature, needs_reindex"
)

Conn: TypeAlias = asyncpg.Connection | asyncpg.Pool


def content_hash(text: str) -> str:
    """sha256 of the UTF-8 text, hex (the dedupe and change-detection key)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def new_id() -> uuid.UUID:
    return uuid.uuid4()


def to_record(row: asyncpg.Record) -> MemoryRecord:
    """A ``memories`` row (selected with ``COLUMNS``) as the wire record."""
    return MemoryRecord(
        id=str(row["id"]),
        owner=row["owner"],
        session_id=row["session_id"],
        agent_id=row["agent_id"],
        memory_type=row["type"],
        key=row["key"],
        content=row["content"],
        metadata=dict(row["metadata"] or {}),
        source=row["source"],
        scope=row["scope"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_accessed_at=row["last_accessed_at"],
        expires_at=row["expires_at"],
        state=row["state"],
        full_content=row["full_content"],
        content_hash=row["content_hash"],
        embedding_signature=row["embedding_signature"],
        needs_reindex=row["needs_reindex"],
    )


async def get(conn: Conn, owner: str, memory_id: str | uuid.UUID) -> MemoryRecord | None:
    """The owner's memory by id (another owner's id finds nothing)."""
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM memories WHERE owner = $1 AND id = $2", owner, _uuid(memory_id))
    return to_record(row) if row else None


async def insert(
    conn: Conn,
    *,
    owner: str,
    memory_type: str,
    content: str,
    source: str,
    session_id: str | None = None,
    key: str | None = None,
    metadata: dict[str, Any] | None = None,
    scope: str = "apiKey",
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
    memory_id: uuid.UUID | None = None,
    agent_id: str | None = None,
) -> MemoryRecord:
    """Insert a new memory (no key conflict handling: use ``upsert_by_key`` for keyed ones). A raw
    chat turn's ``context`` is set by the database (``shared.turn_context``)."""
    row = await conn.fetchrow(
        f"INSERT INTO memories (id, owner, session_id, type, key, content, metadata, source, scope, expires_at,"
        f" content_hash, created_at, updated_at, agent_id)"
        f" VALUES ($1,$2,$3,$4,$5,$6,$7::jsonb,$8,$9,$10,$11, coalesce($12, now()), coalesce($12, now()), $13)"
        f" RETURNING {COLUMNS}",
        memory_id or new_id(),
        owner,
        session_id,
        memory_type,
        key,
        content,
        metadata or {},
        source,
        scope,
        expires_at,
        content_hash(content),
        created_at,
        agent_id,
    )
    assert row is not None
    return to_record(row)


async def upsert_by_key(
    conn: Conn,
    *,
    owner: str,
    key: str,
    memory_type: str,
    content: str,
    source: str,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    scope: str = "apiKey",
    expires_at: datetime | None = None,
    operator: bool = False,
    agent_id: str | None = None,
) -> tuple[MemoryRecord, bool, bool]:
    """Insert, or update the owner's memory with this key, merging metadata.

    Metadata merges shallowly: keys only in the stored row stay (user tags, pins), the new
    keys win, except ``first_extracted_at``: when the fact was first extracted, set from the
    first ``extracted_at`` and kept by every later upsert (a row written before this key
    existed takes its stored ``extracted_at``). Returns ``(record, created, content_changed)``;
    a changed content sets ``needs_reindex`` (the caller publishes an ``EmbedJob``).
    A global-scope memory is changed only by an ``operator`` write (which also sets the
    scope it names); any other write to its key raises ``Forbidden`` and changes nothing.
    """
    digest = content_hash(content)
    row = await conn.fetchrow(
        f"""
        WITH prev AS (SELECT content_hash FROM memories WHERE owner = $2 AND key = $5)
        INSERT INTO memories (id, owner, session_id, type, key, content, metadata, source, scope, expires_at,
                              content_hash, agent_id)
        VALUES ($1,$2,$3,$4,$5,$6,
                $7::jsonb || jsonb_strip_nulls(jsonb_build_object(
                    'first_extracted_at', coalesce($7::jsonb -> 'first_extracted_at', $7::jsonb -> 'extracted_at'))),
                $8,$9,$10,$11,$13)
        ON CONFLICT (owner, key) WHERE key IS NOT NULL DO UPDATE SET
            content = EXCLUDED.content,
            type = EXCLUDED.type,
            metadata = memories.metadata || EXCLUDED.metadata || jsonb_strip_nulls(jsonb_build_object(
                'first_extracted_at', coalesce(memories.metadata -> 'first_extracted_at',
                                               memories.metadata -> 'extracted_at',
                                               EXCLUDED.metadata -> 'first_extracted_at'))),
            session_id = coalesce(EXCLUDED.session_id, memories.session_id),
            agent_id = coalesce(EXCLUDED.agent_id, memories.agent_id),
            expires_at = EXCLUDED.expires_at,
            content_hash = EXCLUDED.content_hash,
            updated_at = now(),
            needs_reindex = memories.needs_reindex OR memories.content_hash <> EXCLUDED.content_hash,
            state = CASE WHEN memories.content_hash <> EXCLUDED.content_hash THEN 'active' ELSE memories.state END,
            scope = CASE WHEN $12 THEN EXCLUDED.scope ELSE memories.scope END
        WHERE $12 OR memories.scope <> 'global'
        RETURNING {COLUMNS}, (SELECT content_hash FROM prev) AS prev_hash
        """,
        new_id(),
        owner,
        session_id,
        memory_type,
        key,
        content,
        metadata or {},
        source,
        scope,
        expires_at,
        digest,
        operator,
        agent_id,
    )
    if row is None:
        raise Forbidden(f"key {key!r} belongs to a global memory: only an operator changes it")
    prev = row["prev_hash"]
    return to_record(row), prev is None, prev is not None and prev != digest


async def replace_content(
    conn: Conn,
    owner: str,
    memory_id: str | uuid.UUID,
    content: str,
    *,
    reason: str,
    run_id: str,
    metadata: dict[str, Any],
    old_content: str | None = None,
    reactivate: bool = False,
    skip_global: bool = False,
) -> str:
    """Replace a memory's text in place, keeping the old text in ``content_history``; the new hash.

    The history row holds ``old_content`` (the text the caller read under its row lock),
    written only when the new text differs from it; without ``old_content`` it holds the
    stored text as it is now, always. The row gets the new text and hash, merges
    ``metadata``, a new ``updated_at`` and ``needs_reindex`` when the hash changed;
    ``reactivate`` also makes it active, ``skip_global`` leaves a global-scope memory as it is.
    """
    mid, run = _uuid(memory_id), uuid.UUID(run_id)
    if old_content is None:
        await conn.execute(
            "INSERT INTO content_history (memory_id, owner, old_content, reason, run_id)"
            " SELECT id, owner, content, $3, $4 FROM memories WHERE owner = $1 AND id = $2",
            owner,
            mid,
            reason,
            run,
        )
    elif content != old_content:
        await conn.execute(
            "INSERT INTO content_history (memory_id, owner, old_content, reason, run_id) VALUES ($1, $2, $3, $4, $5)",
            mid,
            owner,
            old_content,
            reason,
            run,
        )
    digest = content_hash(content)
    state = " state = 'active'," if reactivate else ""
    guard = " AND scope <> 'global'" if skip_global else ""
    await conn.execute(
        "UPDATE memories SET content = $3, content_hash = $4, metadata = metadata || $5::jsonb, updated_at = now(),"
        f"{state} needs_reindex = needs_reindex OR content_hash <> $4 WHERE owner = $1 AND id = $2{guard}",
        owner,
        mid,
        content,
        digest,
        metadata,
    )
    return digest


@dataclass(frozen=True)
class Removal:
    """What ``delete`` removed: the receipt, every memory id removed (derived ones too), and
    the strings that quote them (ids, text prefixes) for stores outside Postgres (the DLQ)."""

    receipt: DeletionReceipt
    ids: list[str]
    quotes: list[str]


async def delete(conn: asyncpg.Connection, owner: str, ids: Sequence[str | uuid.UUID]) -> Removal:
    """Delete the owner's memories by id from Postgres, with everything derived from them
    (``shared.db.derived``: summaries, patterns, entities, pair ledgers, audit quotes).

    Returns the receipt, the ids of every memory row removed (derived ones included) and
    the quotes that identify them.
    Vectors in other stores (Qdrant) are removed by the caller *after* this commit, so an
    embed that read a row before it went cannot leave a point behind that nobody deletes
    (the orphan sweep finds any that a failed call left).
    """
    uuids = [_uuid(i) for i in ids]
    async with conn.transaction():
        mine = [
            r["id"]
            for r in await conn.fetch(
                "SELECT id FROM memories WHERE owner = $1 AND id = ANY($2::uuid[]) FOR UPDATE", owner, uuids
            )
        ]
        derived = await remove_derived(conn, owner, mine) if mine else None
        every = [*mine, *(derived.memory_ids if derived else [])]
        vectors = await conn.fetchval(
            "SELECT count(*) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])",
            every,
        )
        history = await conn.fetchval(
            "SELECT count(*) FROM content_history WHERE owner = $1 AND memory_id = ANY($2::uuid[])", owner, every
        )
        deleted = await conn.fetch(
            "DELETE FROM memories WHERE owner = $1 AND id = ANY($2::uuid[]) RETURNING id", owner, every
        )
    gone = {r["id"] for r in deleted}
    receipt = DeletionReceipt(
        rows=len(gone & set(mine)),
        pgvector_vectors=int(vectors or 0),
        history_rows=int(history or 0),
        derived_memories=len(gone) - len(gone & set(mine)),
        restored_members=derived.restored if derived else 0,
        entities=derived.entities if derived else 0,
        pair_rows=derived.pairs if derived else 0,
        audit_redacted=derived.audit_redacted if derived else 0,
    )
    return Removal(receipt, [str(i) for i in gone], sorted(derived.quotes) if derived else [])


async def check_quota(
    conn: Conn, owner: str, *, max_memories: int, max_bytes: int, adding: int = 1, adding_bytes: int = 0
) -> None:
    """``QuotaExceeded`` when ``adding`` memories of ``adding_bytes`` content would pass the
    owner's quota (0 = none; counted over every state, archived included)."""
    if max_memories <= 0 and max_bytes <= 0:
        return
    row = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(octet_length(content)), 0) AS b FROM memories WHERE owner = $1", owner
    )
    assert row is not None
    count, size = int(row["n"]), int(row["b"])
    if max_memories > 0 and count + adding > max_memories:
        raise QuotaExceeded(f"owner {owner!r} holds {count} memories; the quota is {max_memories}")
    if max_bytes > 0 and size + adding_bytes > max_bytes:
        raise QuotaExceeded(f"owner {owner!r} holds {size} bytes of memories; the quota is {max_bytes}")


def _uuid(value: str | uuid.UUID) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)
