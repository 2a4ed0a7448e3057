"""One table of hostile cases (``tests.support.hostile.DOOR_CASES``) through every door: NATS
(``MemoryClient`` of an owner-bound user, nats-server with authentication on), REST, MCP over
streamable HTTP and over stdio, and the proxy's chat completions and responses (``doors``).

One oracle for every door: a denied case gets the typed refusal the table names (a 4xx with
problem+json, a typed ``MemorydError``, an MCP tool error naming its code), never a 5xx or an
untyped error, and leaves every table of the database as it was; an accepted case keeps what
it wrote (read back afterwards) and leaves the victim's memories as they were. The hostile
caller is bob; the victim is alice. ``MEMORYD_HOSTILE_REPORT=<file>`` writes the case x door
table (``make hostile``; ``make security-docs`` renders it into docs/security.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import httpx2
import openai
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from memoryd.client import MemoryClient
from memoryd.subjects import EMBED_CONSUMER, EVENTS_STREAM, EXTRACT_CONSUMER, INGEST_CONSUMER, JOBS_STREAM
from shared.api_keys import KeyStore, new_key, open_bucket
from shared.service_names import SERVICES
from tests.support.auth import AuthBus, run_as_roles, start_auth_bus
from tests.support.digest import changed_tables, digest, digest_query
from tests.support.eventually import eventually
from tests.support.fake_llm import FakeLlm
from tests.support.hostile import ALICE, ALICE_EVENT, ALICE_ID, DOOR_CASES, FRESH_UUID, DoorCase, fill
from tests.support.stack import consumers_idle

from .doors import DOORS, OK, PROBLEM, PROXIED, Broken, Callers, StdioRaw

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOB_USER = "hostile-bob"
PIPELINE = [(EVENTS_STREAM, INGEST_CONSUMER), (JOBS_STREAM, EXTRACT_CONSUMER), (JOBS_STREAM, EMBED_CONSUMER)]


@dataclass
class World:
    bus: AuthBus
    llm: FakeLlm
    pool: asyncpg.Pool
    callers: Callers
    app: MemoryClient
    alice: str
    alice_id: str
    alice_events: dict[str, str]
    digest_sql: str
    results: dict[str, dict[str, str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthBus]:
    tag = uuid.uuid4().hex[:6]
    auth = start_auth_bus(Path(tmp_path_factory.mktemp("hostile")), {BOB_USER: [f"bob-{tag}"]})
    yield auth
    auth.server.stop()


@pytest.fixture(scope="module")
async def world(bus: AuthBus, pg_dsn: str, pool: asyncpg.Pool) -> AsyncIterator[World]:
    bob = bus.creds.bound_owners[BOB_USER][0]
    alice = bob.replace("bob-", "alice-")
    started = time.monotonic()
    async with FakeLlm() as llm:
        env = {
            "MEMORYD_EMBED_SOURCE": "local",
            "MEMORYD_INGEST_CLEANUP_INTERVAL_S": "0",
            "MEMORYD_GATEWAY_PORT": "0",
            "MEMORYD_GATEWAY_UPSTREAM_URL": llm.base_url,
            "MEMORYD_GATEWAY_KEY_CACHE_S": "0",
        }
        with pytest.MonkeyPatch.context() as mp:
            for name, value in env.items():
                mp.setenv(name, value)
            async with run_as_roles(SERVICES, bus, pg_dsn, env) as contexts:
                operator_nc = await bus.connect_as("operator")
                keys = KeyStore(await open_bucket(operator_nc.jetstream()))
                tokens = {}
                for name, role, owner in (("alice", "owner", alice), ("bob", "owner", bob), ("op", "operator", None)):
                    token, record = new_key(role, owner, name=name)  # type: ignore[arg-type]
                    await keys.put(record)
                    tokens[name] = token
                app = await bus.client_as("client")
                callers = Callers(
                    url=contexts["gateway"].ready_fields["http"],
                    bob=bob,
                    bob_key=tokens["bob"],
                    operator_key=tokens["op"],
                    nats_bob=await bus.client_as(BOB_USER, owners=[bob, alice]),  # claims alice too
                    nats_app=app,
                    nats_operator=await bus.client_as("operator"),
                )
                # the victim: one memory, and one chat event per door whose id bob reuses
                created = await app.create(alice, f"alice keeps her diary in the blue drawer {bob[-6:]}")
                events = {
                    door: await app.publish_chat(alice, [{"role": "user", "content": f"alice {door}"}])
                    for door in DOORS
                }
                await eventually(lambda: consumers_idle(operator_nc, PIPELINE), "alice's events to be stored")
                w = World(
                    bus=bus,
                    llm=llm,
                    pool=pool,
                    callers=callers,
                    app=app,
                    alice=alice,
                    alice_id=created.memory.id,
                    alice_events=events,
                    digest_sql=await digest_query(pool),
                )
                w.seconds["setup"] = round(time.monotonic() - started, 1)
                yield w
                if report := os.environ.get("MEMORYD_HOSTILE_REPORT"):
                    write_report(Path(report), w)
                for client in (app, callers.nats_bob, callers.nats_operator):  # nats_app is app
                    await client.close()
                await operator_nc.close()


async def _alice_rows(w: World) -> list[str]:
    rows = await w.pool.fetch(
        "SELECT ROW(id, content, state, updated_at, metadata)::text AS r FROM memories WHERE owner = $1 ORDER BY id",
        w.alice,
    )
    return [r["r"] for r in rows]


async def _bob_keeps(w: World, door: str, case: DoorCase, args: dict[str, Any]) -> None:
    """An accepted write is readable afterwards, in bob's memory."""
    wanted = args.get("content") or args["messages"][-1]["content"]
    if door in PROXIED:  # the proxy remembers a turn's text without NUL characters
        wanted = wanted.replace("\x00", "")

    async def kept() -> bool:
        listed = await w.app.list(w.callers.bob, limit=1000)
        return any(m.content == wanted for m in listed.memories)

    await eventually(kept, f"{case.name} through {door} to be readable", timeout=30)


