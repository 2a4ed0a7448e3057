"""Phase 4, relation completion (rules, no LLM): orphan entities get edges from co-occurrence.

Entities and their mentions come from the extractor (`entities`, `entity_mentions`).
Two of the owner's entities co-occur when the same memory of the owner (not an imported
one) mentions both; only pairs touching an orphan (no structural edge yet) are counted.
A direction hint comes from the shared texts ("A is part of B", "A depends on B", case-insensitive).
The rules (orphans only, no `part_of`/`depends_on` cycles) are `relation_logic`; the
new edges are inserted in one transaction, idempotently (unique per owner, ends, relation).
"""

from __future__ import annotations

from services.sleep.adapters import entity_store as store
from services.sleep.context import RunContext
from services.sleep.logic.relations import complete_relations
from services.sleep.receipt import RelationResult


async def run(rc: RunContext, result: RelationResult) -> None:
    entities = await store.owner_entities(rc.pool, rc.owner)
    edges = await store.structural_edges(rc.pool, rc.owner)
    connected = {i for e in edges for i in (e.source_id, e.target_id)}
    orphans = [e.id for e in entities if e.id not in connected]
    plan = complete_relations(
        entities,
        edges,
        await store.co_occurrences(rc.pool, rc.owner, orphans),
        min_count=rc.settings.sleep_relation_min_count,
        max_edges_per_entity=rc.settings.sleep_relation_max_edges,
    )
    result.add(plan.counts)
    if not plan.new_edges:
        return
    await rc.checkpoint()
    async with rc.pool.acquire() as conn, conn.transaction():
        result.created = await store.insert_inferred_edges(conn, rc.owner, plan.new_edges, rc.run_id)
