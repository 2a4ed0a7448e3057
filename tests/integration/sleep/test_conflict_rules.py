"""Phase 1 rules: full action set and suppression, caps and broken batches, dedupe, stale pairs, isolation."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from shared.db.memories import content_hash

from .conftest import SleepLlm, add_memory, memory_row, put_settings, run_sleep, sleep_service, states
from .test_conflict import FORGET_SCANS, by_marker, key, ledger, pairs_of, seed_pair, vec


async def test_full_set_supersedes_and_differentiates_and_a_differentiated_pair_is_suppressed(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    old = await add_memory(pool, "o1", "SUPERSEDE works at Acme", vector=vec(0))
    new = await add_memory(pool, "o1", "SUPERSEDE works at Globex", vector=vec(0, 0.1))
    await pool.execute("UPDATE memories SET updated_at = now() + interval '1 second' WHERE id = $1", uuid.UUID(new))
    twins = await seed_pair(pool, "o1", 1, "DIFF Python for scripts", "DIFF Python for data science")
    llm.phases["conflict"] = by_marker(
        {
            "SUPERSEDE": lambda i, side: {"pair": i, "action": "supersede"},
            "DIFF": lambda i, side: {"pair": i, "action": "differentiate", "distinctions": "scripts vs analysis"},
        }
    )
    await put_settings(pool, "o1", {"sleepActionSet": "full"})
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
        row = await pool.fetchrow("SELECT * FROM differentiated_pairs WHERE owner = 'o1'")
        contents = [(await memory_row(pool, m))["content"] for m in twins]
        await pool.execute("DELETE FROM conflict_reviewed")  # only the differentiated row may hold it back now
        await pool.execute(FORGET_SCANS)
        second = await run_sleep(nc, "o1")
        await pool.execute(
            "UPDATE memories SET content = 'DIFF Python for ML', content_hash = 'changed', updated_at = now()"
            " WHERE id = $1",
            uuid.UUID(twins[1]),
        )
        await pool.execute(FORGET_SCANS)
        third = await run_sleep(nc, "o1")

    phase = first.phases["conflict_resolution"]
    assert (phase["supersede"], phase["differentiate"], phase["pairs"]) == (1, 1, 2)
    assert await states(pool, old, new) == ["archived", "active"]
    assert (await memory_row(pool, old))["metadata"]["supersededBy"] == new
    a, b = key(*twins)
    assert (row["memory_a"], row["memory_b"], row["distinctions"]) == (a, b, "scripts vs analysis")
    by_id = {twins[0]: "DIFF Python for scripts", twins[1]: "DIFF Python for data science"}
    assert (row["hash_a"], row["hash_b"]) == (content_hash(by_id[str(a)]), content_hash(by_id[str(b)]))
    assert contents == ["DIFF Python for scripts", "DIFF Python for data science"]  # never edits content
    assert (second.phases["conflict_resolution"]["suppressed"], second.phases["conflict_resolution"]["pairs"]) == (1, 0)
    assert (third.phases["conflict_resolution"]["suppressed"], third.phases["conflict_resolution"]["pairs"]) == (0, 1)


async def test_caps_batches_and_a_broken_batch_degrade_the_phase_and_leave_its_pairs_unrecorded(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    pairs = [await seed_pair(pool, "o1", g, f"P{g} a", f"P{g} b", tilt=0.05 + 0.01 * g) for g in range(5)]
    calls = 0

    def flaky(prompt: str) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            return "this is not json"  # the second batch of the first run breaks
        return {"decisions": [{"pair": i, "action": "keep"} for i in range(len(pairs_of(prompt)))]}

    llm.phases["conflict"] = flaky
    await put_settings(pool, "*", {"sleepConflictMaxPairs": 2, "sleepConflictMaxPairsPerRun": 3})
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
        reviewed_after_first = set(await ledger(pool, "o1"))
        second = await run_sleep(nc, "o1")

    phase = first.phases["conflict_resolution"]
    assert first.status == "degraded" and phase["status"] == "degraded"
    assert (phase["candidates"], phase["pairs"], phase["perRunSkipped"]) == (5, 3, 2)
    assert (phase["batches"], phase["batchesFailed"], phase["recorded"]) == (2, 1, 2)
    assert "1 of 2 LLM batches failed" in phase["reason"]
    best_two = {key(*p) for p in pairs[:2]}  # highest similarity first: the smallest tilts
    assert reviewed_after_first == best_two
    again = second.phases["conflict_resolution"]
    # the second scan only probes changed memories: the three waiting pairs come from the backlog
    assert (again["candidates"], again["pairs"], again["perRunSkipped"], again["recorded"]) == (3, 3, 0, 3)
    assert second.status == "noop"


async def test_one_pair_per_memory_stale_pairs_fail_to_apply_and_all_broken_batches_fail_the_run(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    hub = await add_memory(pool, "o1", "HUB base", vector=vec(0))
    close = await add_memory(pool, "o1", "HUB close", vector=vec(0, 0.05))
    await add_memory(pool, "o1", "HUB far", vector=vec(0, -0.3))
    moving = await seed_pair(pool, "o1", 1, "MOVING a", "MOVING b")

    async def judge(prompt: str) -> dict[str, Any]:
        # while the LLM "thinks", one memory of the MOVING pair is edited
        await pool.execute(
            "UPDATE memories SET content = 'edited', content_hash = 'edited', updated_at = now() WHERE id = $1",
            uuid.UUID(moving[0]),
        )
        return by_marker(
            {
                "MOVING": lambda i, side: {"pair": i, "action": "archive", "target": "a"},
                "HUB": lambda i, side: {"pair": i, "action": "keep"},
            }
        )(prompt)

    llm.phases["conflict"] = judge
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")
        llm.phases["conflict"] = lambda prompt: 500
        await pool.execute("DELETE FROM conflict_reviewed")
        failed = await run_sleep(nc, "o1")

    phase = run.phases["conflict_resolution"]
    assert phase["dedupeSkipped"] == 2  # base-far and close-far lose to base-close
    assert {frozenset(p) for p in pairs_of(llm.prompts("conflict")[0])} >= {frozenset({"HUB base", "HUB close"})}
    assert (phase["applyFailed"], phase["archive"], phase["recorded"]) == (1, 0, 1)
    assert set(await ledger(pool, "o1")) == set()  # cleared above; the failed run recorded nothing
    assert await states(pool, *moving) == ["active", "active"]
    assert hub and close
    broken = failed.phases["conflict_resolution"]
    assert failed.status == "failed" and broken["status"] == "failed"
    assert (broken["pairs"], broken["batches"], broken["batchesFailed"]) == (2, 1, 1)


async def test_global_memories_and_other_owners_never_pair(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    mine = await add_memory(pool, "o1", "MINE likes jazz", vector=vec(0))
    glob = await add_memory(pool, "o1", "GLOBAL likes jazz", vector=vec(0, 0.01), scope="global")
    theirs = await add_memory(pool, "o2", "THEIRS likes jazz", vector=vec(0, 0.02))
    twin = await add_memory(pool, "o1", "MINE likes jazz a lot", vector=vec(0, 0.1))
    llm.phases["conflict"] = lambda prompt: {
        "decisions": [{"pair": i, "action": "archive", "target": "a"} for i in range(len(pairs_of(prompt)))]
    }
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")
    prompts = "\n".join(llm.prompts("conflict"))
    assert "GLOBAL" not in prompts and "THEIRS" not in prompts
    assert run.phases["conflict_resolution"]["pairs"] == 1
    assert await states(pool, glob, theirs) == ["active", "active"]
    assert sorted(await states(pool, mine, twin)) == ["active", "archived"]


async def test_two_agents_memories_never_pair(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    """An agent's search sees only its own memories: merging two agents' near-duplicates would take
    one away from its agent, so only pairs of one agent (or of none) are judged."""
    coder = await add_memory(pool, "o1", "CODER likes jazz", vector=vec(0), agent_id="coder")
    travel = await add_memory(pool, "o1", "TRAVEL likes jazz", vector=vec(0, 0.01), agent_id="travel")
    plain = await add_memory(pool, "o1", "PLAIN likes jazz", vector=vec(0, 0.02))
    twin = await add_memory(pool, "o1", "CODER likes jazz a lot", vector=vec(0, 0.1), agent_id="coder")
    llm.phases["conflict"] = lambda prompt: {
        "decisions": [{"pair": i, "action": "archive", "target": "a"} for i in range(len(pairs_of(prompt)))]
    }
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")
    prompts = "\n".join(llm.prompts("conflict"))
    assert "TRAVEL" not in prompts and "PLAIN" not in prompts
    assert run.phases["conflict_resolution"]["pairs"] == 1
    assert await states(pool, travel, plain) == ["active", "active"]
    assert sorted(await states(pool, coder, twin)) == ["active", "archived"]
