"""Quotas bound extracted facts too: beyond ``maxMemories`` / ``maxMemoryBytes`` new facts are
not written, counted as ``over_quota`` in ``memoryd_facts_total``; the job completes (its
run is recorded, nothing is redelivered or dead-lettered) and the event's turn stays."""

from __future__ import annotations

import asyncpg
from nats.aio.client import Client

from memoryd.schemas.events import Turn
from shared.observability.metrics import FACTS
from shared.settings.env import ServiceConfig
from shared.settings.store import put_values
from tests.support.stack import run_services

from .helpers import FOUR_KEYS, TEXT, facts, job, owner, publish, raw_turn, wait_done


def over_quota() -> float:
    return sum(FACTS.labels(source, "over_quota")._value.get() for source in ("rule", "llm"))


async def test_facts_beyond_the_quota_are_refused_counted_and_the_job_completes(
    config: ServiceConfig, nc: Client, pool: asyncpg.Pool
) -> None:
    by_count, by_bytes = owner(), owner()
    await put_values(pool, by_count, {"maxMemories": 3})  # the raw turn + 2 facts
    js = nc.jetstream()
    count_job = job(by_count, Turn(role="user", content=TEXT, memory_id=await raw_turn(pool, by_count, TEXT)))
    turn_bytes = len(TEXT.encode())
    await put_values(pool, by_bytes, {"maxMemoryBytes": turn_bytes + 30})  # room for about one short fact
    bytes_job = job(by_bytes, Turn(role="user", content=TEXT, memory_id=await raw_turn(pool, by_bytes, TEXT)))
    before = over_quota()
    async with run_services(["extract"], config):
        await publish(js, count_job)
        await wait_done(pool, js, count_job)  # acked: completed, not redelivered
        stored = await facts(pool, by_count)
        assert len(stored) == 2 and set(stored) < FOUR_KEYS
        assert await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1", by_count) == 3
        assert over_quota() - before == 2

        again = job(by_count, Turn(role="user", content=TEXT), event_id="ev-again")
        await publish(js, again)  # the same facts again: the stored two are unchanged updates, admitted
        await wait_done(pool, js, again)
        assert set(await facts(pool, by_count)) == set(stored)
        assert over_quota() - before == 4

        await publish(js, bytes_job)
        await wait_done(pool, js, bytes_job)
        kept = await facts(pool, by_bytes)
        size = await pool.fetchval("SELECT sum(octet_length(content)) FROM memories WHERE owner = $1", by_bytes)
        assert size <= turn_bytes + 30 and 1 <= len(kept) < 4
        assert over_quota() - before == 4 + (4 - len(kept))
    runs = await pool.fetchval("SELECT count(*) FROM extract_runs WHERE owner = ANY($1::text[])", [by_count, by_bytes])
    assert runs == 3
