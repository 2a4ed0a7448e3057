"""Reading the owner's entity graph for the ``entities.*`` RPCs: pages of entities and edges.

Every statement names its owner, so an entity id of another owner finds nothing. The
phases that write the graph use ``entity_store``; this module only reads.
"""

from __future__ import annotations

import uuid
from typing import Any

from memoryd.schemas.graph import (
    AFFECTIVE_RELATION,
    EntityListRequest,
    EntityRecord,
    RelationListRequest,
    RelationRecord,
)
from shared.db.memories import Conn

_DEGREE = (
    "(SELECT count(*) FROM entity_relations r WHERE r.owner = e.owner AND (r.source_id = e.id OR r.target_id = e.id))"
)
#: with an entity: itself and the entities one edge away
_AROUND = (
    " AND ($2::uuid IS NULL OR e.id = $2 OR e.id IN ("
    " SELECT CASE WHEN r.source_id = $2 THEN r.target_id ELSE r.source_id END FROM entity_relations r"
    " WHERE r.owner = $1 AND (r.source_id = $2 OR r.target_id = $2)))"
)
_ENTITY_WHERE = (
    "WHERE e.owner = $1" + _AROUND + " AND ($3::text IS NULL OR strpos(lower(e.name), lower($3)) > 0)"
    " AND ($4::text IS NULL OR e.kind = $4)"
)
_RELATION_WHERE = (
    "WHERE r.owner = $1 AND ($2::uuid IS NULL OR r.source_id = $2 OR r.target_id = $2)"
    " AND ($3::text IS NULL OR r.relation = $3)"
)


def _uuid(value: str | None) -> uuid.UUID | None:
    return uuid.UUID(value) if value is not None else None


async def list_entities(conn: Conn, req: EntityListRequest) -> tuple[list[EntityRecord], int]:
    """One page of the owner's entities (most mentioned, then by name) and how many match."""
    args = (req.owner, _uuid(req.entity_id), req.q, req.kind)
    total = await conn.fetchval(f"SELECT count(*) FROM entities e {_ENTITY_WHERE}", *args)
    rows = await conn.fetch(
        f"SELECT e.id, e.name, e.kind, e.mentions, e.created_at, e.updated_at, {_DEGREE} AS degree"
        f" FROM entities e {_ENTITY_WHERE} ORDER BY e.mentions DESC, e.name, e.id LIMIT $5 OFFSET $6",
        *args,
        req.limit,
        req.offset,
    )
    records = [
        EntityRecord(
            id=str(r["id"]),
            name=r["name"],
            kind=r["kind"],
            mentions=int(r["mentions"]),
            degree=int(r["degree"]),
            created_at=r["created_at"],
            updated_at=r["updated_at"],
        )
        for r in rows
    ]
    return records, int(total or 0)


def _relation(row: Any) -> RelationRecord:
    meta: dict[str, Any] = dict(row["metadata"] or {})
    affective = row["relation"] == AFFECTIVE_RELATION
    weight = meta.get("weight")
    return RelationRecord(
        id=str(row["id"]),
        source_id=str(row["source_id"]),
        target_id=str(row["target_id"]),
        source_name=row["source_name"],
        target_name=row["target_name"],
        relation=row["relation"],
        emotion=(str(meta.get("emotion") or "") or None) if affective else None,
        affect=("trait" if meta.get("promotedToTrait") else "occasion") if affective else None,
        evidence=[str(e) for e in meta.get("evidence") or ()],
        weight=int(weight) if isinstance(weight, int | float) else None,
        metadata=meta,
        run_id=str(row["run_id"]) if row["run_id"] is not None else None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def list_relations(conn: Conn, req: RelationListRequest) -> tuple[list[RelationRecord], int]:
    """One page of the owner's edges (newest first) with both ends' names, and how many match."""
    args = (req.owner, _uuid(req.entity_id), req.relation)
    total = await conn.fetchval(f"SELECT count(*) FROM entity_relations r {_RELATION_WHERE}", *args)
    rows = await conn.fetch(
        "SELECT r.id, r.source_id, r.target_id, r.relation, r.metadata, r.run_id, r.created_at, r.updated_at,"
        " s.name AS source_name, t.name AS target_name FROM entity_relations r"
        " JOIN entities s ON s.id = r.source_id AND s.owner = r.owner"
        " JOIN entities t ON t.id = r.target_id AND t.owner = r.owner"
        f" {_RELATION_WHERE} ORDER BY r.created_at DESC, r.id LIMIT $4 OFFSET $5",
        *args,
        req.limit,
        req.offset,
    )
    return [_relation(r) for r in rows], int(total or 0)
