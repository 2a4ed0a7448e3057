"""Phase 3: evidence filtered to the pool, cap, refresh in place, replays that change nothing."""

from __future__ import annotations

from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats

from .conftest import SleepLlm, add_memory, ids_in, put_settings, run_sleep, sleep_service


async def patterns_of(pool: asyncpg.Pool, owner: str) -> list[asyncpg.Record]:
    return list(
        await pool.fetch(
            "SELECT id, key, content, metadata, source FROM memories"
            " WHERE owner = $1 AND type = 'pattern' ORDER BY key",
            owner,
        )
    )


async def test_fake_evidence_is_filtered_the_cap_holds_and_replays_refresh_in_place(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    runs = [await add_memory(pool, "o1", f"Went running at 6am, day {i}", created_days_ago=i + 1) for i in range(4)]
    await add_memory(pool, "o1", "Outside the lookback window", created_days_ago=90)
    foreign = await add_memory(pool, "o2", "Another owner's memory", created_days_ago=1)
    await put_settings(pool, "*", {"sleepPatternMinMemories": 3, "sleepMaxPatternPerRun": 2})
    reply: dict[str, Any] = {
        "patterns": [
            {"title": "Morning runs", "content": "Runs early.", "evidence": [runs[0], runs[1], "fake", foreign]},
            {"title": "Ghost", "content": "Nothing real.", "evidence": ["00000000-0000-0000-0000-000000000000"]},
            {"title": "  ", "content": "No title."},
            {"title": "Consistency", "content": "Runs daily.", "evidence": [runs[2]]},
            {"title": "Over the cap", "content": "Too many.", "evidence": [runs[3]]},
        ]
    }
    llm.phases["patterns"] = lambda prompt: reply
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
        replays = [await run_sleep(nc, "o1") for _ in range(3)]
        reply["patterns"][0] = {
            "title": "morning  RUNS",
            "content": "Runs early, even on weekends.",
            "evidence": [runs[3]],
        }
        grown = await run_sleep(nc, "o1")

    phase = first.phases["pattern_discovery"]
    assert first.status == "ok"
    assert (phase["pool"], phase["proposed"], phase["created"], phase["refreshed"]) == (4, 5, 2, 0)
    assert (phase["evidenceFiltered"], phase["droppedNoEvidence"], phase["droppedInvalid"], phase["capSkipped"]) == (
        3,
        1,
        1,
        1,
    )
    prompt = llm.prompts("patterns")[0]
    assert sorted(ids_in(prompt)) == sorted(runs)  # the pool: this owner, inside the window
    for again in replays:
        assert again.status == "refreshed"
        p = again.phases["pattern_discovery"]
        assert (p["created"], p["refreshed"], p["unchanged"]) == (0, 2, 2)
    stored = await patterns_of(pool, "o1")
    assert [r["key"] for r in stored] == ["pattern:consistency", "pattern:morning runs"]
    morning = stored[1]
    assert morning["content"] == "Runs early, even on weekends."
    assert sorted(morning["metadata"]["evidence"]) == sorted([runs[0], runs[1], runs[3]])
    assert morning["source"] == "sleep" and morning["metadata"]["title"] == "Morning runs"
    history = await pool.fetch("SELECT old_content, reason FROM content_history WHERE memory_id = $1", morning["id"])
    assert [(h["old_content"], h["reason"]) for h in history] == [("Runs early.", "sleep:refresh")]
    assert grown.phases["pattern_discovery"]["refreshed"] == 2 and grown.phases["pattern_discovery"]["unchanged"] == 1
    assert await patterns_of(pool, "o2") == []


async def test_too_few_memories_skip_the_phase_with_a_reason(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await add_memory(pool, "o1", "Only one memory", created_days_ago=1)
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")
    phase = run.phases["pattern_discovery"]
    assert (phase["status"], phase["reason"], phase["pool"]) == (
        "skipped",
        "fewer than 100 memories in the lookback window",
        1,
    )
    assert llm.prompts("patterns") == []
