"""Phase 5: opt-in, validated candidates, replays without second edges, traits per target, downgrades."""

from __future__ import annotations

import random
from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats

from .conftest import SleepLlm, add_entity, add_memory, put_settings, run_sleep, sleep_service


async def edges(pool: asyncpg.Pool, owner: str) -> list[asyncpg.Record]:
    return list(
        await pool.fetch(
            "SELECT id, source_id, target_id, metadata FROM entity_relations"
            " WHERE owner = $1 AND relation = 'affective_context' ORDER BY created_at, id",
            owner,
        )
    )


async def seed(pool: asyncpg.Pool) -> tuple[dict[str, str], list[str]]:
    entities = {
        n: await add_entity(pool, "o1", n, k)
        for n, k in [("Alice", "person"), ("Bob", "person"), ("Friday deploys", "thing"), ("Flaky tests", "thing")]
    }
    memories = [
        await add_memory(
            pool, "o1", f"note {i}: Alice and Bob talk about deploys and tests", session_id=f"s{i // 2 + 1}"
        )
        for i in range(6)
    ]  # two memories in each of s1, s2, s3
    return entities, memories


async def test_disabled_and_too_few_entities_skip_with_a_reason(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await add_entity(pool, "o1", "Alice", "person")
    await add_memory(pool, "o1", "Alice is nervous")
    async with sleep_service(nats_server, pg_dsn, llm):
        disabled = await run_sleep(nc, "o1")
        await put_settings(pool, "o1", {"sleepAffectiveEnabled": True})
        few = await run_sleep(nc, "o1")
    assert (disabled.phases["affective_attribution"]["status"], disabled.phases["affective_attribution"]["reason"]) == (
        "skipped",
        "disabled",
    )
    phase = few.phases["affective_attribution"]
    assert (phase["status"], phase["reason"], phase["entities"]) == ("skipped", "fewer than 2 entities", 1)
    assert llm.prompts("affective") == []


async def test_replaying_a_batch_with_shuffled_evidence_creates_no_second_edge(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    entities, m = await seed(pool)
    await put_settings(pool, "*", {"sleepAffectiveEnabled": True})
    evidence = [m[0], m[1], m[2], "not-a-memory"]
    rng = random.Random(7)

    def reply(prompt: str) -> dict[str, Any]:
        shuffled = evidence[:]
        rng.shuffle(shuffled)
        return {
            "candidates": [
                {"person": "Alice", "target": "friday  DEPLOYS", "emotion": "Anxiety", "kind": "occasion",
                 "evidence": shuffled, "why": "mentions stress"},
                {"person": "Carol", "target": "Friday deploys", "emotion": "joy", "evidence": [m[0]]},
                {"person": "Alice", "target": "Flaky tests", "emotion": " ", "evidence": [m[0]]},
            ]
        }  # fmt: skip

    llm.phases["affective"] = reply
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
        replays = [await run_sleep(nc, "o1") for _ in range(3)]

    phase = first.phases["affective_attribution"]
    assert first.status == "ok"
    assert (phase["candidates"], phase["created"], phase["dropped"], phase["fakeEvidence"]) == (3, 1, 2, 1)
    assert "[" + m[0] + "] (session s1)" in llm.prompts("affective")[0]
    for again in replays:
        p = again.phases["affective_attribution"]
        assert (again.status, p["created"], p["mergeUnchanged"], p["merged"]) == ("refreshed", 0, 1, 0)
    stored = await edges(pool, "o1")
    assert len(stored) == 1
    edge = stored[0]
    assert (str(edge["source_id"]), str(edge["target_id"])) == (entities["Alice"], entities["Friday deploys"])
    meta = edge["metadata"]
    assert meta["emotion"] == "anxiety" and sorted(meta["evidence"]) == sorted(m[:3])
    assert (sorted(meta["sessions"]), meta["sessionCount"]) == (["s1", "s2"], 2)
    assert meta["lastMergedRunId"] == replays[-1].run_id


async def test_traits_per_target_become_patterns_and_a_two_session_trait_is_downgraded(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    entities, m = await seed(pool)
    await put_settings(pool, "*", {"sleepAffectiveEnabled": True})
    occasion = {"person": "Alice", "target": "Friday deploys", "emotion": "anxiety", "evidence": [m[0]]}
    llm.phases["affective"] = lambda prompt: {"candidates": [occasion]}
    traits = [
        {"person": "Alice", "target": "Friday deploys", "emotion": "anxiety", "kind": "trait",
         "evidence": [m[0], m[2], m[4]], "why": "every deploy"},
        {"person": "Alice", "target": "Flaky tests", "emotion": "anxiety", "kind": "trait",
         "evidence": [m[1], m[3], m[5]]},
        {"person": "Bob", "target": "Flaky tests", "emotion": "annoyance", "kind": "trait", "evidence": [m[0], m[3]]},
    ]  # fmt: skip
    async with sleep_service(nats_server, pg_dsn, llm):
        await run_sleep(nc, "o1")  # one occasion edge first
        llm.phases["affective"] = lambda prompt: {"candidates": traits}
        run = await run_sleep(nc, "o1")
        replay = await run_sleep(nc, "o1")

    phase = run.phases["affective_attribution"]
    assert (phase["traitsCreated"], phase["downgraded"], phase["created"], phase["promoted"]) == (2, 1, 1, 1)
    patterns = await pool.fetch(
        "SELECT key, content, metadata FROM memories WHERE owner = 'o1' AND type = 'pattern' ORDER BY key"
    )
    titles = sorted(p["metadata"]["title"] for p in patterns)
    assert titles == ["Alice feels anxiety about Flaky tests", "Alice feels anxiety about Friday deploys"]
    assert all(p["metadata"]["sessionCount"] == 3 for p in patterns)
    by_pair = {(str(e["source_id"]), str(e["target_id"])): e["metadata"] for e in await edges(pool, "o1")}
    promoted = by_pair[(entities["Alice"], entities["Friday deploys"])]
    assert (promoted["promotedToTrait"], promoted["traitSessionCount"], promoted["sessionCount"]) == (True, 3, 1)
    downgraded = by_pair[(entities["Bob"], entities["Flaky tests"])]
    assert (downgraded["emotion"], downgraded["sessionCount"], downgraded["promotedToTrait"]) == ("annoyance", 2, False)
    again = replay.phases["affective_attribution"]
    assert replay.status == "refreshed"
    assert (again["traitsCreated"], again["traitsRefreshed"], again["traitsUnchanged"], again["created"]) == (
        0,
        2,
        2,
        0,
    )
    count = await pool.fetchval("SELECT count(*) FROM memories WHERE owner = 'o1' AND type = 'pattern'")
    assert count == 2
