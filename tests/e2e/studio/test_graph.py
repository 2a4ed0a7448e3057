"""Memory Studio's Graph tab in Chromium: the owner's entities and relations drawn in SVG, edges
labelled by relation (affective ones by emotion and kind), focus on one entity's neighbours, and
nothing of another owner's graph."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from playwright.async_api import Page, expect

from .conftest import Stack
from .helpers import rest, sign_in

#: (name, kind, mentions) of alice's entities; bob has one of his own.
ENTITIES = [
    ("Alice", "person", 9),
    ("Bruno", "person", 4),
    ("PostgreSQL", "thing", 6),
    ("pgvector", "thing", 3),
    ("memoryd", "thing", 7),
    ("Espresso", "thing", 2),
    ("Berlin", "place", 2),
    ("Marathon", "thing", 1),
]
EDGES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("pgvector", "PostgreSQL", "part_of", {"weight": 4, "inferred": "co-occurrence"}),
    ("memoryd", "PostgreSQL", "depends_on", {"weight": 3, "inferred": "co-occurrence"}),
    ("Alice", "memoryd", "related_to", {"weight": 2, "inferred": "co-occurrence"}),
    ("Bruno", "Berlin", "related_to", {"weight": 2, "inferred": "co-occurrence"}),
    (
        "Alice",
        "Espresso",
        "affective_context",
        {"emotion": "joy", "evidence": ["m1", "m2", "m3"], "promotedToTrait": True},
    ),
    ("Bruno", "Marathon", "affective_context", {"emotion": "pride", "evidence": ["m4"]}),
    ("Alice", "Bruno", "related_to", {"weight": 1, "inferred": "co-occurrence"}),
]


async def seed_graph(pg_dsn: str) -> dict[str, str]:
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
        ids: dict[str, str] = {}
        for owner, rows in (("alice", ENTITIES), ("bob", [("Bob's boat", "thing", 5)])):
            for name, kind, mentions in rows:
                ids[name] = str(uuid.uuid4())
                await conn.execute(
                    "INSERT INTO entities (id, owner, name, normalized, kind, mentions)"
                    " VALUES ($1, $2, $3, lower($3), $4, $5)",
                    uuid.UUID(ids[name]), owner, name, kind, mentions,
                )  # fmt: skip
        for source, target, relation, meta in EDGES:
            await conn.execute(
                "INSERT INTO entity_relations (id, owner, source_id, target_id, relation, metadata)"
                " VALUES (gen_random_uuid(), 'alice', $1, $2, $3, $4::jsonb)",
                uuid.UUID(ids[source]), uuid.UUID(ids[target]), relation, meta,
            )  # fmt: skip
        return ids
    finally:
        await conn.close()


async def test_graph_tab_draws_the_owners_graph(page: Page, stack: Stack, pg_dsn: str, shots: Path) -> None:
    ids = await seed_graph(pg_dsn)
    status, listed = await rest(stack, "alice", "GET", "/v1/relations")
    assert status == 200 and listed["total"] == len(EDGES)

    await sign_in(page, stack, "alice", tab="graph")
    graph = page.locator("#graph-svg")
    await expect(graph.locator("g.node")).to_have_count(len(ENTITIES))
    await expect(graph.locator(".edge")).to_have_count(len(EDGES))
    await expect(graph.locator(".edge.affect")).to_have_count(2)
    labels = await graph.locator("text.edge-label").all_text_contents()
    assert sorted(labels) == sorted(
        ["part of", "depends on", "related to", "related to", "joy · trait", "pride · occasion", "related to"]
    )
    names = await graph.locator("text.node-label").all_text_contents()
    assert sorted(names) == sorted(n for n, _, _ in ENTITIES) and "Bob's boat" not in names
    await expect(page.locator("#graph-summary")).to_have_text("8 of 8 entities, 7 relations (2 affective).")
    table = page.locator("#graph-edges tbody tr")
    await expect(table).to_have_count(len(EDGES))
    await expect(page.locator("#graph-edges")).to_contain_text("joy · trait")
    for node in await graph.locator("g.node circle").all():  # laid out inside the drawing
        cx, cy = float(await node.get_attribute("cx") or -1), float(await node.get_attribute("cy") or -1)
        assert 0 < cx < 880 and 0 < cy < 560
    await page.screenshot(path=str(shots / "graph.png"), full_page=True)

    await graph.locator(f'g.node[data-entity="{ids["PostgreSQL"]}"]').click()
    await expect(page).to_have_url(f"{stack.url}/studio/#/graph/{ids['PostgreSQL']}")
    await expect(page.locator("#graph-summary")).to_contain_text("Around PostgreSQL: 3 of 3 entities, 2 relations")
    await expect(graph.locator("text.node-label")).to_have_text(["memoryd", "PostgreSQL", "pgvector"], timeout=10_000)
    await page.get_by_role("button", name="Whole graph").click()
    await expect(graph.locator("g.node")).to_have_count(len(ENTITIES))

    await page.get_by_label("Find an entity").fill("bru")
    await expect(graph.locator("text.node-label")).to_have_text(["Bruno"])


async def test_graph_tab_for_an_operator_needs_an_owner(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "operator", tab="graph")
    await expect(page.locator("#graph-canvas")).to_contain_text("Pick an owner")
    await page.get_by_label("Owner").fill("bob")
    await page.get_by_label("Owner").press("Enter")
    await expect(page.locator("#graph-svg text.node-label")).to_have_text(["Bob's boat"])
