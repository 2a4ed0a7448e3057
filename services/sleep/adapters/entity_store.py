"""The owner's entity graph as the relation and affective phases read and extend it: entities,
edges, co-occurrences in the owner's memories (with the direction hints of their texts).

Every statement names its owner; imported memories (``source='import'``) are not read.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from services.sleep.logic.affective import AffectiveEdge
from services.sleep.logic.relations import CoOccurrence, Edge, Entity, NewEdge, hinted_co_occurrence
from shared.db.memories import Conn

#: `entity_relations.relation` of affective edges (person -> target, emotion in metadata).
AFFECTIVE = "affective_context"

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


async def owner_entities(conn: Conn, owner: str) -> list[Entity]:
    """All of the owner's entities, in id order."""
    rows = await conn.fetch("SELECT id, name, kind FROM entities WHERE owner = $1 ORDER BY id", owner)
    return [Entity(id=str(r["id"]), name=r["name"], kind=r["kind"]) for r in rows]


async def structural_edges(conn: Conn, owner: str) -> list[Edge]:
    """The owner's edges but the affective ones."""
    rows = await conn.fetch(
        "SELECT source_id, target_id, relation FROM entity_relations WHERE owner = $1 AND relation <> $2",
        owner,
        AFFECTIVE,
    )
    return [Edge(source_id=str(r["source_id"]), target_id=str(r["target_id"]), relation=r["relation"]) for r in rows]


async def co_occurrences(conn: Conn, owner: str, entity_ids: Sequence[str]) -> list[CoOccurrence]:
    """Pairs of the owner's entities named in the same memory, one of them among ``entity_ids``."""
    if not entity_ids:
        return []
    rows = await conn.fetch(CO_OCCURRENCES, owner, [uuid.UUID(i) for i in entity_ids])
    return [
        hinted_co_occurrence(
            str(r["a"]),
            str(r["b"]),
            int(r["n"]),
            a_part_of_b=int(r["a_part_b"]),
            b_part_of_a=int(r["b_part_a"]),
            a_depends_on_b=int(r["a_dep_b"]),
            b_depends_on_a=int(r["b_dep_a"]),
        )
        for r in rows
    ]


async def insert_inferred_edges(conn: Conn, owner: str, edges: Sequence[NewEdge], run_id: str) -> int:
    """Insert co-occurrence edges (an existing one is left alone); how many were new."""
    rows = await conn.fetch(
        "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata, run_id)"
        " SELECT gen_random_uuid(), $1, u.s, u.t, u.r,"
        " jsonb_build_object('weight', u.w, 'inferred', 'co-occurrence'), $6"
        " FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::int[]) AS u(s, t, r, w)"
        " ON CONFLICT (owner, source_id, target_id, relation) WHERE relation <> 'affective_context' DO NOTHING"
        " RETURNING id",
        owner,
        [uuid.UUID(e.source_id) for e in edges],
        [uuid.UUID(e.target_id) for e in edges],
        [e.relation for e in edges],
        [e.weight for e in edges],
        uuid.UUID(run_id),
    )
    return len(rows)


# --- affective edges ------------------------------------------------------------------------
def _affective_edge(row: Any) -> AffectiveEdge:
    meta: dict[str, Any] = row["metadata"] or {}
    return AffectiveEdge(
        edge_id=str(row["id"]),
        person_id=str(row["source_id"]),
        target_id=str(row["target_id"]),
        emotion=str(meta.get("emotion") or ""),
        evidence=tuple(str(e) for e in meta.get("evidence") or ()),
        sessions=tuple(str(s) for s in meta.get("sessions") or ()),
        promoted_to_trait=bool(meta.get("promotedToTrait", False)),
        trait_session_count=int(meta.get("traitSessionCount") or 0),
        last_merged_run_id=meta.get("lastMergedRunId"),
    )


async def affective_edges(conn: Conn, owner: str) -> list[AffectiveEdge]:
    rows = await conn.fetch(
        "SELECT id, source_id, target_id, metadata FROM entity_relations WHERE owner = $1 AND relation = $2",
        owner,
        AFFECTIVE,
    )
    return [_affective_edge(r) for r in rows]


async def mentioned_entities(conn: Conn, memory_ids: Sequence[str]) -> set[str]:
    """Ids of the entities these memories mention."""
    rows = await conn.fetch(
        "SELECT DISTINCT entity_id FROM entity_mentions WHERE memory_id = ANY($1::uuid[])",
        [uuid.UUID(m) for m in memory_ids],
    )
    return {str(r["entity_id"]) for r in rows}


async def insert_affective_edge(
    conn: Conn, owner: str, person_id: str, target_id: str, metadata: dict[str, Any], run_id: str
) -> None:
    await conn.execute(
        "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata, run_id)"
        " VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)",
        uuid.uuid4(),
        owner,
        uuid.UUID(person_id),
        uuid.UUID(target_id),
        AFFECTIVE,
        metadata,
        uuid.UUID(run_id),
    )


async def update_affective_edge(conn: Conn, owner: str, edge_id: str, metadata: dict[str, Any]) -> None:
    """Merge ``metadata`` into an affective edge's."""
    await conn.execute(
        "UPDATE entity_relations SET metadata = metadata || $3::jsonb, updated_at = now()"
        " WHERE owner = $1 AND id = $2 AND relation = 'affective_context'",
        owner,
        uuid.UUID(edge_id),
        metadata,
    )
