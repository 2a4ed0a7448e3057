"""The sleep rules of the spec that cut across phases, through the service: imported memories in
no pool, cross-scope pairs to review, freeze mode, the run's update cap, the affective pool, the
LLM route settings, `sleep.run` with sleep mode off."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.ops import SleepRunRequest

from .conftest import (
    SleepLlm,
    add_entity,
    add_memory,
    ids_in,
    memory_row,
    mention,
    put_settings,
    run_sleep,
    sleep_service,
)
from .test_conflict import by_marker, ledger, pairs_of, seed_pair, vec


async def test_imported_memories_take_part_in_no_phase(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(
        pool, "*", {"sleepPatternMinMemories": 1, "sleepAffectiveEnabled": True, "sleepAffectiveMinPool": 1}
    )
    own = await seed_pair(pool, "o1", 0, "OWN uses vim", "OWN uses neovim")
    imported = [
        await add_memory(pool, "o1", f"IMPORTED note {i}", vector=vec(1, 0.1 * i), source="import") for i in range(2)
    ]
    cold_import = await add_memory(pool, "o1", "IMPORTED cold", created_days_ago=200, source="import")
    cold_own = await add_memory(pool, "o1", "own cold note", created_days_ago=200)
    alice, bob = await add_entity(pool, "o1", "Alice", "person"), await add_entity(pool, "o1", "Bob", "person")
    for entity in (alice, bob):
        await mention(pool, entity, imported[0])  # they co-occur only in an imported memory
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")

    (conflict_prompt,) = llm.prompts("conflict")
    assert pairs_of(conflict_prompt) and all("IMPORTED" not in a + b for a, b in pairs_of(conflict_prompt))
    assert {tuple(sorted(p)) for p in pairs_of(conflict_prompt)} == {("OWN uses neovim", "OWN uses vim")}
    assert own[0] and run.phases["conflict_resolution"]["pairs"] == 1
    for phase in ("patterns", "affective"):
        (prompt,) = llm.prompts(phase)
        assert "IMPORTED" not in prompt and set(ids_in(prompt)) <= {own[0], own[1], cold_own}, phase
    assert (await memory_row(pool, cold_import))["state"] == "active"
    assert (await memory_row(pool, cold_own))["state"] == "archived"
    assert run.phases["archival_demotion"]["scanned"] == 1
    assert run.phases["relation_completion"]["coOccurrences"] == 0
    assert await pool.fetchval("SELECT count(*) FROM entity_relations WHERE owner = 'o1'") == 0


async def test_a_pair_with_a_global_memory_goes_to_the_review_queue_not_the_llm(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    mine = await add_memory(pool, "o1", "Deploys happen on Fridays", vector=vec(0))
    shared_one = await add_memory(pool, "o1", "Deploys happen on Thursdays", vector=vec(0, 0.1), scope="global")
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
        second = await run_sleep(nc, "o1")
    assert llm.prompts("conflict") == []  # nothing for the LLM to judge
    rows = await pool.fetch("SELECT memory_a, memory_b, reason, run_id FROM conflict_pending WHERE owner = 'o1'")
    assert [(str(r["memory_a"]), str(r["memory_b"])) for r in rows] == [tuple(sorted((mine, shared_one)))]
    assert rows[0]["reason"].startswith("cross-scope") and str(rows[0]["run_id"]) == first.run_id
    assert first.phases["conflict_resolution"]["crossScopePending"] == 1
    assert second.phases["conflict_resolution"]["crossScopePending"] == 0  # still unresolved: not queued twice
    assert await ledger(pool, "o1") == {}  # no ledger row: a human decides
    assert [(await memory_row(pool, m))["content"] for m in (mine, shared_one)] == [
        "Deploys happen on Fridays",
        "Deploys happen on Thursdays",
    ]


async def test_freeze_mode_parks_pairs_for_review_without_an_llm_call(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "o1", {"conflictFreezeEnabled": True})
    a, b = await seed_pair(pool, "o1", 0, "MERGE likes tea", "MERGE likes green tea")
    llm.phases["conflict"] = by_marker(
        {"MERGE": lambda i, side: {"pair": i, "action": "merge", "keep": side("MERGE likes tea"), "content": "tea"}}
    )
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")
        again = await run_sleep(nc, "o1")
    assert llm.fake.requests == []  # no LLM call at all: the pair was never shown to the LLM
    phase = run.phases["conflict_resolution"]
    assert (phase["frozen"], phase["merge"], phase["conflict"], phase["batches"]) == (1, 0, 1, 0)
    assert phase["status"] == "ok" and "no LLM call" in phase["reason"]
    assert [(await memory_row(pool, m))["state"] for m in (a, b)] == ["active", "active"]
    assert (await memory_row(pool, a))["content"] == "MERGE likes tea"
    reason = await pool.fetchval("SELECT reason FROM conflict_pending WHERE owner = 'o1'")
    assert reason == "conflictFreezeEnabled: parked for review without an LLM call"
    assert [r["outcome"] for r in (await ledger(pool, "o1")).values()] == ["conflict"]
    # the next run parks nothing again (the pair is recorded and unchanged)
    assert (again.phases["conflict_resolution"]["frozen"], again.phases["conflict_resolution"]["conflict"]) == (0, 0)
    assert await pool.fetchval("SELECT count(*) FROM conflict_pending WHERE owner = 'o1'") == 1


async def test_the_update_cap_holds_for_the_whole_run_and_the_rest_waits(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "o1", {"reflectionUpdateMaxPerRun": 2, "sleepConflictMaxPairs": 1})
    pairs = [await seed_pair(pool, "o1", g, f"UPDATE fact {g}", f"UPDATE fact {g} again") for g in range(3)]
    llm.phases["conflict"] = by_marker(
        {"UPDATE": lambda i, side: {"pair": i, "action": "update", "target": "a", "content": "updated text"}}
    )
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
    one = first.phases["conflict_resolution"]
    assert (one["batches"], one["update"], one["updateCapSkipped"], one["recorded"]) == (3, 2, 1, 2)
    texts = {m: (await memory_row(pool, m))["content"] for pair in pairs for m in pair}
    updated = [pair for pair in pairs if "updated text" in (texts[pair[0]], texts[pair[1]])]
    (held,) = [pair for pair in pairs if pair not in updated]
    recorded = await ledger(pool, "o1")
    assert len(recorded) == 2 and tuple(sorted(uuid.UUID(m) for m in held)) not in recorded
    backlog = await pool.fetch("SELECT memory_a, memory_b FROM conflict_backlog WHERE owner = 'o1'")
    assert [tuple(sorted((str(r["memory_a"]), str(r["memory_b"])))) for r in backlog] == [tuple(sorted(held))]


async def test_the_affective_pool_needs_its_minimum_and_leaves_summaries_out(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "o1", {"sleepAffectiveEnabled": True})
    await add_entity(pool, "o1", "Alice", "person")
    await add_entity(pool, "o1", "Deploys", "thing")
    notes = [await add_memory(pool, "o1", f"Alice worries about deploys {i}") for i in range(3)]
    summary = await add_memory(pool, "o1", "SUMMARY of Alice's week", memory_type="summary")
    async with sleep_service(nats_server, pg_dsn, llm):
        small = await run_sleep(nc, "o1")  # 3 pooled memories (the summary does not count) < 5
        await put_settings(pool, "o1", {"sleepAffectiveMinPool": 3})
        enough = await run_sleep(nc, "o1")
    phase = small.phases["affective_attribution"]
    assert phase["status"] == "skipped" and "sleepAffectiveMinPool" in phase["reason"]
    assert enough.phases["affective_attribution"]["batches"] == 1
    (prompt,) = llm.prompts("affective")
    assert set(ids_in(prompt)) == set(notes) and summary not in prompt


async def test_sleep_model_provider_and_reasoning_effort_reach_the_llm(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(
        pool,
        "o1",
        {
            "sleepPatternMinMemories": 1,
            "sleepProvider": "acme",
            "sleepModel": "thinker-2",
            "sleepLlmModel": "older-name",
            "sleepReasoningEffort": "low",
        },
    )
    await add_memory(pool, "o1", "likes tea")
    async with sleep_service(nats_server, pg_dsn, llm):
        await run_sleep(nc, "o1")
        await put_settings(pool, "o2", {"sleepPatternMinMemories": 1})
        await add_memory(pool, "o2", "likes coffee")
        await run_sleep(nc, "o2")
    first, second = llm.fake.requests
    assert (first["model"], first["reasoning_effort"]) == ("acme/thinker-2", "low")
    assert second["model"] == "fake" and "reasoning_effort" not in second


async def test_a_manual_run_with_sleep_mode_off_runs_and_says_so(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    async with sleep_service(nats_server, pg_dsn):
        off: Any = await call(nc, "sleep.run", SleepRunRequest(owner="o1", wait=True, timeout_s=30))
        await put_settings(pool, "o2", {"sleepModeEnabled": True})
        on: Any = await call(nc, "sleep.run", SleepRunRequest(owner="o2", wait=True, timeout_s=30))
    assert off.run.status == "noop" and off.notice is not None and "sleepModeEnabled is false" in off.notice
    assert on.run.status == "noop" and on.notice is None
    assert await pool.fetchval("SELECT count(*) FROM dream_runs WHERE id = $1", uuid.UUID(off.run_id)) == 1