def _forwarded_unchanged(w: World, door: str, text: str) -> bool:
    """The proxy forwarded the caller's turn as it came (injection strings are data)."""
    sent = w.llm.requests[-1]["input" if door == "responses" else "messages"][-1]
    return bool(sent == {"role": "user", "content": text})


def write_report(path: Path, w: World) -> None:
    cells = [v for row in w.results.values() for v in row.values()]
    report = {
        "doors": list(DOORS),
        "cases": [
            {"name": c.name, "group": c.group, "expected": c.refusal or OK, "doors": dict(c.doors)} for c in DOOR_CASES
        ],
        "results": {door: w.results[door] for door in DOORS if door in w.results},
        "tried": sum(v != "n/a" for v in cells),
        "mismatches": sum(v.startswith("FAIL") for v in cells),
        "seconds": w.seconds,
    }
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def _run_case(w: World, door: str, case: DoorCase) -> str:
    if not case.says(door):
        return "n/a"
    names = {ALICE: w.alice, ALICE_ID: w.alice_id, ALICE_EVENT: w.alice_events[door], FRESH_UUID: str(uuid.uuid4())}
    args = fill(dict(case.args), names)
    if case.name == "same-event-id":  # bob's own turn under alice's event id
        args["messages"] = [{"role": "user", "content": f"bob's turn {uuid.uuid4().hex[:8]}"}]
    expect_args = json.loads(json.dumps(args))
    if door in PROXIED:
        w.llm.reply_text("Noted as data.")
    expected = case.expected(door)
    if expected != OK:
        await eventually(
            lambda: consumers_idle(w.callers.nats_operator.nc, PIPELINE), "the pipeline to be idle", timeout=60
        )
        before = await digest(w.pool, w.digest_sql)
    alice_before = await _alice_rows(w)
    try:
        got = await DOORS[door](case, args, w.callers)
    except Broken as exc:
        return f"FAIL broken: {exc}"
    if got is None:
        return "n/a"
    if got != expected:
        return f"FAIL got {got}, expected {expected}"
    if expected != OK:
        await eventually(
            lambda: consumers_idle(w.callers.nats_operator.nc, PIPELINE), "the pipeline to be idle", timeout=60
        )
        changed = changed_tables(before, await digest(w.pool, w.digest_sql))
        if changed:
            return f"FAIL changed {changed}"
    else:
        await _bob_keeps(w, door, case, expect_args)
        if door in PROXIED and not _forwarded_unchanged(w, door, expect_args["content"]):
            return "FAIL the upstream got another turn"
    if await _alice_rows(w) != alice_before:
        return "FAIL alice's memories changed"
    return got


async def _run_door(w: World, door: str) -> dict[str, str]:
    started = time.monotonic()
    # denied cases first: an accepted one writes, and its writes must settle before the next digest
    ordered = sorted(DOOR_CASES, key=lambda c: c.expected(door) == OK)
    row = {case.name: await _run_case(w, door, case) for case in ordered}
    w.seconds[door] = round(time.monotonic() - started, 1)
    w.results[door] = {c.name: row[c.name] for c in DOOR_CASES}
    return row


