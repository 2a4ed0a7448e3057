"""A whole run through the service: without an LLM, the receipt, `dream_runs`, `sleep.status`, metrics."""

from __future__ import annotations

import hashlib
import uuid

import asyncpg
import msgspec
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.ops import SleepStatusRequest
from services.sleep.receipt import (
    AffectiveResult,
    ConflictResult,
    DemotionResult,
    PatternResult,
    RelationResult,
    parse_receipt,
)
from shared.observability.metrics import SLEEP_RUNS

from .conftest import add_memory, memory_row, put_settings, run_sleep, sleep_service

RESULT_TYPES = {
    "conflict_resolution": ConflictResult,
    "archival_demotion": DemotionResult,
    "pattern_discovery": PatternResult,
    "relation_completion": RelationResult,
    "affective_attribution": AffectiveResult,
}


def wire_fields(tp: type[msgspec.Struct]) -> set[str]:
    return set(tp.__struct_encode_fields__)


async def test_without_llm_demotion_runs_llm_phases_skip_and_the_run_is_recorded(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    long_text = "The user keeps every receipt of the flat renovation in one shared folder. " * 4
    cold = await add_memory(pool, "o1", long_text, created_days_ago=60, accessed_days_ago=45)
    frozen = await add_memory(pool, "o1", "Moved to Lisbon in 2019.", created_days_ago=200, accessed_days_ago=120)
    warm = await add_memory(pool, "o1", "Likes green tea.", created_days_ago=2)
    glob = await add_memory(pool, "o1", "Company holidays are in August.", scope="global", created_days_ago=400)
    other = await add_memory(pool, "o2", "Other owner, cold too.", created_days_ago=400)
    await put_settings(pool, "*", {"sleepAffectiveEnabled": True})
    before = SLEEP_RUNS.labels("ok")._value.get()
    async with sleep_service(nats_server, pg_dsn, llm=None):
        run = await run_sleep(nc, "o1")

    assert run.status == "ok"
    phases = run.phases
    for name in ("conflict_resolution", "pattern_discovery", "affective_attribution"):
        assert (phases[name]["status"], phases[name]["reason"]) == ("skipped", "no llm route"), name
    demotion = phases["archival_demotion"]
    assert demotion["status"] == "ok"
    assert (demotion["summarized"], demotion["archived"], demotion["globalSkipped"]) == (1, 1, 1)
    assert phases["relation_completion"]["status"] == "ok"
    for name, tp in RESULT_TYPES.items():  # every counter present on every path
        assert set(phases[name]) == wire_fields(tp), name

    summary = await memory_row(pool, cold)
    assert summary["state"] == "summary"
    assert summary["full_content"] == long_text
    assert len(summary["content"]) <= 121 and summary["content"].endswith("…")
    assert long_text.startswith(summary["content"][:-1].rstrip())
    assert (await memory_row(pool, frozen))["state"] == "archived"
    assert (await memory_row(pool, frozen))["content"] == "Moved to Lisbon in 2019."
    assert (await memory_row(pool, warm))["state"] == "active"
    assert (await memory_row(pool, glob))["state"] == "active"  # global scope is never modified
    assert (await memory_row(pool, other))["state"] == "active"  # another owner's memory is never touched

    row = await pool.fetchrow("SELECT * FROM dream_runs WHERE id = $1", uuid.UUID(run.run_id))
    assert row["run_type"] == "sleep" and row["owner"] == "o1" and row["status"] == "ok"
    assert row["started_at"] <= row["finished_at"]
    assert row["counters"]["writes"] == 2 and row["counters"]["llmBatches"] == 0
    assert SLEEP_RUNS.labels("ok")._value.get() == before + 1


async def test_receipt_has_eight_segments_and_hashes_the_recorded_phases(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    await add_memory(pool, "o1", "Old note nobody reads.", created_days_ago=50, accessed_days_ago=40)
    async with sleep_service(nats_server, pg_dsn):
        first = await run_sleep(nc, "o1")
        second = await run_sleep(nc, "o1")  # nothing left to do

    assert first.receipt is not None and second.receipt is not None
    segments = first.receipt.split(":")
    assert len(segments) == 8 and segments[:2] == ["memoryd", "run"]
    parts = parse_receipt(first.receipt)
    assert (parts.run_id, parts.status, parts.inputs, parts.writes, parts.llm_used) == (
        first.run_id,
        "ok",
        1,
        1,
        False,
    )
    stored = await pool.fetchval("SELECT phases FROM dream_runs WHERE id = $1", uuid.UUID(first.run_id))
    assert hashlib.sha256(msgspec.json.encode(stored, order="sorted")).hexdigest()[:12] == parts.hash12
    again = parse_receipt(second.receipt)
    assert (again.status, again.writes) == ("noop", 0)
    assert second.status == "noop"


async def test_status_lists_runs_newest_first_per_owner(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    async with sleep_service(nats_server, pg_dsn):
        a1 = await run_sleep(nc, "a")
        b1 = await run_sleep(nc, "b")
        a2 = await run_sleep(nc, "a")
        mine = await call(nc, "sleep.status", SleepStatusRequest(owner="a"))
        everyone = await call(nc, "sleep.status", SleepStatusRequest(limit=2))
    assert [r.run_id for r in mine.runs] == [a2.run_id, a1.run_id]
    assert all(r.owner == "a" and r.receipt for r in mine.runs)
    assert [r.run_id for r in everyone.runs] == [a2.run_id, b1.run_id]


async def test_bad_stored_settings_fail_the_run_and_orphaned_runs_are_closed(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    orphan, other = uuid.uuid4(), uuid.uuid4()  # left `running` by a worker that died
    for run_id, owner in ((orphan, "o2"), (other, "o9")):
        await pool.execute(
            "INSERT INTO dream_runs (id, owner, status, started_at) VALUES ($1, $2, 'running', now())", run_id, owner
        )
    await put_settings(pool, "o1", {"sleepConflictStrictness": "wild"})
    async with sleep_service(nats_server, pg_dsn):
        bad = await run_sleep(nc, "o1")
        good = await run_sleep(nc, "o2")  # the global row is fine: other owners still run
    assert bad.status == "failed" and bad.receipt is not None and ":failed:" in bad.receipt
    assert all("sleepConflictStrictness" in p["reason"] for p in bad.phases.values())
    assert good.status == "noop"
    row = await pool.fetchrow("SELECT status, reason, finished_at FROM dream_runs WHERE id = $1", orphan)
    assert (row["status"], row["reason"]) == ("failed", "interrupted") and row["finished_at"] is not None
    # only the owner's next run may close its orphans: another owner's `running` row may be a live run
    assert await pool.fetchval("SELECT status FROM dream_runs WHERE id = $1", other) == "running"
