"""A settings change made through one process is seen by another within a second."""

from __future__ import annotations

import asyncpg
from nats.aio.client import Client

from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from shared.settings.cache import SettingsCache, announce_change
from shared.settings.env import NatsConfig
from shared.settings.store import put_values
from tests.support.eventually import eventually


async def test_change_in_one_replica_is_visible_in_another(
    pool: asyncpg.Pool, nc: Client, nats_server: EmbeddedNats
) -> None:
    other_nc = await connect(NatsConfig(url=nats_server.url), "replica-2")
    mine, theirs = SettingsCache(pool, ttl_s=3600), SettingsCache(pool, ttl_s=3600)
    await mine.start(nc)
    await theirs.start(other_nc)
    try:
        assert (await theirs.get("dora")).max_tokens == 2000  # now cached for an hour
        await put_values(pool, "dora", {"maxTokens": 300})
        await announce_change(nc, "dora")

        async def dora_updated() -> bool:
            return (await theirs.get("dora")).max_tokens == 300

        await eventually(dora_updated, "the owner's change on the other replica", timeout=1.0, interval=0.01)
        # a global change drops every owner's entry
        assert (await theirs.get("erin")).strategy == "hybrid"
        await put_values(pool, None, {"strategy": "exact"})
        await announce_change(nc, None)

        async def erin_updated() -> bool:
            return (await theirs.get("erin")).strategy == "exact"

        await eventually(erin_updated, "the global change on the other replica", timeout=1.0, interval=0.01)
        assert (await theirs.get("dora")).max_tokens == 300  # the owner value still overrides
    finally:
        await put_values(pool, None, {"strategy": "hybrid"})
        await mine.stop()
        await theirs.stop()
        await other_nc.close()
