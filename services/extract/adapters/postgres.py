"""Postgres writes of one extract job: fact upserts, entities and mentions, the run record.

All functions take the job's connection so the handler runs them in one transaction.
Facts go through ``shared.db.memories.upsert_by_key`` (one rule for every keyed write; a
fact whose key is a global memory's is skipped);
rows are written in key / name order so concurrent jobs of one owner lock in the same
order. Entity mentions are inserted only for memories of the same owner, and the
``mentions`` counter grows only by mention rows that are new, so a redelivered job
changes no count.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from memoryd.errors import Forbidden
from services.extract.logic.entities import Entity
from services.extract.logic.quota import Holding
from shared.db import memories

_KIND_RANK = {"thing": 0, "person": 1, "tech": 2}


@dataclass(frozen=True)
class PlannedFact:
    """A fact to upsert by ``(owner, key)``."""

    key: str
    memory_type: str
    content: str
    source: str  # "rule" | "llm"
    metadata: dict[str, Any]


@dataclass(frozen=True)
class StoredFact:
    memory_id: str
    key: str
    content: str
    content_hash: str
    source: str
    created: bool
    changed: bool
    needs_embed: bool  # new, changed, or still without a vector (needs_reindex)


async def holding(conn: asyncpg.Connection, owner: str, keys: Sequence[str]) -> Holding:
    """The owner's memories and bytes now, and the bytes of those of ``keys`` it holds, under a
    per-owner lock to the end of the transaction (concurrent jobs of one owner count in turn)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('quota:' || $1, 0))", owner)
    row = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(octet_length(content)), 0) AS b FROM memories WHERE owner = $1", owner
    )
    assert row is not None
    rows = await conn.fetch(
        "SELECT key, octet_length(content) AS b FROM memories WHERE owner = $1 AND key = ANY($2::text[])",
        owner,
        list(keys),
    )
    return Holding(count=int(row["n"]), size=int(row["b"]), existing={r["key"]: int(r["b"]) for r in rows})


async def upsert_facts(
    conn: asyncpg.Connection,
    *,
    owner: str,
    session_id: str | None,
    facts: Sequence[PlannedFact],
    agent_id: str | None = None,
) -> list[StoredFact]:
    stored: list[StoredFact] = []
    for fact in sorted(facts, key=lambda f: f.key):
        try:
            record, created, changed = await memories.upsert_by_key(
                conn,
                owner=owner,
                key=fact.key,
                memory_type=fact.memory_type,
                content=fact.content,
                source=fact.source,
                session_id=session_id,
                agent_id=agent_id,
                metadata=fact.metadata,
            )
        except Forbidden:  # the key is an operator's global memory: a chat turn never changes it
            continue
        stored.append(
            StoredFact(
                memory_id=record.id,
                key=fact.key,
                content=record.content,
                content_hash=record.content_hash,
                source=fact.source,
                created=created,
                changed=changed,
                needs_embed=created or changed or record.needs_reindex,
            )
        )
    return stored


async def link_entities(conn: asyncpg.Connection, owner: str, mentions: Sequence[tuple[Entity, str]]) -> int:
    """Upsert the entities and their ``(entity, memory)`` mentions; return new mention rows."""
    if not mentions:
        return 0
    strongest: dict[str, Entity] = {}
    for entity, _memory in mentions:
        seen = strongest.get(entity.normalized)
        if seen is None or _KIND_RANK[entity.kind] > _KIND_RANK[seen.kind]:
            strongest[entity.normalized] = (
                entity if seen is None else Entity(name=seen.name, kind=entity.kind, normalized=seen.normalized)
            )
    ordered = sorted(strongest.values(), key=lambda e: e.normalized)
    rows = await conn.fetch(
        """
        INSERT INTO entities (id, owner, name, normalized, kind, mentions)
        SELECT gen_random_uuid(), $1, t.name, t.normalized, t.kind, 0
        FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(name, normalized, kind, n)
        ORDER BY t.n
        ON CONFLICT (owner, normalized) DO UPDATE SET
            kind = CASE WHEN array_position(ARRAY['thing','person','tech'], EXCLUDED.kind)
                           > array_position(ARRAY['thing','person','tech'], entities.kind)
                        THEN EXCLUDED.kind ELSE entities.kind END,
            updated_at = now()
        RETURNING id, normalized
        """,
        owner,
        [e.name for e in ordered],
        [e.normalized for e in ordered],
        [e.kind for e in ordered],
    )
    ids = {row["normalized"]: row["id"] for row in rows}
    pairs = sorted({(ids[entity.normalized], uuid.UUID(memory)) for entity, memory in mentions})
    new = await conn.fetchval(
        """
        WITH pairs AS (
            SELECT * FROM unnest($2::uuid[], $3::uuid[]) AS p(entity_id, memory_id)
        ), inserted AS (
            INSERT INTO entity_mentions (entity_id, memory_id)
            SELECT p.entity_id, p.memory_id FROM pairs p
            JOIN memories m ON m.id = p.memory_id AND m.owner = $1
            ON CONFLICT DO NOTHING
            RETURNING entity_id
        ), counted AS (
            UPDATE entities e SET mentions = e.mentions + c.n
            FROM (SELECT entity_id, count(*) AS n FROM inserted GROUP BY entity_id) c
            WHERE e.id = c.entity_id AND e.owner = $1
            RETURNING c.n
        )
        SELECT coalesce(sum(n), 0) FROM counted
        """,
        owner,
        [p[0] for p in pairs],
        [p[1] for p in pairs],
    )
    return int(new or 0)


async def llm_already_done(conn: asyncpg.Connection | asyncpg.Pool, owner: str, event_id: str) -> bool:
    """Whether an earlier delivery of this event's job completed its LLM pass."""
    status = await conn.fetchval(
        "SELECT llm_status FROM extract_runs WHERE owner = $1 AND event_id = $2", owner, event_id
    )
    return status == "ok"


async def record_run(
    conn: asyncpg.Connection, *, owner: str, event_id: str, rule_facts: int, llm_facts: int, llm_status: str
) -> None:
    """Record (or update, on redelivery) what this job did; an earlier LLM success is kept."""
    await conn.execute(
        """
        INSERT INTO extract_runs (owner, event_id, rule_facts, llm_facts, llm_status)
        VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (owner, event_id) DO UPDATE SET
            rule_facts = EXCLUDED.rule_facts,
            llm_facts = CASE WHEN EXCLUDED.llm_status = 'ok' THEN EXCLUDED.llm_facts ELSE extract_runs.llm_facts END,
            llm_status = CASE WHEN extract_runs.llm_status = 'ok' THEN 'ok' ELSE EXCLUDED.llm_status END,
            runs = extract_runs.runs + 1,
            processed_at = now()
        """,
        owner,
        event_id,
        rule_facts,
        llm_facts,
        llm_status,
    )


async def unembedded_llm_facts(conn: asyncpg.Connection | asyncpg.Pool, owner: str, event_id: str) -> list[StoredFact]:
    """LLM facts last written by this event that still have no vector (for a redelivery
    that skips the LLM: their embed jobs may never have been published)."""
    rows = await conn.fetch(
        "SELECT id, key, content, content_hash FROM memories"
        " WHERE owner = $1 AND source = 'llm' AND needs_reindex AND metadata->>'event_id' = $2",
        owner,
        event_id,
    )
    return [
        StoredFact(
            memory_id=str(r["id"]),
            key=r["key"],
            content=r["content"],
            content_hash=r["content_hash"],
            source="llm",
            created=False,
            changed=False,
            needs_embed=True,
        )
        for r in rows
    ]
