"""An ingest process killed (SIGKILL) before its ack: the redelivered event leaves exactly one copy.

Two real crash points, each made deterministic without hooks in the code:
- during the transaction: the test holds a lock on ``turn_hashes`` so the handler blocks
  inside its transaction, then kills the process; PostgreSQL rolls the transaction back;
- after the commit, before the publish: the ``MEM_JOBS`` stream is gone, so the handler
  commits and then cannot publish (it retries), and is killed there. The next process
  finds the event committed but unpublished and publishes its jobs once.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.subjects import EVENTS_STREAM, INGEST_CONSUMER, JOBS_STREAM
from shared.settings.env import ServiceConfig
from tests.support.eventually import eventually
from tests.support.stack import run_services, service_config

from .conftest import JobTap, chat, event_row, publish, turns, wait_event

ACK_WAIT = "2"
pytestmark = pytest.mark.slow


@pytest.fixture
def crash_config(nats_server: EmbeddedNats, pg_dsn: str) -> ServiceConfig:
    return service_config(nats_server.url, pg_dsn, {"MEMORYD_NATS_ACK_WAIT_S": ACK_WAIT})


@pytest.fixture
async def ingest_process(nats_server: EmbeddedNats, pg_dsn: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m services.ingest`` as its own process, ready to serve."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env |= {
        "MEMORYD_NATS_URL": nats_server.url,
        "MEMORYD_PG_DSN": pg_dsn,
        "MEMORYD_METRICS_PORT": "0",
        "MEMORYD_NATS_ACK_WAIT_S": ACK_WAIT,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.ingest",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    assert line.startswith(b"memoryd service ready name=ingest"), line
    yield proc
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


async def _kill(proc: asyncio.subprocess.Process) -> None:
    proc.kill()
    assert await proc.wait() == -9


async def test_killed_inside_the_transaction(
    ingest_process: asyncio.subprocess.Process,
    crash_config: ServiceConfig,
    nc: Client,
    pool: asyncpg.Pool,
    owner: str,
) -> None:
    event = chat(owner, ("user", "I prefer TypeScript."), ("assistant", "OK."), event_id="killed-in-tx")
    async with pool.acquire() as blocker:
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute("LOCK TABLE turn_hashes IN EXCLUSIVE MODE")
        await publish(nc, event, "k1")

        async def waiting_backend() -> int | None:
            pid: int | None = await pool.fetchval(
                "SELECT pid FROM pg_locks WHERE relation = 'turn_hashes'::regclass AND NOT granted LIMIT 1"
            )
            return pid

        backend = await eventually(waiting_backend, what="the handler blocked inside its transaction")
        await _kill(ingest_process)
        await tx.rollback()

    async def backend_gone() -> bool:
        return not await pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", backend)

    await eventually(backend_gone, what="the killed process's backend to end")
    assert await event_row(pool, owner, "killed-in-tx") is None  # rolled back: nothing half-written
    assert await turns(pool, owner) == []

    async with run_services(["ingest"], crash_config):
        await wait_event(pool, owner, "killed-in-tx")
        tap = await eventually(lambda: _extract(JobTap(nc)), what="extract job")
    assert [r["content"] for r in await turns(pool, owner)] == ["I prefer TypeScript.", "OK."]
    assert [j.event_id for j in tap.extract] == ["killed-in-tx"]


async def _extract(tap: JobTap) -> JobTap | None:
    await tap.poll()
    return tap if tap.extract else None


async def test_killed_after_commit_before_publish(
    ingest_process: asyncio.subprocess.Process,
    crash_config: ServiceConfig,
    nc: Client,
    pool: asyncpg.Pool,
    owner: str,
) -> None:
    js = nc.jetstream()
    await js.delete_stream(JOBS_STREAM)  # publishing the jobs will fail after the commit
    event = chat(owner, ("user", "I always commit before pushing."), ("assistant", "Nice."), event_id="killed-pub")
    await publish(nc, event, "p1")
    row = await wait_event(pool, owner, "killed-pub", published=False)
    await asyncio.sleep(1.0)  # let it fail to publish (and retry) at least once
    await _kill(ingest_process)
    row = await event_row(pool, owner, "killed-pub")
    assert row is not None and row["published_at"] is None  # committed, never published
    stored = await turns(pool, owner)
    assert len(stored) == 2

    async with run_services(["ingest"], crash_config):  # re-creates MEM_JOBS, gets the redelivery
        await wait_event(pool, owner, "killed-pub")
        tap = JobTap(nc)
        await eventually(lambda: _extract(tap), what="extract job")
        await publish(nc, event, "p2")  # and a re-publish of the same event changes nothing
        await eventually(lambda: _drained(nc), what="second delivery handled")
        await tap.poll()
    assert [r["id"] for r in await turns(pool, owner)] == [r["id"] for r in stored]
    assert (await wait_event(pool, owner, "killed-pub"))["turns_stored"] == 2
    [job] = tap.extract
    assert [(t.content, t.memory_id) for t in job.turns] == [
        ("I always commit before pushing.", str(stored[0]["id"])),
        ("Nice.", str(stored[1]["id"])),
    ]
    assert sorted(j.memory_id for j in tap.embed) == sorted(str(r["id"]) for r in stored)


async def _drained(nc: Client) -> bool:
    """The ingest consumer has acked everything in the stream."""
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, INGEST_CONSUMER)
    return info.num_pending == 0 and info.num_ack_pending == 0 and info.delivered.stream_seq == 2
