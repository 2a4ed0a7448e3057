"""Owner-bound event subjects: mem.v1.events.chat.<owner> is ingested for that owner only."""

from __future__ import annotations

import asyncpg
from nats.aio.client import Client

from memoryd.codec import encode
from memoryd.subjects import owner_events_subject
from shared.service import ServiceContext
from tests.support.eventually import eventually

from .conftest import chat, dead_letters, turns, wait_event


async def test_event_on_its_owners_subject_is_stored_and_another_owners_is_dead_lettered(
    nc: Client, pool: asyncpg.Pool, ingest: ServiceContext, owner: str
) -> None:
    js = nc.jetstream()
    good = chat(owner, ("user", "I prefer green tea."))
    await js.publish(owner_events_subject(owner), encode(good), headers={"Nats-Msg-Id": good.event_id})
    await wait_event(pool, owner, good.event_id)
    assert [t["content"] for t in await turns(pool, owner)] == ["I prefer green tea."]

    spoof = chat("victim-owner", ("user", "I prefer mallory's tools."))
    await js.publish(owner_events_subject(owner), encode(spoof), headers={"Nats-Msg-Id": spoof.event_id})
    letters = await eventually(lambda: dead_letters(nc), what="the spoofed event in the DLQ")
    assert "Forbidden" in letters[-1].error and "victim-owner" in letters[-1].error
    assert await turns(pool, "victim-owner") == []
