"""Phase 4: orphan entities get edges from co-occurrence, hinted directions, never a cycle."""

from __future__ import annotations

import uuid

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from services.sleep.logic.relations import reaches

from .conftest import add_entity, add_memory, mention, run_sleep, sleep_service


async def seed_text(pool: asyncpg.Pool, owner: str, text: str, *entity_ids: str) -> str:
    memory_id = await add_memory(pool, owner, text)
    for entity_id in entity_ids:
        await mention(pool, entity_id, memory_id)
    return memory_id


async def test_orphans_get_inferred_edges_without_cycles_and_only_once(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    e = {n: await add_entity(pool, "o1", n, k) for n, k in [
        ("Postgres", "tech"), ("Redis", "tech"), ("Kafka", "tech"), ("Alice", "person"), ("Acme", "thing"),
        ("Team X", "thing"), ("Lonely", "thing"),
    ]}  # fmt: skip
    theirs = {n: await add_entity(pool, "o2", n, "tech") for n in ("Postgres", "Redis")}
    await pool.execute(
        "INSERT INTO entity_relations (id, owner, source_id, target_id, relation) VALUES"
        " ($1, 'o1', $2, $3, 'depends_on'), ($4, 'o1', $5, $6, 'part_of')",
        uuid.uuid4(),
        uuid.UUID(e["Kafka"]),
        uuid.UUID(e["Postgres"]),
        uuid.uuid4(),
        uuid.UUID(e["Team X"]),
        uuid.UUID(e["Acme"]),
    )
    await seed_text(pool, "o1", "Our Postgres depends on Redis for caching.", e["Postgres"], e["Redis"])
    await seed_text(pool, "o1", "Postgres and Redis run on one host.", e["Postgres"], e["Redis"])
    await seed_text(pool, "o1", "Redis depends on Kafka here.", e["Redis"], e["Kafka"])
    await seed_text(pool, "o1", "Alice works at Acme.", e["Alice"], e["Acme"])
    await seed_text(pool, "o1", "Alice met the Acme board.", e["Alice"], e["Acme"])
    await seed_text(pool, "o1", "Acme hired Alice.", e["Alice"], e["Acme"])
    await seed_text(pool, "o2", "Postgres depends on Redis.", theirs["Postgres"], theirs["Redis"])
    async with sleep_service(nats_server, pg_dsn):
        first = await run_sleep(nc, "o1")
        second = await run_sleep(nc, "o1")

    phase = first.phases["relation_completion"]
    assert (phase["entities"], phase["orphans"], phase["created"], phase["cycleDowngraded"]) == (7, 3, 3, 1)
    rows = await pool.fetch("SELECT owner, source_id, target_id, relation, metadata, run_id FROM entity_relations")
    names = {uuid.UUID(v): k for k, v in e.items()}
    new = {
        (names[r["source_id"]], names[r["target_id"]], r["relation"], r["metadata"]["weight"])
        for r in rows
        if r["run_id"] is not None
    }
    assert new == {
        ("Postgres", "Redis", "depends_on", 2),  # the stronger pair first
        (*tuple(sorted(("Redis", "Kafka"), key=lambda n: e[n])), "related_to", 1),  # would close a cycle
        (*tuple(sorted(("Alice", "Acme"), key=lambda n: e[n])), "related_to", 3),
    }
    assert {r["owner"] for r in rows} == {"o1"}  # nothing for the other owner
    graph: dict[str, set[str]] = {}
    for r in rows:
        if r["relation"] in ("part_of", "depends_on"):
            graph.setdefault(str(r["source_id"]), set()).add(str(r["target_id"]))
    assert not any(reaches(graph, t, s) for s, ts in graph.items() for t in ts)
    assert (second.phases["relation_completion"]["orphans"], second.phases["relation_completion"]["created"]) == (1, 0)
