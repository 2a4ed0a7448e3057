"""What a deletion removes beside the rows: everything derived from the deleted memories.

Called by ``shared.db.memories.delete`` inside its transaction, before the rows go:
- summaries listing a deleted memory in ``metadata.source_ids`` and patterns listing one in
  ``metadata.evidence`` are deleted too (they hold its text); the other members of such a
  summary get their original text back, active, to be re-embedded;
- entities only the deleted memories mentioned are deleted (their relations cascade); the
  mention count of the others drops by the mentions removed;
- ``differentiated_pairs`` (with their ``distinctions``), ``conflict_reviewed`` and
  ``conflict_pending`` rows naming a deleted memory are deleted;
- LLM audit errors of the owner quoting a deleted memory (its id, or its text's first
  ``QUOTE_CHARS`` characters) are redacted.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

QUOTE_CHARS = 32
REDACTED = "[redacted: quoted a deleted memory]"


@dataclass(frozen=True)
class Derived:
    memory_ids: list[uuid.UUID]  # derived memories to delete with the originals
    restored: int  # other members of a deleted summary, made active again
    entities: int
    pairs: int
    audit_redacted: int
    quotes: set[str]  # ids and text prefixes of everything removed


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


async def remove_derived(conn: asyncpg.Connection, owner: str, ids: Sequence[uuid.UUID]) -> Derived:
    """Remove what was derived from the owner's memories ``ids`` (the rows themselves stay to
    the caller); ``Derived.memory_ids`` are derived memories the caller deletes with them."""
    keys = [str(i) for i in ids]
    rows = await conn.fetch(
        "SELECT id, type FROM memories WHERE owner = $1 AND NOT (id = ANY($2::uuid[])) AND ("
        " (type = 'summary' AND metadata->'source_ids' ?| $3::text[])"
        " OR (metadata->'evidence' ?| $3::text[]))",
        owner,
        list(ids),
        keys,
    )
    derived = [r["id"] for r in rows]
    summaries = [r["id"] for r in rows if r["type"] == "summary"]
    restored = 0
    if summaries:
        done = await conn.execute(
            "UPDATE memories SET content = full_content, full_content = NULL, state = 'active',"
            " content_hash = encode(sha256(convert_to(full_content, 'UTF8')), 'hex'), needs_reindex = true,"
            " metadata = metadata - 'summary_id', updated_at = now()"
            " WHERE owner = $1 AND NOT (id = ANY($2::uuid[])) AND full_content IS NOT NULL"
            " AND metadata->>'summary_id' = ANY($3::text[])",
            owner,
            list(ids),
            [str(s) for s in summaries],
        )
        restored = int(done.split()[-1])
    gone = [*ids, *derived]
    mentioned = await conn.fetch(
        "SELECT entity_id, count(*) AS n FROM entity_mentions WHERE memory_id = ANY($1::uuid[]) GROUP BY entity_id",
        gone,
    )
    entities = 0
    if mentioned:
        entity_ids = [r["entity_id"] for r in mentioned]
        await conn.execute("DELETE FROM entity_mentions WHERE memory_id = ANY($1::uuid[])", gone)
        done = await conn.execute(
            "DELETE FROM entities e WHERE e.owner = $1 AND e.id = ANY($2::uuid[])"
            " AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)",
            owner,
            entity_ids,
        )
        entities = int(done.split()[-1])
        await conn.execute(
            "UPDATE entities e SET mentions = greatest(1, e.mentions - d.n)"
            " FROM unnest($2::uuid[], $3::int[]) AS d(id, n) WHERE e.owner = $1 AND e.id = d.id",
            owner,
            entity_ids,
            [int(r["n"]) for r in mentioned],
        )
    pairs = 0
    for table in ("differentiated_pairs", "conflict_reviewed", "conflict_pending"):
        done = await conn.execute(
            f"DELETE FROM {table} WHERE owner = $1 AND (memory_a = ANY($2::uuid[]) OR memory_b = ANY($2::uuid[]))",
            owner,
            gone,
        )
        pairs += int(done.split()[-1])
    texts = await conn.fetch("SELECT content, full_content FROM memories WHERE id = ANY($1::uuid[])", gone)
    quotes = {str(i) for i in gone}
    for r in texts:
        for text in (r["content"], r["full_content"]):
            if text and len(text.strip()) >= 8:
                quotes.add(text[:QUOTE_CHARS])
    done = await conn.execute(
        "UPDATE llm_audit_logs SET error = $3 WHERE owner = $1 AND error IS NOT NULL AND error <> $3"
        " AND error LIKE ANY($2::text[])",
        owner,
        [_like(q) for q in quotes],
        REDACTED,
    )
    return Derived(derived, restored, entities, pairs, int(done.split()[-1]), quotes)