def _failures(row: dict[str, str]) -> list[str]:
    return [f"{name}: {outcome}" for name, outcome in row.items() if outcome.startswith("FAIL")]


@pytest.mark.parametrize("door", [d for d in DOORS if d != "mcp-stdio"])
async def test_door_holds_every_hostile_case(world: World, door: str) -> None:
    row = await _run_door(world, door)
    assert not _failures(row), "\n".join(_failures(row))
    assert sum(v != "n/a" for v in row.values()) >= 10, row  # the door really said most cases


async def test_mcp_stdio_holds_every_hostile_case(world: World, tmp_path: Path) -> None:
    creds = tmp_path / "client.json"
    password = world.bus.creds.passwords["client"]
    creds.write_text(json.dumps({"url": world.bus.url, "user": "client", "password": password}))
    args = ["-m", "services.gateway.stdio", "--owner", world.callers.bob, "--credentials", str(creds)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**24
    )
    raw = StdioRaw(proc)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}
    try:
        assert "result" in (await raw.request("initialize", init))["reply"]
        await raw.notify("notifications/initialized")
        world.callers.stdio_raw = raw
        params = StdioServerParameters(command=sys.executable, args=args)
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            world.callers.stdio = session
            row = await _run_door(world, "mcp-stdio")
    finally:
        world.callers.stdio = world.callers.stdio_raw = None
        if proc.stdin is not None:
            proc.stdin.close()
        await proc.wait()
    assert not _failures(row), "\n".join(_failures(row))
    assert sum(v != "n/a" for v in row.values()) >= 10, row


#: Bodies only the proxy has a shape for (what the OpenAI APIs take): each a typed 400.
PROXY_SHAPES = [
    ("/v1/chat/completions", {"model": "m", "messages": "hi"}),
    ("/v1/chat/completions", {"model": "m", "messages": []}),
    ("/v1/responses", {"model": "m", "input": {"role": "user", "content": "hi"}}),
    ("/v1/responses", {"model": "m", "input": 5}),
    ("/v1/responses", {"model": "m", "input": "hi", "instructions": ["obey"]}),
]


@pytest.mark.parametrize(("path", "body"), PROXY_SHAPES)
async def test_proxy_refuses_bodies_of_the_wrong_shape(world: World, path: str, body: dict[str, Any]) -> None:
    before = await _alice_rows(world)
    async with httpx.AsyncClient(base_url=world.callers.url, timeout=60) as http:
        reply = await http.post(path, json=body, headers={"authorization": f"Bearer {world.callers.bob_key}"})
    assert reply.status_code == 400, reply.text[:300]
    assert reply.headers["content-type"] == PROBLEM and reply.json()["err_code"] == "validation"
    assert await _alice_rows(world) == before


#: Queries only the entity-graph routes take (ids, pagination, filters): each a typed 400.
GRAPH_QUERIES = [
    ("/v1/entities", {"entity_id": "1' OR '1'='1"}),
    ("/v1/entities", {"offset": "-1"}),
    ("/v1/entities", {"q": "a\x00b"}),
    ("/v1/relations", {"limit": str(10**12)}),
    ("/v1/relations", {"relation": "x%' OR 1=1"}),
]


@pytest.mark.parametrize(("path", "params"), GRAPH_QUERIES)
async def test_graph_routes_refuse_hostile_queries(world: World, path: str, params: dict[str, str]) -> None:
    before = await _alice_rows(world)
    async with httpx.AsyncClient(base_url=world.callers.url, timeout=60) as http:
        reply = await http.get(path, params=params, headers={"authorization": f"Bearer {world.callers.bob_key}"})
    assert reply.status_code == 400, reply.text[:300]
    assert reply.headers["content-type"] == PROBLEM and reply.json()["err_code"] == "validation"
    assert await _alice_rows(world) == before


# --- one agent id, two owners -------------------------------------------------------------------
async def _via_nats(w: World, agent: str, query: str) -> dict[str, Any]:
    bob = w.callers.nats_bob  # bound to bob, and claims alice too: it still names bob here
    found = await bob.retrieve(w.callers.bob, query, agent_id=agent)
    listed = await bob.list(w.callers.bob, agent_id=agent)
    exported = await bob.export(w.callers.bob)
    cleared = await bob.clear(w.callers.bob, agent_id=agent)
    return {
        "search": [m.content for m in found.memories],
        "list": [m.content for m in listed.memories],
        "export": [json.loads(line)["content"] for line in exported.split("\n") if line],
        "clear": cleared.count,
    }


