"""``memoryd keys create|list|revoke`` against the stack's NATS: the key is shown once, works at the
gateway, is listed without its secret, and stops working once revoked."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _keys(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd.cli.main", "keys", *args, "--nats-url", stack.nats_url],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_create_list_revoke(stack: Stack) -> None:
    created = await asyncio.to_thread(_keys, stack, "create", "--owner", "carol", "--name", "carol's app")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("mk_") and "shown only now" in created.stderr
    async with stack.client(token) as http:
        mine = await http.post("/v1/memories", json={"content": "I prefer window seats."})
        assert mine.status_code == 200 and mine.json()["memory"]["owner"] == "carol"
    listed = await asyncio.to_thread(_keys, stack, "list", "--json")
    entries = {e["id"]: e for e in json.loads(listed.stdout)}
    key_id = token.split("_")[1]
    assert entries[key_id]["owner"] == "carol" and entries[key_id]["name"] == "carol's app"
    assert token.split("_")[2] not in listed.stdout
    revoked = await asyncio.to_thread(_keys, stack, "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    async with stack.client(token) as http:
        assert (await http.get("/v1/memories")).status_code == 401
    again = await asyncio.to_thread(_keys, stack, "revoke", key_id)
    assert again.returncode == 1 and "not_found" in again.stderr
    usage = await asyncio.to_thread(_keys, stack, "create")
    assert usage.returncode == 2 and "--owner" in usage.stderr
