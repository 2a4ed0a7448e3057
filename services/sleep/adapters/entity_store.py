"""The owner's entity graph as the relation and affective phases read it."""

from __future__ import annotations

from services.sleep.logic.relations import Entity
from shared.db.memories import Conn

#: `entity_relations.relation` of affective edges (person -> target, emotion in metadata).
AFFECTIVE = "affective_context"


async def owner_entities(conn: Conn, owner: str) -> list[Entity]:
    """All of the owner's entities, in id order."""
    rows = await conn.fetch("SELECT id, name, kind FROM entities WHERE owner = $1 ORDER BY id", owner)
    return [Entity(id=str(r["id"]), name=r["name"], kind=r["kind"]) for r in rows]
