"""Error boundaries and run boundaries: an LLM 500 fails one phase only; owner activity aborts a run;
a stopping worker hands its run back to the queue."""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.codec import encode
from memoryd.errors import DependencyDown
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.events import Activity
from memoryd.schemas.ops import SleepRunRequest, SleepRunResult
from memoryd.subjects import activity_key, activity_subject
from shared.bus.provision import ensure_activity_bucket
from tests.support.eventually import eventually

from .conftest import (
    SleepLlm,
    add_entity,
    add_memory,
    ids_in,
    keep_all,
    put_settings,
    run_sleep,
    sleep_config,
    sleep_service,
)
from .test_conflict import ledger, seed_pair


async def test_a_500_from_the_llm_skips_only_that_phase(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await seed_pair(pool, "o1", 0, "likes tea", "likes green tea")
    await add_entity(pool, "o1", "Alice", "person")
    await add_entity(pool, "o1", "Deploys", "thing")
    await add_memory(pool, "o1", "Alice dreads deploys", session_id="s1")
    await put_settings(
        pool, "*", {"sleepPatternMinMemories": 1, "sleepAffectiveEnabled": True, "sleepAffectiveMinPool": 1}
    )
    llm.phases["conflict"] = lambda prompt: 500
    llm.phases["patterns"] = lambda prompt: {
        "patterns": [{"title": "Tea", "content": "Drinks tea.", "evidence": ids_in(prompt)[:2]}]
    }
    llm.phases["affective"] = lambda prompt: {
        "candidates": [
            {"person": "Alice", "target": "Deploys", "emotion": "dread", "evidence": ids_in(prompt)[:1]},
        ]
    }
    async with sleep_service(nats_server, pg_dsn, llm):
        run = await run_sleep(nc, "o1")
    p = run.phases
    assert run.status == "degraded"
    assert (p["conflict_resolution"]["status"], p["conflict_resolution"]["batchesFailed"]) == ("failed", 1)
    assert "llm_unavailable" in p["conflict_resolution"]["reason"] and "500" in p["conflict_resolution"]["reason"]
    assert (p["pattern_discovery"]["status"], p["pattern_discovery"]["created"]) == ("ok", 1)
    assert (p["affective_attribution"]["status"], p["affective_attribution"]["created"]) == ("ok", 1)
    assert p["archival_demotion"]["status"] == p["relation_completion"]["status"] == "ok"
    assert await ledger(pool, "o1") == {}
    statuses = await pool.fetch("SELECT operation, status FROM llm_audit_logs WHERE owner = 'o1' ORDER BY id")
    assert [(s["operation"], s["status"]) for s in statuses] == [
        ("sleep.conflict", "error"),
        ("sleep.patterns", "ok"),
        ("sleep.affective", "ok"),
    ]


async def test_owner_activity_aborts_the_run_at_the_next_boundary(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await seed_pair(pool, "o1", 0, "pair one a", "pair one b", tilt=0.01)
    await seed_pair(pool, "o1", 1, "pair two a", "pair two b", tilt=0.2)
    await add_memory(pool, "o1", "cold", created_days_ago=60)
    await put_settings(pool, "*", {"sleepConflictMaxPairs": 1})
    kv = await ensure_activity_bucket(nc.jetstream())
    how = "kv"

    async def active_while_judging(prompt: str) -> dict[str, Any]:
        now = datetime.now(UTC)
        if how == "kv":  # the bucket ingest writes
            await kv.put(activity_key("o1"), now.isoformat().encode())
        else:  # only the live announcement
            await nc.publish(activity_subject("o1"), encode(Activity(owner="o1", at=now)))
            await nc.flush()
            await asyncio.sleep(0.2)
        return keep_all(prompt)

    llm.phases["conflict"] = active_while_judging
    async with sleep_service(nats_server, pg_dsn, llm):
        by_kv = await run_sleep(nc, "o1")
        await kv.delete(activity_key("o1"))
        await pool.execute("DELETE FROM conflict_reviewed")
        how = "subject"
        by_subject = await run_sleep(nc, "o1")

    # the KV write lands as the reply comes back: the batch is applied, the next boundary aborts;
    # the announcement comes while the call is still out: the call is cancelled, nothing recorded
    for run, recorded in ((by_kv, 1), (by_subject, 0)):
        phases = run.phases
        assert run.status == "aborted"  # nothing was written: still aborted, never noop
        assert run.receipt is not None and ":aborted:" in run.receipt
        conflict = phases["conflict_resolution"]
        assert (conflict["status"], conflict["batches"], conflict["recorded"], conflict["pairs"]) == (
            "aborted",
            1,
            recorded,
            2,
        )
        assert "owner activity" in conflict["reason"]
        for name in ("archival_demotion", "pattern_discovery", "relation_completion", "affective_attribution"):
            assert (phases[name]["status"], phases[name]["reason"]) == ("skipped", "not run"), name
    assert "during the sleep.conflict LLM call" in by_subject.phases["conflict_resolution"]["reason"]
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE state <> 'active'") == 0  # demotion never ran
    assert set(await ledger(pool, "o1")) == set()  # the second run's cancelled batch recorded nothing


async def test_a_stopping_worker_requeues_its_run_and_another_finishes_it(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    from services.sleep import app
    from shared.service import serve

    await seed_pair(pool, "o1", 0, "a", "b")
    await seed_pair(pool, "o1", 1, "c", "d")
    await put_settings(pool, "*", {"sleepConflictMaxPairs": 1})
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow(prompt: str) -> dict[str, Any]:
        entered.set()
        await release.wait()
        return keep_all(prompt)

    llm.phases["conflict"] = slow
    stop = asyncio.Event()
    config = sleep_config(nats_server, pg_dsn, llm)
    worker = asyncio.create_task(serve("sleep", config, app.setup, stop=stop, settings=app.load_settings(os.environ)))
    queued = await eventually(
        lambda: _answered(nc, SleepRunRequest(owner="o1")), "the sleep service to answer", timeout=30
    )
    await asyncio.wait_for(entered.wait(), 30)
    stop.set()
    release.set()
    await asyncio.wait_for(worker, 60)
    row = await pool.fetchrow("SELECT status, started_at FROM dream_runs WHERE id = $1", uuid.UUID(queued.run_id))
    assert (row["status"], row["started_at"]) == ("queued", None)
    llm.phases["conflict"] = keep_all
    async with sleep_service(nats_server, pg_dsn, llm):

        async def final() -> asyncpg.Record | None:
            row = await pool.fetchrow("SELECT status, phases FROM dream_runs WHERE id = $1", uuid.UUID(queued.run_id))
            return row if row["status"] not in ("queued", "running") else None

        row = await eventually(final, "the requeued run to finish", timeout=60, interval=0.2)
    assert row["status"] == "noop"
    conflict = row["phases"]["conflict_resolution"]
    assert (conflict["ledgerSkipped"], conflict["recorded"]) == (1, 1)  # the first attempt recorded one pair


async def _answered(nc: Client, request: SleepRunRequest) -> SleepRunResult | None:
    """The reply to ``request``, or None while the service is still starting."""
    try:
        return await call(nc, "sleep.run", request)
    except DependencyDown:
        return None
