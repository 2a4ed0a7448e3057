"""The embed service's SQL: memories as a worker reads them (with a chat turn's stored context
head), `memory_vec_meta`, reindex scans.

Vectors themselves are written only through the vector-store port (`shared.vectors`); this
module touches `memories` (read content, flag a memory whose content changed while it was being
embedded) and `memory_vec_meta` (the active / pending signature per store, which retrieval
and `engine.status` read). Every job read is scoped by `(id, owner)`: a job naming another
owner's memory finds nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg

from memoryd.schemas import EmbedJob
from services.embed.logic import MemoryState

Conn: TypeAlias = asyncpg.Connection | asyncpg.Pool


@dataclass(frozen=True)
class MemoryRow:
    """A memory as a worker needs it: what triage looks at, plus the store payload."""

    state: MemoryState
    session_id: str | None
    agent_id: str | None
    scope: str
    lifecycle: str  # memories.state: active | summary | archived
    memory_type: str
    created_at: datetime
    expires_at: datetime | None
    context: str | None = None  # memories.context: a raw chat turn's head (shared.turn_context)


_FETCH = """
SELECT m.id, m.owner, m.content, m.content_hash, m.embedding_signature, m.needs_reindex,
       m.session_id, m.agent_id, m.scope, m.state, m.type, m.created_at, m.expires_at, m.context
FROM memories m
JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::text[])) AS j(id, owner)
  ON m.id = j.id AND m.owner = j.owner
"""


async def fetch_rows(conn: Conn, jobs: Sequence[EmbedJob]) -> dict[tuple[str, str], MemoryRow]:
    """The current rows of the jobs' memories, keyed `(memory_id, owner)`; absent = deleted."""
    if not jobs:
        return {}
    rows = await conn.fetch(_FETCH, [uuid.UUID(j.memory_id) for j in jobs], [j.owner for j in jobs])
    out: dict[tuple[str, str], MemoryRow] = {}
    for r in rows:
        mid = str(r["id"])
        out[(mid, r["owner"])] = MemoryRow(
            state=MemoryState(
                memory_id=mid,
                owner=r["owner"],
                content=r["content"],
                content_hash=r["content_hash"],
                embedding_signature=r["embedding_signature"],
                needs_reindex=r["needs_reindex"],
            ),
            session_id=r["session_id"],
            agent_id=r["agent_id"],
            scope=r["scope"],
            lifecycle=r["state"],
            memory_type=r["type"],
            created_at=r["created_at"],
            expires_at=r["expires_at"],
            context=r["context"],
        )
    return out


def job_key(job: EmbedJob) -> tuple[str, str]:
    """The `fetch_rows` key of a job (ids normalised to the canonical UUID text)."""
    return str(uuid.UUID(job.memory_id)), job.owner


async def flag_changed(
    conn: Conn, embedded: Sequence[tuple[str, str]], contexts: Sequence[str | None]
) -> list[tuple[str, str, str]]:
    """Memories whose text changed after it was read for embedding (its content, or a chat turn's
    context head, in the order of ``embedded``): mark them for reindex.

    The vector just written may have replaced a newer one (two workers, two versions), so the
    memory must be embedded again. Returns `(memory_id, owner, current_hash)` to requeue.
    """
    if not embedded:
        return []
    rows = await conn.fetch(
        "UPDATE memories m SET needs_reindex = true"
        " FROM unnest($1::uuid[], $2::text[], $3::text[]) AS e(id, hash, context)"
        " WHERE m.id = e.id AND (m.content_hash <> e.hash OR m.context IS DISTINCT FROM e.context)"
        " RETURNING m.id, m.owner, m.content_hash",
        [uuid.UUID(m) for m, _h in embedded],
        [h for _m, h in embedded],
        list(contexts),
    )
    return [(str(r["id"]), r["owner"], r["content_hash"]) for r in rows]


# --- reindex -------------------------------------------------------------------------------
_NEEDS = "(needs_reindex OR embedding_signature IS DISTINCT FROM $1)"


async def pending_count(conn: Conn, signature: str, owner: str | None = None) -> int:
    """Memories without a current vector of `signature` (one owner's, or everyone's)."""
    if owner is None:
        return int(await conn.fetchval(f"SELECT count(*) FROM memories WHERE {_NEEDS}", signature))
    return int(await conn.fetchval(f"SELECT count(*) FROM memories WHERE owner = $2 AND {_NEEDS}", signature, owner))


