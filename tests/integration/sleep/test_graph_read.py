"""The `entities.list` / `entities.relations` RPCs: an owner's graph, paged, around an entity,
with affective edges' emotion and kind; another owner's graph stays out of every reply."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import msgspec
import pytest
from nats.aio.client import Client

from memoryd.errors import Forbidden
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.graph import EntityListRequest, EntityListResult, RelationListRequest, RelationListResult
from memoryd.subjects import owner_rpc_subject

from .conftest import add_entity, sleep_service
from .test_cli import memoryd


async def add_edge(pool: asyncpg.Pool, owner: str, source: str, target: str, relation: str, **meta: Any) -> str:
    edge = uuid.uuid4()
    await pool.execute(
        "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata)"
        " VALUES ($1, $2, $3, $4, $5, $6::jsonb)",
        edge,
        owner,
        uuid.UUID(source),
        uuid.UUID(target),
        relation,
        meta,
    )
    return str(edge)


async def seed(pool: asyncpg.Pool) -> dict[str, str]:
    ids = {
        "ann": await add_entity(pool, "g1", "Ann", "person"),
        "jazz": await add_entity(pool, "g1", "Jazz", "thing"),
        "piano": await add_entity(pool, "g1", "Piano", "thing"),
        "rust": await add_entity(pool, "g1", "Rust", "thing"),
        "other": await add_entity(pool, "g2", "Jazz of g2", "thing"),
    }
    await pool.execute("UPDATE entities SET mentions = 5 WHERE id = $1", uuid.UUID(ids["jazz"]))
    await add_edge(pool, "g1", ids["piano"], ids["jazz"], "part_of", weight=3, inferred="co-occurrence")
    await add_edge(
        pool, "g1", ids["ann"], ids["jazz"], "affective_context", emotion="joy", evidence=["m1", "m2"],
        promotedToTrait=True,
    )  # fmt: skip
    await add_edge(pool, "g1", ids["ann"], ids["piano"], "affective_context", emotion="anxiety", evidence=["m3"])
    await add_edge(pool, "g2", ids["other"], ids["other"], "related_to")
    return ids


async def test_lists_the_owners_entities_and_edges_with_affect(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    ids = await seed(pool)
    async with sleep_service(nats_server, pg_dsn):
        everything: EntityListResult = await call(nc, "entities.list", EntityListRequest(owner="g1"))
        page: EntityListResult = await call(nc, "entities.list", EntityListRequest(owner="g1", limit=2, offset=1))
        around: EntityListResult = await call(
            nc, "entities.list", EntityListRequest(owner="g1", entity_id=ids["piano"])
        )
        named: EntityListResult = await call(nc, "entities.list", EntityListRequest(owner="g1", q="NN"))
        edges: RelationListResult = await call(nc, "entities.relations", RelationListRequest(owner="g1"))
        of_piano: RelationListResult = await call(
            nc, "entities.relations", RelationListRequest(owner="g1", entity_id=ids["piano"], limit=1)
        )
        affective: RelationListResult = await call(
            nc, "entities.relations", RelationListRequest(owner="g1", relation="affective_context")
        )
        foreign: RelationListResult = await call(
            nc, "entities.relations", RelationListRequest(owner="g1", entity_id=ids["other"])
        )

    assert [(e.name, e.mentions, e.degree) for e in everything.entities] == [
        ("Jazz", 5, 2),
        ("Ann", 1, 2),
        ("Piano", 1, 2),
        ("Rust", 1, 0),
    ]
    assert everything.total == 4
    assert [e.name for e in page.entities] == ["Ann", "Piano"] and page.total == 4
    assert sorted(e.name for e in around.entities) == ["Ann", "Jazz", "Piano"] and around.total == 3
    assert [e.name for e in named.entities] == ["Ann"]

    assert edges.total == 3
    by_pair = {(r.source_name, r.target_name): r for r in edges.relations}
    assert set(by_pair) == {("Piano", "Jazz"), ("Ann", "Jazz"), ("Ann", "Piano")}
    part = by_pair[("Piano", "Jazz")]
    assert (part.relation, part.weight, part.emotion, part.affect) == ("part_of", 3, None, None)
    joy = by_pair[("Ann", "Jazz")]
    assert (joy.relation, joy.emotion, joy.affect, joy.evidence) == ("affective_context", "joy", "trait", ["m1", "m2"])
    assert (by_pair[("Ann", "Piano")].emotion, by_pair[("Ann", "Piano")].affect) == ("anxiety", "occasion")
    assert of_piano.total == 2 and len(of_piano.relations) == 1
    assert {ids["piano"]} <= {of_piano.relations[0].source_id, of_piano.relations[0].target_id}
    assert {r.emotion for r in affective.relations} == {"joy", "anxiety"} and affective.total == 2
    assert foreign.relations == [] and foreign.total == 0


async def test_bound_subject_and_bad_input(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    ids = await seed(pool)
    async with sleep_service(nats_server, pg_dsn):
        own: EntityListResult = await call(
            nc, "entities.list", EntityListRequest(owner="g2"), subject=owner_rpc_subject("entities.list", "g2")
        )
        with pytest.raises(Forbidden):
            await call(
                nc,
                "entities.relations",
                RelationListRequest(owner="g1"),
                subject=owner_rpc_subject("entities.relations", "g2"),
            )
        bad = msgspec.json.encode({"type": "mem.v1.relation_list_request", "owner": "g1", "limit": 0})
        reply = await nc.request("mem.v1.rpc.entities.relations", bad, timeout=5)
        not_uuid = msgspec.json.encode({"type": "mem.v1.entity_list_request", "owner": "g1", "entity_id": "x"})
        reply2 = await nc.request("mem.v1.rpc.entities.list", not_uuid, timeout=5)

    assert [e.id for e in own.entities] == [ids["other"]]
    for raw, field in ((reply.data, "$.limit"), (reply2.data, "$.entity_id")):
        err = msgspec.json.decode(raw)
        assert (err["type"], err["code"], err["field"]) == ("mem.v1.rpc_error", 400, field), err


async def test_entities_cli_lists_entities_and_relations(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool
) -> None:
    ids = await seed(pool)
    url = ("--nats-url", nats_server.url)
    async with sleep_service(nats_server, pg_dsn):
        listed = await memoryd("entities", "list", "--owner", "g1", "--limit", "2", *url)
        as_json = await memoryd("entities", "list", "--owner", "g1", "--entity", ids["rust"], "--json", *url)
        edges = await memoryd("entities", "relations", "--owner", "g1", "--relation", "affective_context", *url)
        bad = await memoryd("entities", "relations", "--owner", "g1", "--entity", "nope", *url)

    code, out, err = listed
    assert code == 0, err
    assert [line.split()[1] for line in out.splitlines()[2:4]] == ["Jazz", "Ann"]
    assert out.splitlines()[-1] == "entities 1-2 of 4"
    assert as_json[0] == 0 and [e["name"] for e in json.loads(as_json[1])["entities"]] == ["Rust"]
    code, out, err = edges
    assert code == 0, err
    assert "affective_context (joy, trait)" in out and "affective_context (anxiety, occasion)" in out
    assert out.splitlines()[-1] == "relations 1-2 of 2"
    assert bad[0] == 1 and "validation" in bad[2] and "entity_id" in bad[2]
