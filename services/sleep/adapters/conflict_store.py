"""The reads and bookkeeping of the conflict phase: pair memories, the two ledgers, the backlog, scans.

Every statement is scoped to one owner. Pairs are `(a, b)` with `a < b` as canonical uuid
strings (Postgres' uuid order), as in every table of the phase.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime

import asyncpg

from services.sleep.logic.conflict_pairs import CandidatePair, ConflictPair, PairKey, PairMemory, ScanRecord
from shared.db.memories import Conn

_PAIRS = "(memory_a, memory_b) IN (SELECT * FROM unnest($2::uuid[], $3::uuid[]))"


def _columns(keys: Sequence[PairKey]) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    return [uuid.UUID(a) for a, _b in keys], [uuid.UUID(b) for _a, b in keys]


async def pair_memories(conn: Conn, owner: str, ids: Iterable[str]) -> tuple[dict[str, PairMemory], set[str]]:
    """The owner's own active memories among `ids` (selection data) and which of them are global.

    Imported memories (`source='import'`) are in neither: sleep leaves them as they came.
    """
    rows = await conn.fetch(
        "SELECT id, updated_at, content_hash, scope, agent_id FROM memories"
        " WHERE owner = $1 AND id = ANY($2::uuid[]) AND state = 'active' AND source <> 'import'",
        owner,
        [uuid.UUID(i) for i in ids],
    )
    memories: dict[str, PairMemory] = {}
    global_ids: set[str] = set()
    for r in rows:
        key = str(r["id"])
        if r["scope"] == "global":
            global_ids.add(key)
        else:
            memories[key] = PairMemory(
                id=key, updated_at=r["updated_at"], content_hash=r["content_hash"], agent_id=r["agent_id"]
            )
    return memories, global_ids


async def queue_for_review(conn: Conn, owner: str, run_id: str, keys: Sequence[PairKey], reason: str) -> int:
    """`conflict_pending` rows for these pairs (none twice while one is unresolved); how many are new."""
    if not keys:
        return 0
    a_ids, b_ids = _columns(keys)
    status = await conn.execute(
        "INSERT INTO conflict_pending (id, owner, memory_a, memory_b, reason, run_id)"
        " SELECT gen_random_uuid(), $1, u.a, u.b, $4, $5 FROM unnest($2::uuid[], $3::uuid[]) AS u(a, b)"
        " WHERE NOT EXISTS (SELECT 1 FROM conflict_pending p WHERE p.owner = $1 AND p.memory_a = u.a"
        " AND p.memory_b = u.b AND p.resolved_at IS NULL)",
        owner,
        a_ids,
        b_ids,
        reason,
        uuid.UUID(run_id),
    )
    return int(status.rsplit(" ", 1)[-1])


async def reviewed_unchanged(conn: Conn, owner: str, keys: Sequence[PairKey]) -> set[PairKey]:
    """Pairs among ``keys`` in the ``conflict_reviewed`` ledger with neither memory updated after ``judged_at``."""
    if not keys:
        return set()
    a_ids, b_ids = _columns(keys)
    rows = await conn.fetch(
        "SELECT r.memory_a, r.memory_b FROM conflict_reviewed r"
        " JOIN memories ma ON ma.id = r.memory_a JOIN memories mb ON mb.id = r.memory_b"
        f" WHERE r.owner = $1 AND {_PAIRS.replace('(memory_a, memory_b)', '(r.memory_a, r.memory_b)')}"
        " AND ma.updated_at <= r.judged_at AND mb.updated_at <= r.judged_at",
        owner,
        a_ids,
        b_ids,
    )
    return {(str(r["memory_a"]), str(r["memory_b"])) for r in rows}


async def contents(conn: Conn, owner: str, ids: Iterable[str]) -> dict[str, str]:
    """The text of the owner's memories among `ids` (only the pairs sent to the LLM)."""
    rows = await conn.fetch(
        "SELECT id, content FROM memories WHERE owner = $1 AND id = ANY($2::uuid[])",
        owner,
        [uuid.UUID(i) for i in ids],
    )
    return {str(r["id"]): r["content"] for r in rows}