async def backfill_pending(conn: Conn, signature: str, started_at: float) -> bool:
    """Whether the backfill to `signature` that began at `started_at` (epoch s) still has work.

    Memories created since it began and simply waiting for their first vector do not hold it
    up (they never had a vector of the old signature, and a busy ingest would otherwise keep
    the switch from ever happening); a vector of any other signature does, whenever written.
    """
    return bool(
        await conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM memories WHERE {_NEEDS}"
            " AND (created_at < to_timestamp($2) OR embedding_signature IS NOT NULL))",
            signature,
            started_at,
        )
    )


async def db_now(conn: Conn) -> float:
    """The database clock as epoch seconds (every replica agrees on it)."""
    return float(await conn.fetchval("SELECT extract(epoch FROM clock_timestamp())"))


async def needing_page(
    conn: Conn,
    signature: str,
    owner: str | None,
    after: uuid.UUID | None,
    limit: int,
    updated_before: datetime | None = None,
) -> list[tuple[uuid.UUID, str, str, str | None]]:
    """The next `limit` memories needing `signature` (last changed before `updated_before`,
    when given), in id order after `after` (keyset paging): `(id, owner, content_hash,
    embedding_signature)`."""
    rows = await conn.fetch(
        f"SELECT id, owner, content_hash, embedding_signature FROM memories WHERE {_NEEDS}"
        " AND ($2::text IS NULL OR owner = $2) AND ($3::uuid IS NULL OR id > $3)"
        " AND ($5::timestamptz IS NULL OR updated_at < $5)"
        " ORDER BY id LIMIT $4",
        signature,
        owner,
        after,
        limit,
        updated_before,
    )
    return [(r["id"], r["owner"], r["content_hash"], r["embedding_signature"]) for r in rows]


# --- memory_vec_meta -----------------------------------------------------------------------
@dataclass(frozen=True)
class MetaRow:
    store: str
    active: str | None
    active_dim: int | None
    pending: str | None
    details: dict[str, Any]


def _meta(r: asyncpg.Record) -> MetaRow:
    return MetaRow(r["store"], r["embedding_signature"], r["active_dim"], r["pending_signature"], dict(r["details"]))


_META_COLS = "store, embedding_signature, active_dim, pending_signature, details"


async def lock_meta(conn: asyncpg.Connection, stores: Sequence[str]) -> dict[str, MetaRow]:
    """Create missing rows, then lock and return the stores' rows (inside a transaction)."""
    await conn.execute(
        "INSERT INTO memory_vec_meta (store) SELECT unnest($1::text[]) ON CONFLICT (store) DO NOTHING", list(stores)
    )
    rows = await conn.fetch(
        f"SELECT {_META_COLS} FROM memory_vec_meta WHERE store = ANY($1) ORDER BY store FOR UPDATE", list(stores)
    )
    return {r["store"]: _meta(r) for r in rows}


async def read_meta(conn: Conn, stores: Sequence[str]) -> dict[str, MetaRow]:
    rows = await conn.fetch(f"SELECT {_META_COLS} FROM memory_vec_meta WHERE store = ANY($1)", list(stores))
    return {r["store"]: _meta(r) for r in rows}


async def write_meta(
    conn: Conn,
    store: str,
    *,
    active: str | None,
    active_dim: int | None,
    pending: str | None,
    details: dict[str, Any],
) -> None:
    await conn.execute(
        "UPDATE memory_vec_meta SET embedding_signature = $2, active_dim = $3, pending_signature = $4,"
        " details = $5::jsonb, updated_at = now() WHERE store = $1",
        store,
        active,
        active_dim,
        pending,
        details,
    )


async def mark_detached(conn: Conn, store: str) -> None:
    """Record that ``store`` was detached (its vectors dropped)."""
    await conn.execute(
        "UPDATE memory_vec_meta SET details = details || '{\"detached\": true}'::jsonb, updated_at = now()"
        " WHERE store = $1",
        store,
    )


async def clear_retired(conn: Conn, store: str, signature: str) -> None:
    """Forget that ``signature`` of ``store`` was retired (its vectors are dropped)."""
    await conn.execute(
        "UPDATE memory_vec_meta SET details = details - 'retired' - 'retired_at', updated_at = now()"
        " WHERE store = $1 AND details->>'retired' = $2",
        store,
        signature,
    )


async def memories_embedded(conn: Conn) -> bool:
    """Whether any memory has ever been embedded (a new store then needs a backfill)."""
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM memories WHERE embedding_signature IS NOT NULL)"))


async def mark_all_for_reindex(conn: Conn) -> int:
    status = await conn.execute("UPDATE memories SET needs_reindex = true WHERE NOT needs_reindex")
    return int(status.rsplit(" ", 1)[-1])
