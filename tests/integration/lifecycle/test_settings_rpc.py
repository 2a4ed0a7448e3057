"""settings.get/put over RPC: owner over global, validation naming the field, and a change
made through ingest applied by the retrieve service within a second."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.errors import ValidationFailed
from memoryd.rpc import call
from memoryd.schemas.ops import SettingsGetRequest, SettingsPutRequest
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.db import memories
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services


@pytest.fixture
async def services(config: ServiceConfig) -> AsyncIterator[dict[str, ServiceContext]]:
    async with run_services(["ingest", "retrieve"], config) as ctxs:
        yield ctxs


async def test_owner_overrides_global_and_sources_are_reported(nc: Client, services: dict[str, ServiceContext]) -> None:
    owner = f"o-{uuid.uuid4().hex[:8]}"
    await call(nc, "settings.put", SettingsPutRequest(values={"maxTokens": 900, "sleepIdleMinutes": 9}))
    await call(nc, "settings.put", SettingsPutRequest(owner=owner, values={"maxTokens": 300, "strategy": "recent"}))
    mine = await call(nc, "settings.get", SettingsGetRequest(owner=owner))
    other = await call(nc, "settings.get", SettingsGetRequest(owner="someone-else"))
    assert (mine.settings["maxTokens"], mine.sources["maxTokens"]) == (300, "owner")
    assert (mine.settings["sleepIdleMinutes"], mine.sources["sleepIdleMinutes"]) == (9, "global")
    assert mine.settings["strategy"] == "recent" and mine.sources["retentionDays"] == "default"
    assert other.settings["maxTokens"] == 900 and other.settings["sleepModeEnabled"] is False
    await call(nc, "settings.put", SettingsPutRequest(values={"maxTokens": 2000, "sleepIdleMinutes": 5}))


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"maxTokens": 16001}, "maxTokens"),
        ({"retentionDays": 0}, "retentionDays"),
        ({"strategy": "magic"}, "strategy"),
        ({"noSuchSetting": 1}, "noSuchSetting"),
        ({"sleepConflictStrictness": "extreme"}, "sleepConflictStrictness"),
        ({"sleepAffectiveTraitMinSessions": 11}, "sleepAffectiveTraitMinSessions"),
        ({"sleepArchiveDays": 100, "sleepCompressDays": 50}, "sleepCompressDays"),
    ],
)
async def test_invalid_settings_are_400_naming_the_field(
    nc: Client, pool: asyncpg.Pool, services: dict[str, ServiceContext], values: dict, field: str
) -> None:
    owner = f"o-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ValidationFailed, match=field):
        await call(nc, "settings.put", SettingsPutRequest(owner=owner, values=values))
    assert await pool.fetchval("SELECT count(*) FROM settings WHERE owner = $1", owner) == 0


async def test_change_through_ingest_is_applied_by_retrieve_within_a_second(
    nc: Client, pool: asyncpg.Pool, services: dict[str, ServiceContext]
) -> None:
    owner = f"o-{uuid.uuid4().hex[:8]}"
    await memories.insert(pool, owner=owner, memory_type="factual", content="User prefers tea", source="api")
    req = RetrieveRequest(owner=owner, query="tea", strategy="exact")
    first = await call(nc, "retrieve", req)
    assert [m.content for m in first.memories] == ["User prefers tea"]  # now cached by retrieve
    await call(nc, "settings.put", SettingsPutRequest(owner=owner, values={"enabled": False}))

    async def disabled() -> RetrieveResult | None:
        result = await call(nc, "retrieve", req)
        return result if result.disabled_reason else None

    result = await eventually(disabled, "retrieve to use the new settings", timeout=1.0, interval=0.02)
    assert result.memories == []
