"""Three sleep workers and fifty queued runs: never two runs at once (from recorded start/end times)."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections import Counter
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from services.sleep import app, runner
from shared.bus.rpc_client import call
from shared.schemas.ops import SleepRunRequest
from shared.service import ServiceContext, serve
from shared.subjects import SLEEP_CONSUMER, SLEEP_STREAM

from .conftest import SleepLlm, add_memory, keep_all, sleep_config
from .test_conflict import seed_pair

OWNERS = [f"owner-{i}" for i in range(10)]
RUNS = 50


async def test_three_workers_never_overlap_fifty_runs(
    nats_server: EmbeddedNats,
    pg_dsn: str,
    pool: asyncpg.Pool,
    nc: Client,
    llm: SleepLlm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for owner in OWNERS:
        await seed_pair(pool, owner, 0, f"{owner} likes tea", f"{owner} likes green tea")
        await add_memory(pool, owner, f"{owner} cold note", created_days_ago=45)

    async def slow_keep(prompt: str) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return keep_all(prompt)

    llm.phases["conflict"] = slow_keep
    workers: Counter[int] = Counter()
    real_execute = runner.execute

    async def counted(deps: Any, job: Any, keepalive: Any) -> Any:
        workers[id(deps)] += 1
        return await real_execute(deps, job, keepalive)

    monkeypatch.setattr(runner, "execute", counted)
    config = sleep_config(nats_server, pg_dsn, llm)
    stops = [asyncio.Event() for _ in range(3)]
    ready: list[ServiceContext] = []
    tasks = [
        asyncio.create_task(
            serve("sleep", config, app.setup, stop=stop, on_ready=ready.append, settings=app.load_settings(os.environ))
        )
        for stop in stops
    ]
    try:
        for _ in range(600):
            if len(ready) == 3:
                break
            await asyncio.sleep(0.05)
        assert len(ready) == 3
        run_ids = [
            (await call(nc, "sleep.run", SleepRunRequest(owner=OWNERS[i % len(OWNERS)]))).run_id for i in range(RUNS)
        ]
        for _ in range(1200):
            open_runs = await pool.fetchval(
                "SELECT count(*) FROM dream_runs WHERE status IN ('queued', 'running') AND id::text = ANY($1)", run_ids
            )
            if open_runs == 0:
                break
            await asyncio.sleep(0.25)
        info = await nc.jetstream().consumer_info(SLEEP_STREAM, SLEEP_CONSUMER)
    finally:
        for stop in stops:
            stop.set()
        await asyncio.gather(*tasks)

    rows = await pool.fetch(
        "SELECT owner, status, started_at, finished_at FROM dream_runs WHERE id::text = ANY($1) ORDER BY started_at",
        run_ids,
    )
    assert len(rows) == RUNS
    assert all(r["status"] in ("ok", "noop") for r in rows), Counter(r["status"] for r in rows)
    for before, after in itertools.pairwise(rows):
        assert before["started_at"] < before["finished_at"] <= after["started_at"], (before, after)
    assert info.config.max_ack_pending == 1
    assert sum(workers.values()) == RUNS
    assert len(workers) >= 2  # the jobs really were shared between replicas
