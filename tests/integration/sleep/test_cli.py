"""`memoryd sleep run --owner O --wait` and `memoryd sleep status` against a running sleep service."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import asyncpg

from memoryd.local.nats import EmbeddedNats

from .conftest import add_memory, sleep_service

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
