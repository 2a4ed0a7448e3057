"""``memoryd summarize``, ``cleanup``, ``restore``, ``memories update|clear`` and ``health`` as a
user runs them, against the ingest service on this test's NATS and database: summarize is a
dry run unless ``--apply``, restore brings back the exact original, cleanup removes what
expired, clear needs ``--yes``."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from memoryd import client_memories
from memoryd.client import MemoryClient
from memoryd.local.nats import EmbeddedNats
from shared.db import memories
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from tests.support.stack import run_services, service_config

MEMORYD = str(Path(sys.executable).with_name("memoryd"))


@pytest.fixture
def config(nats_server: EmbeddedNats, pg_dsn: str) -> ServiceConfig:
    return service_config(nats_server.url, pg_dsn, {"MEMORYD_INGEST_CLEANUP_INTERVAL_S": "0"})


@pytest.fixture
async def ingest(config: ServiceConfig) -> AsyncIterator[ServiceContext]:
    async with run_services(["ingest"], config) as ctxs:
        yield ctxs["ingest"]


async def memoryd(nats: EmbeddedNats, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        MEMORYD, *args, "--nats-url", nats.url, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _memory(pool: asyncpg.Pool, owner: str, content: str, *, days_old: float = 0, **kw: object) -> str:
    record = await memories.insert(
        pool,
        owner=owner,
        memory_type="factual",
        content=content,
        source="api",
        created_at=datetime.now(UTC) - timedelta(days=days_old),
        **kw,  # type: ignore[arg-type]
    )
    return record.id


async def _states(pool: asyncpg.Pool, ids: list[str]) -> dict[str, str]:
    rows = await pool.fetch("SELECT id, state FROM memories WHERE id = ANY($1::uuid[])", [uuid.UUID(i) for i in ids])
    return {str(r["id"]): r["state"] for r in rows}


async def test_summarize_dry_run_apply_then_restore(
    nats_server: EmbeddedNats, pool: asyncpg.Pool, ingest: ServiceContext
) -> None:
    owner = f"cli-{uuid.uuid4().hex[:8]}"
    old = [await _memory(pool, owner, f"User used tool {i}  twice", days_old=40, session_id="s1") for i in range(3)]
    recent = await _memory(pool, owner, "A fresh memory", days_old=1, session_id="s1")
    args = ("summarize", "--owner", owner, "--older-than-days", "30")

    code, out, err = await memoryd(nats_server, *args)
    assert code == 0, err
    assert out.startswith(f"dry run for owner {owner}: 3 memories older than 30 days") and "--apply" in out
    assert all(i in out for i in old) and recent not in out
    code, out, err = await memoryd(nats_server, *args, "--json")
    assert code == 0, err
    dry = json.loads(out)
    assert sorted(dry["candidate_ids"]) == sorted(old) and not dry.get("summary_ids") and dry["tokens_after"] == 0
    assert set((await _states(pool, [*old, recent])).values()) == {"active"}  # the dry run changed nothing

    code, out, err = await memoryd(nats_server, *args, "--apply", "--json")
    assert code == 0, err
    applied = json.loads(out)
    assert sorted(applied["candidate_ids"]) == sorted(old) and len(applied["summary_ids"]) == 1
    assert await _states(pool, [*old, recent]) == {**{i: "archived" for i in old}, recent: "active"}

    code, out, err = await memoryd(nats_server, "restore", "--owner", owner, old[0])
    assert code == 0, err
    assert out.strip() == f"restored {old[0]} (active): User used tool 0  twice"  # the exact original
    code, out, err = await memoryd(nats_server, "restore", "--owner", owner, old[0])
    assert code == 1 and err.startswith("memoryd: conflict: ") and "Traceback" not in err
    code, out, err = await memoryd(nats_server, "restore", "--owner", "someone-else", old[1], "--json")
    assert code == 1 and err.startswith("memoryd: not_found: ")


async def test_cleanup_dry_run_then_for_real(
    nats_server: EmbeddedNats, pool: asyncpg.Pool, ingest: ServiceContext
) -> None:
    owner = f"cli-{uuid.uuid4().hex[:8]}"
    expired = await _memory(pool, owner, "a short-lived note", expires_at=datetime.now(UTC) + timedelta(seconds=1))
    keep = await _memory(pool, owner, "a lasting note")
    await pool.execute("UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = $1", uuid.UUID(expired))

    code, out, err = await memoryd(nats_server, "cleanup", "--owner", owner, "--dry-run")
    assert code == 0, err
    assert (
        out.startswith(f"dry run: owner {owner}: 1 expired, 0 past retention; would remove rows=1") and expired in out
    )
    assert set(await _states(pool, [expired, keep])) == {expired, keep}

    code, out, err = await memoryd(nats_server, "cleanup", "--owner", owner, "--json")
    assert code == 0, err
    real = json.loads(out)
    assert (real["expired"], real["dry_run"], real["removed"]["rows"]) == (1, False, 1)
    assert set(await _states(pool, [expired, keep])) == {keep}


async def test_import_reports_progress_per_request(
    nats_server: EmbeddedNats, ingest: ServiceContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the progress bar of ``memories import`` counts: lines sent, after each request."""
    owner = f"cli-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(client_memories, "IMPORT_CHUNK_BYTES", 1)  # one line a request
    seen: list[int] = []
    async with await MemoryClient.connect(nats_server.url) as client:
        for i in range(3):
            await client.create(owner, f"memory number {i} to copy")
        result = await client.import_lines(f"{owner}-copy", await client.export(owner), progress=seen.append)
    assert (result.imported, result.errors) == (3, [])
    assert seen == [1, 2, 3]


async def test_update_clear_and_health(nats_server: EmbeddedNats, pool: asyncpg.Pool, ingest: ServiceContext) -> None:
    owner = f"cli-{uuid.uuid4().hex[:8]}"
    first = await _memory(pool, owner, "User drinks tea")
    await _memory(pool, owner, "User walks to work", days_old=10)

    code, out, err = await memoryd(
        nats_server, "memories", "update", "--owner", owner, first, "--text", "User drinks coffee"
    )
    assert code == 0, err
    assert out.startswith(f"updated {first}")
    content = await pool.fetchval("SELECT content FROM memories WHERE id = $1", uuid.UUID(first))
    assert content == "User drinks coffee"

    code, out, err = await memoryd(nats_server, "memories", "clear", "--owner", owner)
    assert code == 2 and "add --yes" in err
    code, out, err = await memoryd(
        nats_server, "memories", "clear", "--owner", owner, "--older-than-days", "5", "--yes"
    )
    assert code == 0, err
    assert out.startswith(f"cleared 1 memories of {owner}: rows=1")
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1", owner) == 1

    code, out, err = await memoryd(nats_server, "health", "ingest", "--json")
    assert code == 0, err
    assert json.loads(out)["service"] == "ingest" and json.loads(out)["status"] == "ok"
    code, out, err = await memoryd(nats_server, "health", "ingest")
    assert code == 0 and out.startswith("ingest ") and ": ok" in out.splitlines()[0]
