"""The extract service on real NATS and Postgres: rule facts, entities, embed jobs, settings."""

from __future__ import annotations

import uuid
from datetime import timedelta

import asyncpg
import msgspec
from nats.aio.client import Client

from memoryd.schemas.events import Turn
from shared.db import memories
from shared.settings.cache import announce_change
from shared.settings.env import ServiceConfig
from shared.settings.store import put_values
from tests.support.stack import run_services

from .helpers import FOUR_KEYS, TEXT, embed_jobs, entities, facts, job, owner, publish, raw_turn, wait_done


async def test_four_facts_entities_and_embed_jobs(config: ServiceConfig, nc: Client, pool: asyncpg.Pool) -> None:
    alice = owner()
    turn_id = await raw_turn(pool, alice, TEXT)
    extract_job = job(alice, Turn(role="user", content=TEXT, memory_id=turn_id))
    js = nc.jetstream()
    async with run_services(["extract"], config):
        await publish(js, extract_job)
        await wait_done(pool, js, extract_job)
        stored = await facts(pool, alice)
        jobs = await embed_jobs(js, alice)
        ents = await entities(pool, alice)

    assert set(stored) == FOUR_KEYS
    expected = {
        "preference:typescript": ("factual", "User prefers TypeScript", "positive"),
        "decision:postgres_for_this_project": ("episodic", "User will use Postgres for this project", "positive"),
        "pattern:commit_before_pushing": ("factual", "User always commits before pushing", "positive"),
        "preference:python": ("factual", "User does not like Python", "negative"),
    }
    for key, (memory_type, content, polarity) in expected.items():
        row = stored[key]
        assert (row["type"], row["content"], row["source"], row["session_id"]) == (memory_type, content, "rule", "s1")
        meta = row["metadata"]
        assert meta["polarity"] == polarity and meta["source"] == "rule"
        assert meta["category"] == key.split(":")[0]
        assert meta["event_id"] == extract_job.event_id
        assert meta["extracted_at"] == meta["first_extracted_at"] == "2026-11-30T12:00:00+00:00"
    assert sorted((j.memory_id, j.content_hash, j.reason) for j, _ in jobs) == sorted(
        (str(r["id"]), r["content_hash"], "new") for r in stored.values()
    )
    assert sorted(msg_id for _, msg_id in jobs) == sorted(
        f"embed:{r['id']}:{r['content_hash']}" for r in stored.values()
    )
    # each tech term: mentioned by the raw turn and by its fact
    assert ents == {name: ("tech", 2, 2) for name in ("typescript", "postgres", "python")}


async def test_redelivered_job_writes_nothing_twice(config: ServiceConfig, nc: Client, pool: asyncpg.Pool) -> None:
    bob = owner()
    turn_id = await raw_turn(pool, bob, TEXT)
    extract_job = job(bob, Turn(role="user", content=TEXT, memory_id=turn_id))
    js = nc.jetstream()
    async with run_services(["extract"], config):
        await publish(js, extract_job)
        await wait_done(pool, js, extract_job)
        first = await facts(pool, bob)
        first_entities = await entities(pool, bob)
        await publish(js, extract_job)  # the same job again, as after a lost ack
        await publish(js, extract_job)
        await wait_done(pool, js, extract_job, runs=3)
        again = await facts(pool, bob)
        jobs = await embed_jobs(js, bob)
        again_entities = await entities(pool, bob)
    assert set(again) == FOUR_KEYS
    assert {k: (r["id"], r["content_hash"]) for k, r in again.items()} == {
        k: (r["id"], r["content_hash"]) for k, r in first.items()
    }
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1", bob) == 5  # 4 facts + raw turn
    assert len(jobs) == 4  # republished with the same Nats-Msg-Id: deduplicated by JetStream
    assert again_entities == first_entities == {n: ("tech", 2, 2) for n in ("typescript", "postgres", "python")}


async def test_a_changed_fact_is_updated_in_place_and_re_embedded(
    config: ServiceConfig, nc: Client, pool: asyncpg.Pool
) -> None:
    carol = owner()
    js = nc.jetstream()
    first = job(carol, Turn(role="user", content="I like Python."))
    second = msgspec.structs.replace(
        job(carol, Turn(role="user", content="Actually, I don't like Python.")),
        occurred_at=first.occurred_at + timedelta(days=3),
    )
    async with run_services(["extract"], config):
        await publish(js, first)
        await wait_done(pool, js, first)
        before = (await facts(pool, carol))["preference:python"]
        await pool.execute(
            "UPDATE memories SET metadata = metadata || '{\"pinned\": true}'::jsonb WHERE id = $1", before["id"]
        )
        await publish(js, second)
        await wait_done(pool, js, second)
        after = (await facts(pool, carol))["preference:python"]
        jobs = await embed_jobs(js, carol)
    assert after["id"] == before["id"]
    assert (before["content"], after["content"]) == ("User likes Python", "User does not like Python")
    assert after["metadata"]["polarity"] == "negative" and after["metadata"]["pinned"] is True
    assert after["metadata"]["event_id"] == second.event_id
    # the later extraction time, and the first one kept (written by the upsert, in SQL)
    assert after["metadata"]["extracted_at"] == second.occurred_at.isoformat()
    assert (
        after["metadata"]["first_extracted_at"] == before["metadata"]["extracted_at"] == first.occurred_at.isoformat()
    )
    assert [(j.memory_id, j.content_hash, j.reason) for j, _ in jobs] == [
        (str(before["id"]), before["content_hash"], "new"),
        (str(after["id"]), after["content_hash"], "update"),
    ]


