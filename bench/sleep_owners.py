"""Sleep throughput across many owners: runs per hour at several ``sleepMaxConcurrentRuns``.

Per limit, a fresh set of ``owners`` owners (so every run is a first run) gets
``memories`` memories each with 384-d vectors (every fifth a near-duplicate, so the
conflict phase has a batch to send) and ``sleepPatternMinMemories=1`` (the pattern
phase asks too): about two LLM calls per run. The scripted LLM answers after
``latency_s``, standing in for a real endpoint (where the calls, not memoryd, take the
time of a run). One run per owner is queued at once; the wall time until the last is
recorded gives runs per hour. The sleep service runs as its own process with enough lanes for the
largest limit.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector

from bench.report import markdown_table
from memoryd.rpc import call
from memoryd.schemas.ops import SleepRunRequest
from shared.db.memories import content_hash

Log = Callable[[str], None]
DIM = 384


def owner_name(limit: int, index: int) -> str:
    return f"bench-lane{limit}-{index}"


async def seed_owners(pool: asyncpg.Pool, signature: str, owners: Sequence[str], memories: int, seed: int) -> None:
    """`memories` memories with vectors per owner, each owner's pattern minimum at 1."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    mems, vecs, settings = [], [], []
    for owner in owners:
        v = rng.standard_normal((memories, DIM), dtype=np.float32)
        v[1::5] = v[0::5][: len(v[1::5])] + 0.2 * rng.standard_normal((len(v[1::5]), DIM), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        for i in range(memories):
            mid, text = uuid.uuid4(), f"{owner} note {i}: the user mentions topic {i % 7}."
            created = now - timedelta(days=1 + i % 20)
            mems.append((mid, owner, f"s{i % 3}", "episodic", text, "chat_turn", created, created,
                         content_hash(text), signature, False))  # fmt: skip
            vecs.append((mid, signature, owner, DIM, Vector(v[i])))
        settings.append((owner, {"sleepPatternMinMemories": 1}))
    async with pool.acquire() as conn, conn.transaction():
        await conn.copy_records_to_table(
            "memories",
            records=mems,
            columns=["id", "owner", "session_id", "type", "content", "source", "created_at", "updated_at",
                     "content_hash", "embedding_signature", "needs_reindex"],
        )  # fmt: skip
        await conn.copy_records_to_table(
            "memory_embeddings", records=vecs, columns=["memory_id", "signature", "owner", "dim", "embedding"]
        )
        await conn.executemany('INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb)', settings)


async def set_limit(pool: asyncpg.Pool, limit: int) -> None:
    await pool.execute(
        'UPDATE settings SET "values" = "values" || jsonb_build_object(\'sleepMaxConcurrentRuns\', $1::int)'
        " WHERE owner = '*'",
        limit,
    )


async def measure(
    pool: asyncpg.Pool, nc: Any, owners: Sequence[str], limit: int, *, settle_s: float, timeout_s: float = 3600
) -> dict[str, Any]:
    """Queue one run per owner and wait for the last; the throughput at this limit."""
    await set_limit(pool, limit)
    await asyncio.sleep(settle_s)  # every lane has read the new limit
    started = time.perf_counter()
    run_ids = [(await call(nc, "sleep.run", SleepRunRequest(owner=o))).run_id for o in owners]
    deadline = started + timeout_s
    while time.perf_counter() < deadline:
        open_runs = await pool.fetchval(
            "SELECT count(*) FROM dream_runs WHERE status IN ('queued', 'running') AND id::text = ANY($1)", run_ids
        )
        if open_runs == 0:
            break
        await asyncio.sleep(0.1)
    wall = time.perf_counter() - started
    rows = await pool.fetch("SELECT status, started_at, finished_at FROM dream_runs WHERE id::text = ANY($1)", run_ids)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    done = [r for r in rows if r["finished_at"] is not None and r["started_at"] is not None]
    run_s = [(r["finished_at"] - r["started_at"]).total_seconds() for r in done]
    return {
        "limit": limit,
        "owners": len(owners),
        "runs": len(done),
        "statuses": statuses,
        "wall_s": round(wall, 2),
        "mean_run_s": round(sum(run_s) / len(run_s), 3) if run_s else None,
        "runs_per_hour": round(len(done) / wall * 3600, 1) if wall > 0 else None,
    }


def render_owners(section: dict[str, Any]) -> str:
    rows = [
        [r["limit"], r["owners"], r["runs"], r["wall_s"], r["mean_run_s"], r["runs_per_hour"]]
        for r in section["limits"]
    ]
    base = section["limits"][0]["runs_per_hour"] or 0
    speedups = ", ".join(
        f"limit {r['limit']}: x{(r['runs_per_hour'] or 0) / base:.2f}" for r in section["limits"][1:] if base
    )
    return (
        f"sleep across many owners ({section['memories']} memories each, scripted LLM answering after"
        f" {section['llm_latency_s']} s; {speedups} vs limit {section['limits'][0]['limit']})\n"
        + markdown_table(["limit", "owners", "runs", "wall s", "mean run s", "runs per hour"], rows, digits=2)
    )
