"""Memories whose embed job was lost (never published) get their vector from the sweep, once
the embed queue is idle and they have waited ``MEMORYD_EMBED_SWEEP_MIN_AGE_S``; younger ones
are left to the job that may still be on its way."""

from __future__ import annotations

import asyncpg
import pytest
from nats.aio.client import Client

from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services

from .helpers import add_memories, embedded_count, queue_drained

pytestmark = pytest.mark.integration


async def test_sweep_embeds_memories_whose_job_was_lost(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_EMBED_SWEEP_INTERVAL_S", "0.2")
    monkeypatch.setenv("MEMORYD_EMBED_SWEEP_MIN_AGE_S", "600")
    lost = await add_memories(pool, "sweep-owner", ["I moved to Lisbon in May.", "My sister is called Ana."])
    fresh = await add_memories(pool, "sweep-owner", ["I just bought a kayak."])
    # no job was ever published for any of them; the first two have waited an hour
    await pool.execute(
        "UPDATE memories SET updated_at = now() - interval '1 hour' WHERE id = ANY($1::uuid[])", [m.id for m in lost]
    )
    async with run_services(["embed"], config):
        await eventually(lambda: _all_embedded(pool, [m.id for m in lost]), what="the sweep's vectors")
        await eventually(lambda: queue_drained(nc.jetstream()), what="the sweep's jobs acked")
        assert await embedded_count(pool, [m.id for m in fresh]) == 0  # younger than the minimum age


async def _all_embedded(pool: asyncpg.Pool, ids: list[str]) -> bool:
    return await embedded_count(pool, ids) == len(ids)
