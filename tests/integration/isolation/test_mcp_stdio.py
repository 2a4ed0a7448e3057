"""The stdio MCP server (``memoryd mcp``) acts for its owner only, NATS itself holding the line.

nats-server runs with ``memoryd up``'s users; ``memoryd mcp --owner O`` makes an owner-bound
user for O and connects as it. A server for alice, or one started for bob with alice's
credentials, cannot read or write bob's memories (every tool answers ``forbidden``), and no
password appears in the child's argv (``/proc/<pid>/cmdline``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd.cli.commands_keys import ensure_owner_credentials, mcp_owner_user
from memoryd.client import MemoryClient
from memoryd.credentials import CREDENTIALS_ENV, URL_ENV, read_file
from memoryd.local.up import runtime_file, with_user
from memoryd.subjects import CLIENT_ROLE
from tests.support.auth import AuthBus, run_as_roles, start_auth_bus

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
TAG = uuid.uuid4().hex[:6]
ALICE, BOB = f"alice-{TAG}", f"bob-{TAG}"
TOOLS_FOR_ANY_OWNER: list[tuple[str, dict[str, Any]]] = [
    ("memory_add", {"content": "I prefer tea over coffee."}),
    ("memory_list", {}),
    ("memory_search", {"query": "coffee"}),
    ("memory_clear", {}),
]


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthBus]:
    data_dir = Path(tmp_path_factory.mktemp("mcp-stdio"))
    auth = start_auth_bus(data_dir)
    # what a running `memoryd up` leaves for its client commands
    client_url = with_user(auth.url, CLIENT_ROLE, auth.creds)
    runtime_file(data_dir).write_text(json.dumps({"client_nats_url": client_url}))
    try:
        yield auth
    finally:
        auth.server.stop()


@pytest.fixture(scope="module")
async def bob_memory(bus: AuthBus, pg_dsn: str) -> AsyncIterator[str]:
    """The id of a memory of bob, written by the application role; the ingest service runs."""
    async with run_as_roles(["ingest"], bus, pg_dsn):
        app = await bus.client_as(CLIENT_ROLE)
        try:
            created = await app.create(BOB, "bob keeps his passport in the blue drawer")
            yield str(created.memory.id)
        finally:
            await app.close()


def data_dir_of(bus: AuthBus) -> Path:
    return bus.server.store_dir.parent


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (URL_ENV, CREDENTIALS_ENV)}
    return env | {"PYTHONPATH": str(ROOT)} | extra


@asynccontextmanager
async def mcp_session(args: list[str], env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        yield session


def cmdlines_of(owner: str) -> list[bytes]:
    """The argv of every process serving MCP for ``owner``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            raw = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"services.gateway.stdio" in raw and f"\0{owner}\0".encode() in raw + b"\0":
            found.append(raw)
    return found


def result(call: Any) -> dict[str, Any]:
    assert not call.is_error, call.content
    return dict(call.structured_content) if call.structured_content is not None else json.loads(call.content[0].text)


async def assert_all_forbidden(session: ClientSession, bob_id: str) -> None:
    for tool, arguments in [*TOOLS_FOR_ANY_OWNER, ("memory_delete", {"id": bob_id})]:
        answer = await session.call_tool(tool, arguments)
        assert answer.is_error, (tool, answer.content)
        assert "forbidden: " in answer.content[0].text, (tool, answer.content[0].text)


async def bob_ids(bus: AuthBus) -> list[str]:
    app: MemoryClient = await bus.client_as(CLIENT_ROLE)
    try:
        return [str(m.id) for m in (await app.list(BOB)).memories]
    finally:
        await app.close()


async def test_memoryd_mcp_runs_as_a_user_bound_to_its_owner(bus: AuthBus, bob_memory: str) -> None:
    args = ["-m", "memoryd", "mcp", "--owner", ALICE, "--data-dir", str(data_dir_of(bus))]
    async with mcp_session(args, child_env()) as session:
        added = result(await session.call_tool("memory_add", {"content": "I prefer green tea."}))
        assert added["memory"]["owner"] == ALICE
        listed = result(await session.call_tool("memory_list", {}))
        assert [m["content"] for m in listed["memories"]] == ["I prefer green tea."]
        missing = await session.call_tool("memory_delete", {"id": bob_memory})
        assert missing.is_error and "not_found: " in missing.content[0].text
        (argv,) = cmdlines_of(ALICE)
        for user, password in bus.creds.passwords.items():
            assert password.encode() not in argv, user
    made = json.loads((data_dir_of(bus) / "clients" / f"{mcp_owner_user(ALICE)}.json").read_text())
    assert (made["user"], made["owners"]) == (mcp_owner_user(ALICE), [ALICE])
    assert await bob_ids(bus) == [bob_memory]


async def test_alices_credentials_cannot_act_for_bob(bus: AuthBus, bob_memory: str) -> None:
    """Started for bob with the credentials file of alice's user: the client refuses every tool."""
    alice_file = ensure_owner_credentials(data_dir_of(bus), ALICE)  # made by `memoryd mcp --owner alice`
    args = ["-m", "memoryd", "mcp", "--owner", BOB, "--credentials", str(alice_file)]
    async with mcp_session(args, child_env()) as session:
        await assert_all_forbidden(session, bob_memory)
    assert await bob_ids(bus) == [bob_memory]


async def test_nats_refuses_a_bound_user_that_does_not_say_its_owners(bus: AuthBus, bob_memory: str) -> None:
    """The URL alone (in the environment, not argv): the client does not know the user's owners,
    tries bob's subjects and NATS refuses them."""
    bound = read_file(ensure_owner_credentials(data_dir_of(bus), ALICE))
    assert bound.password and bound.owners == [ALICE]
    password = bound.password
    url = bus.url.replace("nats://", f"nats://{bound.user}:{password}@")
    args = ["-m", "memoryd", "mcp", "--owner", BOB]
    async with mcp_session(args, child_env(**{URL_ENV: url})) as session:
        await assert_all_forbidden(session, bob_memory)
        (argv,) = cmdlines_of(BOB)
        assert password.encode() not in argv
    assert await bob_ids(bus) == [bob_memory]


def test_a_password_on_the_stdio_command_line_is_refused() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "services.gateway.stdio", "--owner", ALICE, "--nats-url", "nats://u:secret@127.0.0.1:1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        timeout=60,
        check=False,
    )
    assert out.returncode == 2
    assert "--nats-url: a password on the command line is visible in the process list" in out.stderr