async def _via_rest(w: World, agent: str, query: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {w.callers.bob_key}"}
    async with httpx.AsyncClient(base_url=w.callers.url, timeout=60, headers=headers) as http:
        found = (await http.post("/v1/search", json={"query": query, "agent_id": agent})).raise_for_status()
        listed = (await http.get("/v1/memories", params={"agent_id": agent})).raise_for_status()
        exported = (await http.get("/v1/export")).raise_for_status()
        cleared = (await http.post("/v1/memories/clear", json={"agent_id": agent})).raise_for_status()
    return {
        "search": [m["content"] for m in found.json()["memories"]],
        "list": [m["content"] for m in listed.json()["memories"]],
        "export": [json.loads(line)["content"] for line in exported.text.split("\n") if line],
        "clear": cleared.json()["count"],
    }


async def _via_mcp(w: World, agent: str, query: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {w.callers.bob_key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{w.callers.url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()

        async def tool(name: str, args: dict[str, Any]) -> Any:
            result = await session.call_tool(name, args)
            assert not result.is_error, result.content
            return json.loads(result.content[0].text)  # type: ignore[union-attr]

        found = await tool("memory_search", {"query": query, "agent_id": agent})
        listed = await tool("memory_list", {"agent_id": agent})
        cleared = await tool("memory_clear", {"agent_id": agent})
    return {
        "search": [m["content"] for m in found["memories"]],
        "list": [m["content"] for m in listed["memories"]],
        "clear": cleared["count"],
    }


async def _via_proxy(w: World, agent: str, query: str) -> dict[str, Any]:
    w.llm.reply_text("Noted.")
    sdk = openai.AsyncOpenAI(base_url=f"{w.callers.url}/v1", api_key=w.callers.bob_key, max_retries=0, timeout=60)
    await sdk.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": query}],
        extra_headers={"x-memory-agent": agent},
    )
    return {"injected": json.dumps(w.llm.requests[-1]["messages"][:-1], ensure_ascii=False)}


SAME_AGENT = {"nats": _via_nats, "rest": _via_rest, "mcp-http": _via_mcp, "chat": _via_proxy}


@pytest.mark.parametrize("door", list(SAME_AGENT))
async def test_the_same_agent_id_reaches_only_its_own_owner(world: World, door: str) -> None:
    """Alice and bob both talk to an agent of one name: bob's search, list, export and clear by
    that agent (and the memory his proxied turn is given) hold his memory, never hers."""
    tag = uuid.uuid4().hex[:8]
    agent = f"helper-{tag}"
    hers = f"alice told the helper her locker code is {tag}1"
    his = f"bob told the helper his locker code is {tag}2"
    await world.app.create(world.alice, hers, agent_id=agent)
    await world.app.create(world.callers.bob, his, agent_id=agent)
    alice_before = await _alice_rows(world)

    seen = await SAME_AGENT[door](world, agent, f"locker code {tag}1 {tag}2")

    if door == "chat":
        assert his in seen["injected"] and hers not in seen["injected"], seen
    else:
        assert his in seen["search"] and hers not in seen["search"], seen
        assert seen["list"] == [his]
        assert seen["clear"] == 1
        assert hers not in seen.get("export", [])
        if door != "mcp-http":  # MCP has no export tool
            assert his in seen["export"]
        listed = await world.app.list(world.callers.bob, agent_id=agent)
        assert listed.memories == []
    assert await _alice_rows(world) == alice_before
    listed = await world.app.list(world.alice, agent_id=agent)
    assert [m.content for m in listed.memories] == [hers]


async def _raw_chat(url: str, key: str, header: bytes) -> tuple[int, str, bytes]:
    """POST a chat completion with one raw ``x-memory-agent`` header line (bytes no HTTP client
    sends): the status, the content type and the body."""
    address = httpx.URL(url)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "raw header turn"}]}).encode()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: memoryd\r\nconnection: close\r\n"
        b"authorization: Bearer " + key.encode() + b"\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nx-memory-agent: " + header + b"\r\n\r\n"
    )
    reader, writer = await asyncio.open_connection(address.host, address.port)
    try:
        writer.write(head + body)
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(), 60)
    finally:
        writer.close()
    status_line, _, rest = reply.partition(b"\r\n")
    headers, _, payload = rest.partition(b"\r\n\r\n")
    kind = b""
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        kind = value.strip() if name.lower() == b"content-type" else kind
    return int(status_line.split()[1]), kind.decode(), payload


