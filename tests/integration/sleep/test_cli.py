"""`memoryd sleep run --owner O --wait` and `memoryd sleep status` against a running sleep service."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import asyncpg

from memoryd.local.nats import EmbeddedNats

from .conftest import add_memory, put_settings, sleep_service
from .test_conflict import seed_pair

MEMORYD = str(Path(sys.executable).with_name("memoryd"))


async def memoryd(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        MEMORYD, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_run_wait_and_status_commands(nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool) -> None:
    await add_memory(pool, "cli-owner", "an old note", created_days_ago=40)
    async with sleep_service(nats_server, pg_dsn):
        code, out, err = await memoryd("sleep", "run", "--owner", "cli-owner", "--wait", "--nats-url", nats_server.url)
        assert code == 0, err
        status_code, status_out, err2 = await memoryd(
            "sleep", "status", "--owner", "cli-owner", "--json", "--nats-url", nats_server.url
        )
        queued_code, queued_out, _ = await memoryd(
            "sleep", "run", "--owner", "cli-owner", "--nats-url", nats_server.url
        )
    lines = out.splitlines()
    assert lines[0].startswith("run ") and "owner=cli-owner status=ok" in lines[0]
    assert lines[1].strip().startswith("receipt memoryd:run:")
    assert any(line.strip().startswith("archival_demotion: ok") and "summarized=1" in line for line in lines)
    assert status_code == 0, err2
    runs = json.loads(status_out)["runs"]
    assert [r["status"] for r in runs] == ["ok"] and runs[0]["receipt"] == lines[1].split()[-1]
    assert queued_code == 0 and queued_out.startswith("run ") and "owner=cli-owner" in queued_out  # not waited for


async def test_conflicts_list_and_resolve_commands(nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool) -> None:
    await put_settings(pool, "cli-owner", {"conflictFreezeEnabled": True})
    kept, gone = await seed_pair(pool, "cli-owner", 0, "prefers tea", "prefers green tea")
    url = ("--nats-url", nats_server.url)
    async with sleep_service(nats_server, pg_dsn):  # no LLM: freeze mode needs none
        await run_sleep_cli(url)
        code, out, err = await memoryd("conflicts", "list", "--owner", "cli-owner", *url)
        _, listed, _ = await memoryd("conflicts", "list", "--owner", "cli-owner", "--json", *url)
        (entry,) = json.loads(listed)["items"]
        resolved_code, resolved_out, err2 = await memoryd(
            "conflicts", "resolve", entry["id"], "--owner", "cli-owner", "--action", "accept", "--keep", kept,
            "--by", "cli:tester", *url,
        )  # fmt: skip
        again_code, _, again_err = await memoryd(
            "conflicts", "resolve", entry["id"], "--owner", "cli-owner", "--action", "dismiss", *url
        )
        _, after, _ = await memoryd("conflicts", "list", "--owner", "cli-owner", "--resolved", *url)
    assert code == 0, err
    assert entry["id"] in out and "prefers green tea" in out and out.rstrip().endswith("1 pending")
    assert resolved_code == 0, err2
    assert "accept by cli:tester" in resolved_out and f"kept {kept}, archived {gone}" in resolved_out
    assert resolved_out.rstrip().endswith("0 pending")
    assert again_code == 1 and "resolved already" in again_err
    assert f"conflict {entry['id']} accept by cli:tester" in after and after.rstrip().endswith("0 pending")
    assert (await pool.fetchval("SELECT state FROM memories WHERE id = $1::uuid", gone)) == "archived"


async def run_sleep_cli(url: tuple[str, str]) -> None:
    code, out, err = await memoryd("sleep", "run", "--owner", "cli-owner", "--wait", *url)
    assert code == 0 and "frozen=1" in out, (out, err)
