"""Every bad input of issue 3 gets a typed error, writes nothing, and the service keeps going:
on the chat-event stream (dead letters) and on the memory API (error codes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.codec import decode_reply
from memoryd.errors import MemorydError, NotFound, TooLarge, ValidationFailed
from memoryd.rpc import raise_for
from memoryd.schemas import ChatEvent, RpcError
from memoryd.schemas.memory import MemoryCreateResult
from shared.service import ServiceContext
from tests.support.eventually import eventually

from .conftest import chat, dead_letters, publish, snapshot, turns, wait_event

TEN_MB = 10 * 1024 * 1024
METACHARACTERS = [
    "'; DROP TABLE memories; --",
    "' OR 1=1 --",
    "a & b | !c <-> d:*",
    "((( unbalanced",
    'say "unterminated',
    "100% of_the \\ backslash",
    "$1 $$ dollar $$",
    "::jsonb ->> 'x'",
]


def _event_json(**overrides: object) -> bytes:
    body: dict[str, object] = {
        "type": "mem.v1.chat_event",
        "event_id": "bad",
        "owner": "bad-owner",
        "occurred_at": "2026-01-01T00:00:00Z",
        "messages": [{"role": "user", "content": "hello"}],
    }
    body.update(overrides)
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


BAD_EVENTS: dict[str, tuple[bytes, str]] = {
    "undecodable": (b"\xff\xfe\x00 not json", "malformed JSON"),
    "truncated": (b'{"type": "mem.v1.chat_event", "owner": ', "malformed JSON"),
    "wrong_types": (_event_json(messages="hello"), "$.messages"),
    "wrong_content_type": (_event_json(messages=[{"role": "user", "content": 5}]), "$.messages[0].content"),
    "missing_owner": (_event_json(owner=None), "owner"),
    "bad_owner": (_event_json(owner="a b.c"), "$.owner"),
    "empty_content": (_event_json(messages=[{"role": "user", "content": ""}]), "$.messages[0].content"),
    "blank_content": (_event_json(messages=[{"role": "user", "content": " \n\t "}]), "$.messages[0].content"),
    "no_messages": (_event_json(messages=[]), "$.messages"),
    "unknown_role": (_event_json(messages=[{"role": "wizard", "content": "hi"}]), "$.messages[0].role"),
    "surrogate_escape": (_event_json().replace(b'"hello"', b'"bad \\ud800 text"'), "validation"),
    "invalid_utf8": (_event_json().replace(b'"hello"', b'"bad \xed\xa0\x80 text"'), "UTF-8"),
    "ten_megabytes": (_event_json(messages=[{"role": "user", "content": "x" * TEN_MB}]), "too_large"),
}


async def test_bad_chat_events_are_dead_lettered_and_write_nothing(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    state = await snapshot(pool)
    for name, (payload, _) in BAD_EVENTS.items():
        await publish(nc, payload, msg_id=f"bad-{name}")

    async def all_dead() -> bool:
        return len(await dead_letters(nc)) >= len(BAD_EVENTS)

    await eventually(all_dead, timeout=60, what="dead letters")
    letters = {letter.headers["Nats-Msg-Id"].removeprefix("bad-"): letter for letter in await dead_letters(nc)}
    assert set(letters) == set(BAD_EVENTS)
    for name, (payload, expected) in BAD_EVENTS.items():
        letter = letters[name]
        assert letter.stage == "ingest" and letter.subject == "mem.v1.events.chat"
        assert expected in letter.error, (name, letter.error)
        assert letter.deliveries == 1, name  # never retried: it can never succeed
        assert letter.payload == payload[: len(letter.payload)]
    assert letters["ten_megabytes"].error.startswith("too_large:")
    assert await snapshot(pool) == state

    # the service keeps going
    await publish(nc, chat(owner, ("user", "still here"), event_id="after-bad"))
    await wait_event(pool, owner, "after-bad")
    assert [r["content"] for r in await turns(pool, owner)] == ["still here"]


async def test_nul_in_a_chat_event_is_dead_lettered_at_once(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    """Decodes fine, but PostgreSQL cannot store U+0000: a typed refusal, so the DLQ on the first
    delivery (retrying cannot help)."""
    state = await snapshot(pool)
    event = chat(owner, ("user", "fine"), ("user", "nul \x00 inside"), event_id="nul")
    await publish(nc, event, "nul")
    [letter] = await eventually(lambda: dead_letters(nc), timeout=30, what="dead letter")
    assert letter.deliveries == 1
    assert letter.error.startswith("ValidationFailed:") and "$.messages[1].content" in letter.error
    assert await snapshot(pool) == state


async def test_metacharacters_in_chat_content_are_stored_literally(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    await publish(nc, chat(owner, *[("user", text) for text in METACHARACTERS], event_id="meta"))
    await wait_event(pool, owner, "meta")
    assert sorted(r["content"] for r in await turns(pool, owner)) == sorted(METACHARACTERS)
    assert await pool.fetchval("SELECT count(*) FROM memories") > 0  # the table is still there


async def _raw(nc: Client, op: str, payload: bytes) -> None:
    msg = await nc.request(f"mem.v1.rpc.{op}", payload, timeout=10)
    reply = decode_reply(msg.data, MemoryCreateResult)
    assert isinstance(reply, RpcError), reply
    raise_for(reply)


def _create(owner: str, **fields: object) -> bytes:
    body = {"type": "mem.v1.memory_create_request", "owner": owner, "content": "ok", **fields}
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


@pytest.mark.parametrize(
    ("name", "payload", "error", "text"),
    [
        ("undecodable", lambda o: b"\xff\xfe\x00", ValidationFailed, "malformed JSON"),
        ("not_an_object", lambda o: b"[1, 2]", ValidationFailed, "Expected `object`"),
        ("wrong_type", lambda o: _create(o, content=5), ValidationFailed, "$.content"),
        ("wrong_metadata", lambda o: _create(o, metadata="x"), ValidationFailed, "$.metadata"),
        ("missing_owner", lambda o: _create(None), ValidationFailed, "owner"),
        ("empty_content", lambda o: _create(o, content=""), ValidationFailed, "$.content"),
        ("blank_content", lambda o: _create(o, content=" \t\n "), ValidationFailed, "$.content"),
        ("ten_megabytes", lambda o: _create(o, content="x" * TEN_MB), TooLarge, "limit"),
        ("too_long_content", lambda o: _create(o, content="x" * 70_000), ValidationFailed, "$.content"),
        ("surrogate", lambda o: _create(o).replace(b'"ok"', b'"a \\udc00 b"'), ValidationFailed, "JSON"),
        ("invalid_utf8", lambda o: _create(o).replace(b'"ok"', b'"a \xff b"'), ValidationFailed, "UTF-8"),
        ("nul", lambda o: _create(o, content="a\x00b"), ValidationFailed, "NUL"),
        ("nul_in_metadata", lambda o: _create(o, metadata={"k": "a\x00"}), ValidationFailed, "$.metadata"),
        ("unknown_type", lambda o: _create(o, memory_type="gossip"), ValidationFailed, "$.memory_type"),
        ("expired", lambda o: _create(o, expires_at="2020-01-01T00:00:00Z"), ValidationFailed, "expires_at"),
        ("session_scope", lambda o: _create(o, scope="session"), ValidationFailed, "session_id"),
        ("blank_key", lambda o: _create(o, key="  "), ValidationFailed, "$.key"),
    ],
)
async def test_bad_create_requests(
    client: MemoryClient,
    nc: Client,
    pool: asyncpg.Pool,
    owner: str,
    name: str,
    payload,
    error,
    text,  # type: ignore[no-untyped-def]
) -> None:
    state = await snapshot(pool)
    with pytest.raises(error) as caught:
        await _raw(nc, "memory.create", payload(owner))
    assert text in caught.value.description
    assert await snapshot(pool) == state
    assert (await client.create(owner, "the service keeps going")).created


async def test_client_refuses_what_cannot_be_sent(client: MemoryClient, pool: asyncpg.Pool, owner: str) -> None:
    state = await snapshot(pool)
    with pytest.raises(ValidationFailed, match="surrogate"):
        await client.create(owner, "lone \ud800 surrogate")
    with pytest.raises(ValidationFailed, match="surrogate"):
        await client.publish_chat(owner, [{"role": "user", "content": "lone \udfff"}])
    with pytest.raises(TooLarge):
        await client.publish_chat(owner, [{"role": "user", "content": "x" * 1_000_000}] * 5)
    with pytest.raises(ValidationFailed, match=r"\$.messages\[0\].content"):
        await client.publish_chat(owner, [{"role": "user", "content": "   "}])
    with pytest.raises(ValidationFailed, match=r"\$.owner"):
        await client.publish_chat("not a valid owner!", [{"role": "user", "content": "hi"}])
    with pytest.raises(ValidationFailed):
        await client.publish_chat(owner, [{"role": "wizard", "content": "hi"}])
    assert await snapshot(pool) == state


async def test_bad_update_list_and_ids(client: MemoryClient, pool: asyncpg.Pool, owner: str) -> None:
    mid = (await client.create(owner, "original")).memory.id
    state = await snapshot(pool)
    past = datetime.now(UTC) - timedelta(seconds=1)
    cases: list[tuple[type[MemorydError], object]] = [
        (ValidationFailed, client.update(owner, mid, expires_at=past)),
        (ValidationFailed, client.update(owner, mid, memory_type="gossip")),
        (ValidationFailed, client.update(owner, mid, content=" ")),
        (ValidationFailed, client.update(owner, mid, content="a\x00")),
        (ValidationFailed, client.update(owner, "not-a-uuid", content="x")),
        (ValidationFailed, client.get(owner, "1234")),
        (ValidationFailed, client.list(owner, limit=0)),
        (ValidationFailed, client.list(owner, limit=5000)),
        (ValidationFailed, client.list(owner, state="deleted")),
        (ValidationFailed, client.list(owner, q="a\x00b")),
        (ValidationFailed, client.clear(owner, older_than_days=-1)),
        (ValidationFailed, client.clear(owner, memory_type="gossip")),
        (NotFound, client.delete(owner, "00000000-0000-0000-0000-000000000000")),
    ]
    for error, call in cases:
        with pytest.raises(error):
            await call  # type: ignore[misc]
    assert await snapshot(pool) == state
    assert (await client.get(owner, mid)).content == "original"


async def test_metacharacters_are_stored_and_searched_literally(client: MemoryClient, owner: str) -> None:
    ids = {text: (await client.create(owner, f"note: {text}")).memory.id for text in METACHARACTERS}
    for text in METACHARACTERS:
        got = await client.get(owner, ids[text])
        assert got.content == f"note: {text}"
        found = await client.list(owner, q=text)
        assert ids[text] in [m.id for m in found.memories], text
    for q in ["!", "&", "|", ":*", "<->", "'", '"', "\\", "%", "_", "(", "--", ";", "$1"]:
        listed = await client.list(owner, q=q)  # never an error, whatever the query
        literal = {ids[t] for t in METACHARACTERS if q in f"note: {t}"}
        assert literal and literal <= {m.id for m in listed.memories}, q
    assert (await client.list(owner, q="%")).total == 1  # LIKE wildcards are literal
    assert (await client.list(owner, q="_")).total == 1
    assert (await client.list(owner)).total == len(METACHARACTERS)


def test_bad_event_fixtures_are_really_bad() -> None:
    """Each payload above fails the event decoder on its own (not by accident of the test)."""
    from memoryd.codec import decode

    for name, (payload, _) in BAD_EVENTS.items():
        with pytest.raises((ValidationFailed, TooLarge)):
            decode(payload, ChatEvent)
        assert name
