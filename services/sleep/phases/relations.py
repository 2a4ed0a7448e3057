"""Phase 4, relation completion (rules, no LLM): orphan entities get edges from co-occurrence.

Entities and their mentions come from the extractor (`entities`, `entity_mentions`).
Two of the owner's entities co-occur when the same memory of the owner (not an imported
one) mentions both; only pairs touching an orphan (no structural edge yet) are counted.
A direction hint comes from the shared texts ("A is part of B", "A depends on B", case-insensitive).
The rules (orphans only, no `part_of`/`depends_on` cycles) are `relation_logic`; the
new edges are inserted in one transaction, idempotently (unique per owner, ends, relation).
"""

from __future__ import annotations

import uuid

from services.sleep.adapters.entity_store import AFFECTIVE, owner_entities
from services.sleep.context import RunContext
from services.sleep.logic.relations import Edge, complete_relations, hinted_co_occurrence
from services.sleep.receipt import RelationResult

_RE_NAME = r"regexp_replace(lower({e}.name), '([.^$*+?()\[\]{{}}|\\])', '\\\1', 'g')"


def _phrase(left: str, words: str, right: str) -> str:
    """`m.content` says `<left> <words> <right>` (names as regex-escaped literals). The
    per-pair pattern is built (and compiled) only for a memory whose text has one of the
    hint words at all (`h.hinted`, one constant pattern): most have none."""
    return (
        f"count(*) FILTER (WHERE CASE WHEN h.hinted THEN lower(m.content) ~ ('(^|\\W)' || {_RE_NAME.format(e=left)}"
        f" || '\\s+({words})\\s+' || {_RE_NAME.format(e=right)} || '($|\\W)') ELSE false END)"
    )


_PART = "is part of|are part of|part of|belongs to|belong to"
_DEPENDS = "depends on|depend on|relies on|rely on|requires|require|needs"
CO_OCCURRENCES = f"""
SELECT a.entity_id AS a, b.entity_id AS b, count(*) AS n,
       {_phrase("ea", _PART, "eb")} AS a_part_b, {_phrase("eb", _PART, "ea")} AS b_part_a,
       {_phrase("ea", _DEPENDS, "eb")} AS a_dep_b, {_phrase("eb", _DEPENDS, "ea")} AS b_dep_a
FROM entity_mentions a
JOIN entity_mentions b ON b.memory_id = a.memory_id AND a.entity_id < b.entity_id
JOIN memories m ON m.id = a.memory_id AND m.owner = $1 AND m.source <> 'import'
CROSS JOIN LATERAL (SELECT lower(m.content) ~ '\\s({_PART}|{_DEPENDS})\\s' AS hinted) h
JOIN entities ea ON ea.id = a.entity_id AND ea.owner = $1
JOIN entities eb ON eb.id = b.entity_id AND eb.owner = $1
WHERE a.entity_id = ANY($2::uuid[]) OR b.entity_id = ANY($2::uuid[])
GROUP BY a.entity_id, b.entity_id
"""


async def run(rc: RunContext, result: RelationResult) -> None:
    entities = await owner_entities(rc.pool, rc.owner)
    edge_rows = await rc.pool.fetch(
        "SELECT source_id, target_id, relation FROM entity_relations WHERE owner = $1 AND relation <> $2",
        rc.owner,
        AFFECTIVE,
    )
    edges = [
        Edge(source_id=str(r["source_id"]), target_id=str(r["target_id"]), relation=r["relation"]) for r in edge_rows
    ]
    connected = {i for e in edges for i in (e.source_id, e.target_id)}
    orphans = [uuid.UUID(e.id) for e in entities if e.id not in connected]
    co_rows = await rc.pool.fetch(CO_OCCURRENCES, rc.owner, orphans) if orphans else []
    co_occurrences = [
        hinted_co_occurrence(
            str(r["a"]),
            str(r["b"]),
            int(r["n"]),
            a_part_of_b=int(r["a_part_b"]),
            b_part_of_a=int(r["b_part_a"]),
            a_depends_on_b=int(r["a_dep_b"]),
            b_depends_on_a=int(r["b_dep_a"]),
        )
        for r in co_rows
    ]
    plan = complete_relations(
        entities,
        edges,
        co_occurrences,
        min_count=rc.cfg.relation_min_count,
        max_edges_per_entity=rc.cfg.relation_max_edges,
    )
    result.add(plan.counts)
    if not plan.new_edges:
        return
    await rc.checkpoint()
    async with rc.pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata, run_id)"
            " SELECT gen_random_uuid(), $1, u.s, u.t, u.r,"
            " jsonb_build_object('weight', u.w, 'inferred', 'co-occurrence'), $6"
            " FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::int[]) AS u(s, t, r, w)"
            " ON CONFLICT (owner, source_id, target_id, relation) WHERE relation <> 'affective_context' DO NOTHING"
            " RETURNING id",
            rc.owner,
            [uuid.UUID(e.source_id) for e in plan.new_edges],
            [uuid.UUID(e.target_id) for e in plan.new_edges],
            [e.relation for e in plan.new_edges],
            [e.weight for e in plan.new_edges],
            uuid.UUID(rc.run_id),
        )
    result.created = len(rows)
