"""An owner's run never reads another owner's memories or entities, and never writes to them."""

from __future__ import annotations

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats

from .conftest import SleepLlm, add_entity, add_memory, ids_in, put_settings, run_sleep, sleep_service
from .test_conflict import pairs_of, vec


async def snapshot(pool: asyncpg.Pool, owner: str) -> list[tuple[object, ...]]:
    rows = await pool.fetch(
        "SELECT id, content, state, updated_at, metadata::text FROM memories WHERE owner = $1 ORDER BY id", owner
    )
    return [tuple(r) for r in rows]


async def test_a_run_reads_and_writes_only_its_owner(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    theirs = []
    for owner in ("o1", "o2"):
        ids = [
            await add_memory(pool, owner, f"{owner} SECRET likes jazz", vector=vec(0), session_id=f"{owner}-s1"),
            await add_memory(pool, owner, f"{owner} SECRET likes jazz a lot", vector=vec(0, 0.05)),
            await add_memory(pool, owner, f"{owner} SECRET old", created_days_ago=100),
        ]
        await add_entity(pool, owner, f"{owner}-person", "person")
        await add_entity(pool, owner, f"{owner}-band", "thing")
        if owner == "o2":
            theirs = ids
    await put_settings(
        pool, "*", {"sleepPatternMinMemories": 1, "sleepAffectiveEnabled": True, "sleepAffectiveMinPool": 1}
    )
    before = await snapshot(pool, "o2")
    llm.phases["conflict"] = lambda prompt: {
        "decisions": [
            {"pair": i, "action": "merge", "keep": "a", "content": "merged"} for i in range(len(pairs_of(prompt)))
        ]
    }
    llm.phases["patterns"] = lambda prompt: {
        "patterns": [{"title": "Jazz", "content": "Likes jazz.", "evidence": [*theirs, *ids_in(prompt)[:1]]}]
    }
    llm.phases["affective"] = lambda prompt: {
        "candidates": [
            {"person": "o2-person", "target": "o1-band", "emotion": "joy", "evidence": ids_in(prompt)[:1]},
            {"person": "o1-person", "target": "o1-band", "emotion": "joy", "evidence": theirs},
        ]
    }
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")

    assert run.status == "ok"
    prompts = "\n".join(p for _phase, p in llm.seen)
    assert "o2" not in prompts and "o1 SECRET" in prompts
    assert await snapshot(pool, "o2") == before
    p = run.phases
    assert (p["conflict_resolution"]["merge"], p["archival_demotion"]["archived"]) == (1, 1)
    assert (p["pattern_discovery"]["created"], p["pattern_discovery"]["evidenceFiltered"]) == (1, 3)
    affective = p["affective_attribution"]
    assert (affective["created"], affective["dropped"], affective["fakeEvidence"]) == (0, 2, 3)
    assert await pool.fetchval("SELECT count(*) FROM entity_relations WHERE owner = 'o2'") == 0
    assert await pool.fetchval("SELECT count(*) FROM content_history WHERE owner = 'o2'") == 0
