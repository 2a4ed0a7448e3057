"""Embed workers as real processes (`python -m services.embed`) on one durable consumer: two
share the work and embed each memory once; one killed mid-batch loses nothing; and
`memoryd serve embed --processes 2` runs, works and stops cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.subjects import EMBED_CONSUMER, JOBS_STREAM
from tests.support.eventually import eventually

from .helpers import (
    ROOT,
    SIG,
    Worker,
    add_memories,
    embedded_count,
    job_of,
    publish,
    queue_drained,
    scrape,
    worker_env,
    workers,
)

JOB_TEXTS = "memoryd_embed_texts_total{path=job}"


def _texts(prefix: str, n: int) -> list[str]:
    return [
        f"{prefix} note {i}: the {('blue', 'green', 'red')[i % 3]} notebook holds recipe {i * 7}." for i in range(n)
    ]


async def _rows(pool: asyncpg.Pool, ids: list[str]) -> tuple[int, int]:
    row = await pool.fetchrow(
        "SELECT count(*) AS n, count(DISTINCT memory_id) AS d FROM memory_embeddings"
        " WHERE memory_id = ANY($1::uuid[]) AND signature = $2",
        ids,
        SIG,
    )
    assert row is not None
    return int(row["n"]), int(row["d"])


async def test_two_worker_processes_share_the_work_exactly_once(
    nats_server: EmbeddedNats, nc: Client, pool: asyncpg.Pool, pg_dsn: str, tmp_path: Path
) -> None:
    mems = []
    for owner in ("p1", "p2", "p3", "p4"):
        mems += await add_memories(pool, owner, _texts(owner, 60))
    ids = [m.id for m in mems]
    env = worker_env(nats_server.url, pg_dsn, embed_batch_max=8, log_level="warning")
    async with workers(2, env, tmp_path) as (a, b):
        js = nc.jetstream()
        await publish(js, [job_of(m) for m in mems])
        await eventually(lambda: _all(pool, ids), timeout=240, what="240 memories embedded by two workers")
        await eventually(lambda: queue_drained(js), what="every job acked")
        shares = [(await scrape(w.metrics_url)).get(JOB_TEXTS, 0.0) for w in (a, b)]
    assert all(s > 0 for s in shares), f"both workers must take work: {shares}"
    assert sum(shares) == len(mems), f"each memory embedded exactly once: {shares}"
    assert await _rows(pool, ids) == (len(mems), len(mems))


async def test_worker_killed_mid_batch_loses_nothing(
    nats_server: EmbeddedNats, nc: Client, pool: asyncpg.Pool, pg_dsn: str, tmp_path: Path
) -> None:
    mems = await add_memories(pool, "k1", _texts("kill", 160))
    ids = [m.id for m in mems]
    env = worker_env(nats_server.url, pg_dsn, embed_batch_max=16, nats_ack_wait_s=3, log_level="warning")
    js = nc.jetstream()
    victim = await Worker(env, tmp_path / "victim.log").start()
    try:
        await publish(js, [job_of(m) for m in mems])

        async def in_flight() -> bool:
            info = await js.consumer_info(JOBS_STREAM, EMBED_CONSUMER)
            return (info.num_ack_pending or 0) > 0

        await eventually(in_flight, what="the victim holding unacked jobs")
        victim.kill()
        assert victim.proc is not None
        assert await victim.proc.wait() == -signal.SIGKILL
    finally:
        await victim.stop()
    before = await embedded_count(pool, ids)
    assert before < len(mems), "the victim finished everything before it was killed"
    async with workers(1, env, tmp_path):
        await eventually(lambda: _all(pool, ids), timeout=240, what="every memory embedded after the kill")
        await eventually(lambda: queue_drained(js), what="every job acked")
    info = await js.consumer_info(JOBS_STREAM, EMBED_CONSUMER)
    assert info.delivered.consumer_seq > info.delivered.stream_seq, "the killed batch was never redelivered"
    assert await _rows(pool, ids) == (len(mems), len(mems))
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE id = ANY($1::uuid[]) AND needs_reindex", ids) == 0


async def test_serve_embed_processes_two(
    nats_server: EmbeddedNats, nc: Client, pool: asyncpg.Pool, pg_dsn: str, tmp_path: Path
) -> None:
    mems = await add_memories(pool, "s1", _texts("serve", 40))
    ids = [m.id for m in mems]
    env = {**os.environ, **worker_env(nats_server.url, pg_dsn, embed_batch_max=4, log_level="warning")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "memoryd.cli.main",
        "serve",
        "embed",
        "--processes",
        "2",
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=(tmp_path / "serve.log").open("wb"),
    )
    try:
        assert proc.stdout is not None
        ready = []
        while len(ready) < 2:
            line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
            assert line, f"serve exited early: {(tmp_path / 'serve.log').read_text()[-2000:]}"
            if line.startswith("memoryd service ready name=embed replica="):
                ready.append(line.split("metrics=", 1)[1].strip())
        js = nc.jetstream()
        await publish(js, [job_of(m) for m in mems])
        await eventually(lambda: _all(pool, ids), timeout=120, what="jobs embedded by the replicas")
        shares = [(await scrape(url)).get(JOB_TEXTS, 0.0) for url in ready]
        assert sum(shares) == len(mems)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 60)
    assert code == 0


async def _all(pool: asyncpg.Pool, ids: list[str]) -> bool:
    return await embedded_count(pool, ids) == len(ids)
