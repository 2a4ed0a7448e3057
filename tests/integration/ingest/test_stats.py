"""``memory.stats`` and the list's ``source`` filter (what Memory Studio's cards and filters show)."""

from __future__ import annotations

import asyncpg
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.rpc import call
from memoryd.schemas.memory import MemoryListRequest, MemoryListResult, MemoryStatsRequest, MemoryStatsResult


async def test_stats_count_by_type_state_and_source(
    client: MemoryClient, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    empty: MemoryStatsResult = await call(nc, "memory.stats", MemoryStatsRequest(owner=owner))
    assert (empty.total, empty.tokens, empty.by_type, empty.last_activity) == (0, 0, {}, None)

    a = await client.create(owner, "User prefers tea over coffee")  # 28 chars: 7 tokens
    await client.create(owner, "Deploys on Fridays are frozen", memory_type="procedural")  # 29 chars: 8 tokens
    await client.create(owner + "-other", "Another owner's memory is never counted")
    await pool.execute("UPDATE memories SET state = 'archived', source = 'sleep' WHERE id = $1::uuid", a.memory.id)

    stats: MemoryStatsResult = await call(nc, "memory.stats", MemoryStatsRequest(owner=owner))
    assert (stats.total, stats.tokens) == (2, 15)
    assert stats.by_type == {"factual": 1, "procedural": 1}
    assert stats.by_state == {"active": 1, "archived": 1}
    assert stats.by_source == {"api": 1, "sleep": 1}
    assert stats.last_activity is not None and stats.last_activity >= a.memory.created_at

    by_source: MemoryListResult = await call(nc, "memory.list", MemoryListRequest(owner=owner, source="sleep"))
    assert [m.id for m in by_source.memories] == [a.memory.id] and by_source.total == 1
