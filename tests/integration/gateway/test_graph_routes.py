"""``GET /v1/entities`` and ``GET /v1/relations`` against a real stack: an owner key reads its own
graph (affective edges with emotion and kind), never another owner's; bad input is a typed 400."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def entity(pool: asyncpg.Pool, owner: str, name: str, kind: str) -> str:
    entity_id = uuid.uuid4()
    await pool.execute(
        "INSERT INTO entities (id, owner, name, normalized, kind) VALUES ($1, $2, $3, lower($3), $4)",
        entity_id,
        owner,
        name,
        kind,
    )
    return str(entity_id)


async def edge(
    pool: asyncpg.Pool, owner: str, source: str, target: str, relation: str, meta: dict[str, object]
) -> None:
    await pool.execute(
        "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata)"
        " VALUES (gen_random_uuid(), $1, $2, $3, $4, $5::jsonb)",
        owner,
        uuid.UUID(source),
        uuid.UUID(target),
        relation,
        meta,
    )


async def test_an_owner_key_reads_its_own_graph(stack: Stack, pool: asyncpg.Pool) -> None:
    ann = await entity(pool, stack.alice, "Ann", "person")
    chess = await entity(pool, stack.alice, "Chess", "thing")
    await edge(pool, stack.alice, ann, chess, "affective_context", {"emotion": "joy", "evidence": ["e1"]})
    bobs = await entity(pool, stack.bob, "Bob's secret", "thing")
    await edge(pool, stack.bob, bobs, bobs, "related_to", {})

    async with stack.client(stack.alice_key) as alice:
        entities = await alice.get("/v1/entities")
        relations = await alice.get("/v1/relations", params={"entity_id": chess})
        around_bobs = await alice.get("/v1/relations", params={"entity_id": bobs})
        others = await alice.get("/v1/entities", params={"owner": stack.bob})
        bad_id = await alice.get("/v1/relations", params={"entity_id": "not-a-uuid"})
        bad_limit = await alice.get("/v1/entities", params={"limit": "5000"})
    async with stack.client(stack.operator_key) as op:
        bob_graph = await op.get("/v1/entities", params={"owner": stack.bob})

    assert entities.status_code == 200, entities.text
    assert {(e["name"], e["kind"], e["degree"]) for e in entities.json()["entities"]} == {
        ("Ann", "person", 1),
        ("Chess", "thing", 1),
    }
    assert entities.json()["total"] == 2
    [rel] = relations.json()["relations"]
    assert (rel["source_name"], rel["target_name"], rel["relation"], rel["emotion"], rel["affect"]) == (
        "Ann",
        "Chess",
        "affective_context",
        "joy",
        "occasion",
    )
    assert around_bobs.json() == {"type": "mem.v1.relation_list_result", "relations": [], "total": 0}
    assert others.status_code == 403 and others.json()["err_code"] == "forbidden"
    for bad, field in ((bad_id, "$.entity_id"), (bad_limit, "$.limit")):
        assert bad.status_code == 400 and bad.headers["content-type"] == "application/problem+json"
        assert bad.json()["field"] == field
    assert [e["name"] for e in bob_graph.json()["entities"]] == ["Bob's secret"]