#: Agent headers the proxy refuses before anything is forwarded or remembered; the HTTP server
#: itself refuses a NUL or a bare CR in a header (a plain 400, before the gateway sees it).
BAD_AGENT_HEADERS = [
    (b"a\x00b", None),
    (b"a\rb", None),
    (b"a\x01b", None),
    (b"a\x7fb", None),
    (b"\xff\xfe", PROBLEM),  # not UTF-8
    (b"\xc3\x28", PROBLEM),  # not UTF-8
    ("βοηθός\u0085".encode(), PROBLEM),  # UTF-8 of a C1 control character
    (b"a" * 257, PROBLEM),
]


@pytest.mark.parametrize(("value", "media"), BAD_AGENT_HEADERS)
async def test_proxy_refuses_a_hostile_agent_header(world: World, value: bytes, media: str | None) -> None:
    await eventually(lambda: consumers_idle(world.callers.nats_operator.nc, PIPELINE), "the pipeline to be idle")
    before, forwarded = await digest(world.pool, world.digest_sql), len(world.llm.requests)
    status, kind, payload = await _raw_chat(world.callers.url, world.callers.bob_key, value)
    assert status == 400, payload[:300]
    if media is not None:
        assert kind == media and json.loads(payload)["err_code"] == "validation", payload[:300]
        assert b"x-memory-agent" in payload
    assert len(world.llm.requests) == forwarded
    await eventually(lambda: consumers_idle(world.callers.nats_operator.nc, PIPELINE), "the pipeline to be idle")
    assert changed_tables(before, await digest(world.pool, world.digest_sql)) == []


async def test_proxy_reads_the_agent_header_as_utf8(world: World) -> None:
    """A UTF-8 agent name in the header is the agent the remembered turn carries (not its bytes read as latin-1)."""
    agent = f"βοηθός-{uuid.uuid4().hex[:6]}"
    world.llm.reply_text("Noted.")
    status, _, payload = await _raw_chat(world.callers.url, world.callers.bob_key, agent.encode())
    assert status == 200, payload[:300]

    async def remembered() -> bool:
        listed = await world.app.list(world.callers.bob, agent_id=agent)
        return "raw header turn" in [m.content for m in listed.memories]

    await eventually(remembered, "the turn to be remembered under the UTF-8 agent name", timeout=30)


# --- one event id, two owners -------------------------------------------------------------------
async def _publish_as_bob(w: World, door: str, event_id: str, text: str) -> None:
    messages = [{"role": "user", "content": text}]
    if door == "nats":
        await w.callers.nats_bob.publish_chat(w.callers.bob, messages, event_id=event_id)
        return
    headers = {"authorization": f"Bearer {w.callers.bob_key}"}
    async with httpx.AsyncClient(base_url=w.callers.url, timeout=60, headers=headers) as http:
        (await http.post("/v1/events", json={"event_id": event_id, "messages": messages})).raise_for_status()


@pytest.mark.parametrize("door", ["nats", "rest"])
@pytest.mark.parametrize("bob_first", [True, False])
async def test_one_event_id_from_two_owners_is_stored_for_each(world: World, door: str, bob_first: bool) -> None:
    """Two owners publish the same event id with the same turn (one payload but for the owner),
    in either order: neither is taken for a repeat of the other, each owner keeps its own turn."""
    event_id, text = f"shared-{uuid.uuid4().hex[:8]}", f"the same turn {uuid.uuid4().hex[:6]}"
    if not bob_first:
        await world.app.publish_chat(world.alice, [{"role": "user", "content": text}], event_id=event_id)
    await _publish_as_bob(world, door, event_id, text)
    if bob_first:
        await world.app.publish_chat(world.alice, [{"role": "user", "content": text}], event_id=event_id)

    async def both_kept() -> bool:
        mine = await world.app.list(world.callers.bob, limit=1000)
        hers = await world.app.list(world.alice, limit=1000)
        return text in [m.content for m in mine.memories] and text in [m.content for m in hers.memories]

    await eventually(both_kept, "the turn stored for both owners", timeout=30)
    rows = await world.pool.fetch("SELECT owner, outcome FROM events WHERE event_id = $1", event_id)
    assert sorted((r["owner"], r["outcome"]) for r in rows) == sorted(
        [(world.alice, "stored"), (world.callers.bob, "stored")]
    )
    turns = await world.pool.fetch("SELECT owner FROM memories WHERE content = $1 AND source = 'chat_turn'", text)
    assert sorted(r["owner"] for r in turns) == sorted([world.alice, world.callers.bob])
