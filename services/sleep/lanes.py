"""Run lanes: how sleep jobs leave `mem.v1.jobs.sleep`, at most N at once, one per owner.

Two kinds of Postgres session advisory locks, held on the lane's own pooled connection: N *slot*
locks (`SLOT_NAMESPACE`, N = `sleepMaxConcurrentRuns` of the global settings, default 1), one of
which a lane takes *before* it fetches a job, so jobs wait in the stream, in order, until some
replica has room; and one *owner* lock (`runner.owner_lock`), taken without waiting once the job is
known: a busy owner's job goes back to the queue (`OwnerBusy`) and the slot to the next job, so
one owner never holds two slots. Each replica runs `lanes` lanes, each with its own pull
subscription of the one durable consumer (`max_ack_pending` bounds jobs in hand, it does not
serialise). A killed worker's locks close with its connections; its unacked job is redelivered
after `ack_wait_s`. A new limit applies to new runs within `limit_ttl_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import asyncpg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.errors import BadRequestError

from memoryd.errors import MemorydError
from memoryd.schemas.events import SleepRun
from services.sleep.adapters import postgres as store
from services.sleep.config import SleepServiceConfig
from shared.bus.consumer import ConsumerSpec, JobContext, PullConsumer, consumer_config, consumer_spec
from shared.db.advisory import try_lock, unlock
from shared.observability.logging import get_logger
from shared.periodic import wait_or_stop
from shared.settings.env import NatsConfig
from shared.settings.memory import GLOBAL_OWNER

log = get_logger(__name__)

SLOT_NAMESPACE: Final = int.from_bytes(hashlib.sha256(b"memoryd-sleep-slot").digest()[:4], "big", signed=True)
LaneHandler = Callable[[SleepRun, JobContext, asyncpg.Connection], Awaitable[None]]


def sleep_consumer(cfg: SleepServiceConfig, nats: NatsConfig) -> ConsumerSpec:
    """The one durable consumer of sleep jobs; the slot locks limit runs, not `max_ack_pending`."""
    return consumer_spec("sleep", nats, batch=1, ack_wait_s=cfg.ack_wait_s, max_ack_pending=cfg.max_ack_pending)


async def take_slot(conn: asyncpg.Connection, limit: int) -> int | None:
    """Lock a free slot of `0..limit-1` on `conn`; its number, or None when all are taken."""
    for slot in range(limit):
        if await try_lock(conn, (SLOT_NAMESPACE, slot)):
            return slot
    return None


async def release_slot(conn: asyncpg.Connection, slot: int) -> None:
    await unlock(conn, (SLOT_NAMESPACE, slot))


class Lanes:
    """The lanes of one sleep replica (see the module docstring)."""

    def __init__(
        self, pool: asyncpg.Pool, js: JetStreamContext, cfg: SleepServiceConfig, spec: ConsumerSpec, run: LaneHandler
    ) -> None:
        self._pool = pool
        self._js = js
        self._cfg = cfg
        self._spec = spec
        self._run = run
        self._limit = 1
        self._limit_read_at = float("-inf")

    async def limit(self) -> int:
        """`sleepMaxConcurrentRuns` of the global row, read at most every `limit_ttl_s`."""
        if time.monotonic() - self._limit_read_at >= self._cfg.limit_ttl_s:
            try:
                self._limit = (await store.sleep_settings(self._pool, GLOBAL_OWNER)).sleep_max_concurrent_runs
            except MemorydError as exc:  # a bad global row: keep the last good value
                log.warning("sleep.bad_limit", error=exc.description)
            self._limit_read_at = time.monotonic()
        return self._limit

    async def ensure_consumer(self) -> None:
        """Create the durable consumer, or bring an existing one to this configuration."""
        config = consumer_config(self._spec)
        config.name = self._spec.durable
        with contextlib.suppress(BadRequestError):  # an older server that cannot update it
            await self._js.add_consumer(self._spec.stream, config)

    async def run(self, stop: asyncio.Event) -> None:
        await self.ensure_consumer()
        await asyncio.gather(*(self._lane(stop) for _ in range(self._cfg.lanes)))

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[asyncpg.Connection | None]:
        """A pooled connection holding a slot lock, or None when every slot is taken."""
        async with self._pool.acquire() as conn:
            slot = await take_slot(conn, await self.limit())
            if slot is None:
                yield None
                return
            try:
                yield conn
            finally:
                await release_slot(conn, slot)

    async def _lane(self, stop: asyncio.Event) -> None:
        spec = self._spec
        sub = await self._js.pull_subscribe_bind(durable=spec.durable, stream=spec.stream)
        holder: list[asyncpg.Connection] = []

        async def handle(job: SleepRun, ctx: JobContext) -> None:
            await self._run(job, ctx, holder[0])

        consumer = PullConsumer(self._js, spec, SleepRun, handle)
        while not stop.is_set():
            busy = False
            try:
                async with self._slot() as conn:
                    if conn is not None:
                        busy = True
                        try:
                            msgs = await sub.fetch(1, timeout=self._cfg.fetch_timeout_s)
                        except (NatsTimeout, TimeoutError):
                            msgs = []
                        if msgs:
                            holder[:] = [conn]
                            await consumer.process(msgs[0])
            except Exception as exc:  # Postgres or NATS away: wait and retry
                log.warning("sleep.lane_failed", error=f"{type(exc).__name__}: {exc}")
                busy = False
            if not busy:
                poll = self._cfg.lock_poll_s * (0.5 + random.random())  # replicas do not poll in step
                await wait_or_stop(stop, poll)
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