async def ledgers(
    conn: Conn, owner: str, keys: Sequence[PairKey]
) -> tuple[dict[PairKey, tuple[str, str]], dict[PairKey, datetime]]:
    """`differentiated_pairs` hashes and `conflict_reviewed` judged_at of these pairs."""
    a_ids, b_ids = _columns(keys)
    diff_rows = await conn.fetch(
        f"SELECT memory_a, memory_b, hash_a, hash_b FROM differentiated_pairs WHERE owner = $1 AND {_PAIRS}",
        owner,
        a_ids,
        b_ids,
    )
    ledger_rows = await conn.fetch(
        f"SELECT memory_a, memory_b, judged_at FROM conflict_reviewed WHERE owner = $1 AND {_PAIRS}",
        owner,
        a_ids,
        b_ids,
    )
    differentiated = {(str(r["memory_a"]), str(r["memory_b"])): (r["hash_a"], r["hash_b"]) for r in diff_rows}
    ledger = {(str(r["memory_a"]), str(r["memory_b"])): r["judged_at"] for r in ledger_rows}
    return differentiated, ledger


async def backlog(conn: Conn, owner: str) -> list[CandidatePair]:
    """Pairs an earlier scan left for later, unless a memory of the pair changed since."""
    rows = await conn.fetch(
        "SELECT b.memory_a, b.memory_b, b.similarity FROM conflict_backlog b"
        " JOIN memories ma ON ma.id = b.memory_a JOIN memories mb ON mb.id = b.memory_b"
        " WHERE b.owner = $1 AND ma.updated_at <= b.found_at AND mb.updated_at <= b.found_at",
        owner,
    )
    return [CandidatePair(str(r["memory_a"]), str(r["memory_b"]), float(r["similarity"])) for r in rows]


async def replace_backlog(pool: asyncpg.Pool, owner: str, pairs: Sequence[ConflictPair], found_at: datetime) -> None:
    """The owner's backlog becomes exactly `pairs` (found at the run's snapshot), atomically."""
    a_ids, b_ids = _columns([p.key for p in pairs])
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("DELETE FROM conflict_backlog WHERE owner = $1", owner)
        await conn.execute(
            "INSERT INTO conflict_backlog (owner, memory_a, memory_b, similarity, found_at)"
            " SELECT $1, u.a, u.b, u.s, $5 FROM unnest($2::uuid[], $3::uuid[], $4::real[]) AS u(a, b, s)"
            " JOIN memories ma ON ma.id = u.a AND ma.owner = $1 JOIN memories mb ON mb.id = u.b AND mb.owner = $1"
            " ON CONFLICT (owner, memory_a, memory_b) DO NOTHING",
            owner,
            a_ids,
            b_ids,
            [p.similarity for p in pairs],
            found_at,
        )


async def complete_scans(conn: Conn, owner: str, limit: int = 50) -> list[ScanRecord]:
    """The owner's complete conflict scans (from `dream_runs.counters`), newest first."""
    rows = await conn.fetch(
        "SELECT started_at, counters->'conflictScan' AS scan FROM dream_runs WHERE owner = $1"
        " AND counters->'conflictScan'->>'complete' = 'true' ORDER BY started_at DESC LIMIT $2",
        owner,
        limit,
    )
    return [
        ScanRecord(
            started_at=r["started_at"],
            since=datetime.fromisoformat(r["scan"]["since"]) if r["scan"].get("since") else None,
            threshold=float(r["scan"].get("threshold", -1)),
        )
        for r in rows
    ]


async def fresh_vectors_of_old_memories(conn: Conn, owner: str, signature: str, since: datetime) -> bool:
    """Vectors written since `since` for memories whose updated_at is older (imports keep their dates)."""
    return bool(
        await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id"
            " WHERE e.owner = $1 AND e.signature = $2 AND e.created_at >= $3 AND m.updated_at < $3)",
            owner,
            signature,
            since,
        )
    )


