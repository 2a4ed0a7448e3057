"""Helpers of the extract integration tests: publish jobs, wait for them, read results."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from memoryd.codec import decode, encode
from memoryd.schemas import EmbedJob, ExtractJob
from memoryd.schemas.events import Turn
from memoryd.subjects import EMBED_JOBS, EXTRACT_CONSUMER, EXTRACT_JOBS, JOBS_STREAM, MSG_ID_HEADER
from shared.db import memories
from tests.support.eventually import eventually

TEXT = "I prefer TypeScript. I'll use Postgres for this project. I always commit before pushing. I don't like Python."
FOUR_KEYS = {
    "preference:typescript",
    "decision:postgres_for_this_project",
    "pattern:commit_before_pushing",
    "preference:python",
}
OCCURRED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def owner() -> str:
    return f"o-{uuid.uuid4().hex[:10]}"


def job(owner: str, *turns: Turn, event_id: str | None = None, session_id: str | None = "s1") -> ExtractJob:
    return ExtractJob(
        event_id=event_id or f"ev-{uuid.uuid4().hex[:8]}",
        owner=owner,
        turns=list(turns),
        occurred_at=OCCURRED,
        session_id=session_id,
    )


async def raw_turn(pool: asyncpg.Pool, owner: str, content: str, role: str = "user") -> str:
    """Store a raw turn memory as ingest would and return its id."""
    record = await memories.insert(
        pool,
        owner=owner,
        memory_type="episodic",
        content=content,
        source="chat_turn",
        session_id="s1",
        metadata={"role": role},
    )
    return record.id


async def publish(js: JetStreamContext, extract_job: ExtractJob) -> None:
    await js.publish(EXTRACT_JOBS, encode(extract_job))


async def wait_done(pool: asyncpg.Pool, js: JetStreamContext, extract_job: ExtractJob, runs: int = 1) -> None:
    """Wait until the job has been handled ``runs`` times and nothing is left unacked."""

    async def handled() -> bool:
        n = await pool.fetchval(
            "SELECT runs FROM extract_runs WHERE owner = $1 AND event_id = $2", extract_job.owner, extract_job.event_id
        )
        return n is not None and n >= runs

    async def acked() -> bool:
        info = await js.consumer_info(JOBS_STREAM, EXTRACT_CONSUMER)
        return info.num_pending == 0 and info.num_ack_pending == 0

    await eventually(handled, what=f"{runs} run(s) of {extract_job.event_id}")
    await eventually(acked, what="the extract consumer to ack everything")


async def facts(pool: asyncpg.Pool, owner: str) -> dict[str, asyncpg.Record]:
    rows = await pool.fetch(
        f"SELECT {memories.COLUMNS} FROM memories WHERE owner = $1 AND source IN ('rule', 'llm')", owner
    )
    return {row["key"]: row for row in rows}


async def embed_jobs(js: JetStreamContext, owner: str) -> list[tuple[EmbedJob, str]]:
    """Embed jobs of ``owner`` waiting in the work queue, with their ``Nats-Msg-Id``."""
    info = await js.stream_info(JOBS_STREAM)
    out: list[tuple[EmbedJob, str]] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(JOBS_STREAM, seq)
        except NotFoundError:
            continue
        if msg.subject != EMBED_JOBS or msg.data is None:
            continue
        embed = decode(msg.data, EmbedJob)
        if embed.owner == owner:
            out.append((embed, (msg.headers or {}).get(MSG_ID_HEADER, "")))
    return out


async def entities(pool: asyncpg.Pool, owner: str) -> dict[str, tuple[str, int, int]]:
    """normalized -> (kind, mentions counter, mention rows)."""
    rows = await pool.fetch(
        "SELECT e.normalized, e.kind, e.mentions, count(m.memory_id) AS rows FROM entities e"
        " LEFT JOIN entity_mentions m ON m.entity_id = e.id WHERE e.owner = $1"
        " GROUP BY e.normalized, e.kind, e.mentions",
        owner,
    )
    return {r["normalized"]: (r["kind"], r["mentions"], r["rows"]) for r in rows}


def sample(name: str, labels: dict[str, str]) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0