async def test_assistant_turns_only_with_the_setting(config: ServiceConfig, nc: Client, pool: asyncpg.Pool) -> None:
    default_owner, opted_in = owner(), owner()
    await put_values(pool, opted_in, {"extractAssistant": True})
    await announce_change(nc, opted_in)
    conversation = (
        Turn(role="user", content="Which database should I pick?"),
        Turn(role="assistant", content="I prefer Postgres."),
        Turn(role="system", content="I prefer Redis."),
    )
    js = nc.jetstream()
    plain, with_assistant = job(default_owner, *conversation), job(opted_in, *conversation)
    async with run_services(["extract"], config):
        await publish(js, plain)
        await publish(js, with_assistant)
        await wait_done(pool, js, plain)
        await wait_done(pool, js, with_assistant)
        default_facts = await facts(pool, default_owner)
        opted_facts = await facts(pool, opted_in)
        default_jobs = await embed_jobs(js, default_owner)
    assert default_facts == {} and default_jobs == []
    assert {k: r["content"] for k, r in opted_facts.items()} == {"preference:postgres": "User prefers Postgres"}


async def test_owners_are_isolated(config: ServiceConfig, nc: Client, pool: asyncpg.Pool) -> None:
    first, second = owner(), owner()
    first_turn = await raw_turn(pool, first, TEXT)
    js = nc.jetstream()
    jobs = [
        job(first, Turn(role="user", content=TEXT, memory_id=first_turn)),
        # the second owner's job names the first owner's turn and a deleted one: neither is linked
        job(second, Turn(role="user", content=TEXT, memory_id=first_turn)),
        job(second, Turn(role="user", content="I love Rust.", memory_id=str(uuid.uuid4()))),
    ]
    async with run_services(["extract"], config):
        for extract_job in jobs:
            await publish(js, extract_job)
        for extract_job in jobs:
            await wait_done(pool, js, extract_job)
        first_facts, second_facts = await facts(pool, first), await facts(pool, second)
        first_entities, second_entities = await entities(pool, first), await entities(pool, second)
    assert set(first_facts) == FOUR_KEYS and set(second_facts) == FOUR_KEYS | {"preference:rust"}
    for key in FOUR_KEYS:
        assert first_facts[key]["id"] != second_facts[key]["id"]
        assert first_facts[key]["owner"] == first and second_facts[key]["owner"] == second
    assert first_entities == {n: ("tech", 2, 2) for n in ("typescript", "postgres", "python")}
    # only the second owner's own fact memories are linked
    assert second_entities == {n: ("tech", 1, 1) for n in ("typescript", "postgres", "python", "rust")}
    cross = await pool.fetchval(
        "SELECT count(*) FROM entity_mentions em JOIN entities e ON e.id = em.entity_id"
        " JOIN memories m ON m.id = em.memory_id WHERE e.owner <> m.owner"
    )
    assert cross == 0


async def test_first_extraction_time_survives_every_upsert(pool: asyncpg.Pool) -> None:
    """``shared.db.memories.upsert_by_key`` keeps ``first_extracted_at`` (rows from before it too)."""
    who = owner()

    async def upsert(key: str, content: str, metadata: dict[str, object]) -> dict[str, object]:
        record, _created, _changed = await memories.upsert_by_key(
            pool, owner=who, key=key, memory_type="factual", content=content, source="rule", metadata=metadata
        )
        return dict(record.metadata)

    assert await upsert("k", "one", {"extracted_at": "t1", "tag": "a"}) == {
        "extracted_at": "t1",
        "first_extracted_at": "t1",
        "tag": "a",
    }
    assert await upsert("k", "two", {"extracted_at": "t2"}) == {
        "extracted_at": "t2",
        "first_extracted_at": "t1",
        "tag": "a",
    }
    assert await upsert("k", "two", {"first_extracted_at": "t0", "extracted_at": "t3"}) == {
        "extracted_at": "t3",
        "first_extracted_at": "t1",  # the stored one wins
        "tag": "a",
    }
    # a row written before the key existed: its extraction time is the first one
    await upsert("old", "x", {})
    await pool.execute(
        "UPDATE memories SET metadata = '{\"extracted_at\": \"t-old\"}'::jsonb WHERE owner = $1 AND key = 'old'", who
    )
    assert (await upsert("old", "y", {"extracted_at": "t4"}))["first_extracted_at"] == "t-old"
    # metadata without an extraction time (API writes, sleep patterns) gains no such key
    assert await upsert("api", "z", {"pinned": True}) == {"pinned": True}
