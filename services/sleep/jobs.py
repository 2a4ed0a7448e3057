"""Queueing a run: the `queued` row, then the `SleepRun` on `mem.v1.jobs.sleep` with its msg id.

Scheduled runs get a deterministic id, `uuid5(namespace, sleep_msg_id(owner, slot))`:
several schedulers (or one scheduler on several ticks) publishing the same due run write
one row and publish one message (the stream drops repeated `Nats-Msg-Id`s within its
duplicate window; past it, the worker drops a job whose row is already finished). Manual
runs get a random id and a msg id of their own.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Final

import asyncpg
import nats.errors
from nats.js import JetStreamContext

from memoryd import tracing
from memoryd.codec import encode
from memoryd.errors import DependencyDown
from memoryd.schemas.events import SleepRun
from memoryd.subjects import MSG_ID_HEADER, SLEEP_JOBS
from services.sleep.adapters import postgres as store
from services.sleep.logic.schedule import sleep_msg_id

SCHEDULED_NAMESPACE: Final = uuid.UUID("5a6c3f0e-2b1d-4e8a-9c47-6d2f1b3e8a90")


def scheduled_job(owner: str, slot: str, now: datetime) -> tuple[SleepRun, str]:
    """The job and msg id of the due run of `owner` in `slot`."""
    msg_id = sleep_msg_id(owner, slot)
    run_id = uuid.uuid5(SCHEDULED_NAMESPACE, msg_id)
    return SleepRun(owner=owner, run_id=str(run_id), reason="scheduled", requested_at=now, slot=slot), msg_id


def manual_job(owner: str, now: datetime) -> tuple[SleepRun, str]:
    run_id = uuid.uuid4()
    job = SleepRun(owner=owner, run_id=str(run_id), reason="manual", requested_at=now)
    return job, sleep_msg_id(owner, f"manual-{run_id.hex}")


async def enqueue(pool: asyncpg.Pool, js: JetStreamContext, job: SleepRun, msg_id: str) -> None:
    """Record the run as queued and publish it; DependencyDown when NATS refuses it."""
    run_id = uuid.UUID(job.run_id)
    created = await store.queue_run(pool, run_id, job.owner, job.reason)
    try:
        await js.publish(SLEEP_JOBS, encode(job), headers=tracing.inject({MSG_ID_HEADER: msg_id}), timeout=5.0)
    except (nats.errors.Error, TimeoutError) as exc:
        if created and job.reason == "manual":
            await store.drop_queued(pool, run_id)
        raise DependencyDown(f"cannot queue the sleep run: {type(exc).__name__}: {exc}") from exc