# --- applying a batch -------------------------------------------------------------------------
#: What a plan's statement may raise for a plan the data refuses (the plan fails, the batch goes on).
PLAN_REFUSED = (asyncpg.DataError, asyncpg.IntegrityConstraintViolationError)


async def lock_memories(conn: asyncpg.Connection, owner: str, ids: Sequence[str]) -> dict[str, asyncpg.Record]:
    """Lock the owner's memories among ``ids`` until the transaction ends; by id (``content``,
    ``content_hash``, ``state``, ``scope``)."""
    rows = await conn.fetch(
        "SELECT id, content, content_hash, state, scope FROM memories WHERE owner = $1 AND id = ANY($2::uuid[])"
        " ORDER BY id FOR UPDATE",
        owner,
        [uuid.UUID(i) for i in ids],
    )
    return {str(r["id"]): r for r in rows}


async def archive(conn: asyncpg.Connection, owner: str, memory_id: str, metadata: dict[str, object]) -> None:
    await conn.execute(
        "UPDATE memories SET state = 'archived', metadata = metadata || $3::jsonb, updated_at = now()"
        " WHERE owner = $1 AND id = $2",
        owner,
        uuid.UUID(memory_id),
        metadata,
    )


async def add_pending(conn: asyncpg.Connection, owner: str, a: str, b: str, note: str | None, run_id: str) -> None:
    """Queue the pair for review, unless it is queued and unresolved already."""
    await conn.execute(
        "INSERT INTO conflict_pending (id, owner, memory_a, memory_b, reason, run_id)"
        " SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM conflict_pending"
        " WHERE owner = $2 AND memory_a = $3 AND memory_b = $4 AND resolved_at IS NULL)",
        uuid.uuid4(),
        owner,
        uuid.UUID(a),
        uuid.UUID(b),
        note,
        uuid.UUID(run_id),
    )


async def record_differentiated(
    conn: asyncpg.Connection, owner: str, a: str, b: str, hashes: tuple[str, str], distinctions: str, run_id: str
) -> None:
    """Record that the pair differs (with both content hashes, so a change re-opens it)."""
    await conn.execute(
        "INSERT INTO differentiated_pairs (owner, memory_a, memory_b, hash_a, hash_b, distinctions, run_id)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner, memory_a, memory_b) DO UPDATE SET"
        " hash_a = EXCLUDED.hash_a, hash_b = EXCLUDED.hash_b, distinctions = EXCLUDED.distinctions,"
        " run_id = EXCLUDED.run_id, created_at = now()",
        owner,
        uuid.UUID(a),
        uuid.UUID(b),
        hashes[0],
        hashes[1],
        distinctions,
        uuid.UUID(run_id),
    )


async def record_reviewed(
    conn: asyncpg.Connection, owner: str, entries: Sequence[tuple[str, str, datetime, str]], run_id: str
) -> None:
    """Write the ``conflict_reviewed`` ledger rows ``(a, b, judged_at, outcome)``."""
    await conn.executemany(
        "INSERT INTO conflict_reviewed (owner, memory_a, memory_b, judged_at, outcome, run_id)"
        " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (owner, memory_a, memory_b) DO UPDATE SET"
        " judged_at = EXCLUDED.judged_at, outcome = EXCLUDED.outcome, run_id = EXCLUDED.run_id",
        [
            (owner, uuid.UUID(a), uuid.UUID(b), judged_at, outcome, uuid.UUID(run_id))
            for a, b, judged_at, outcome in entries
        ],
    )


async def db_clock(conn: Conn) -> datetime:
    """The database's clock now: the ``judged_at`` of a batch compares with ``updated_at`` it wrote."""
    now: datetime = await conn.fetchval("SELECT clock_timestamp()")
    return now
