"""The memory API (memory.* RPCs served by ingest) through ``MemoryClient`` on real NATS + PostgreSQL."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.errors import NotFound, ValidationFailed
from memoryd.schemas import MemoryRecord
from shared.service import ServiceContext

from .conftest import JobTap, snapshot, wait_event


async def test_create_get_update_delete(client: MemoryClient, nc: Client, pool: asyncpg.Pool, owner: str) -> None:
    made = await client.create(owner, "User prefers dark mode", metadata={"origin": "settings page"})
    assert made.created and made.memory.owner == owner and made.memory.source == "api"
    assert (made.memory.memory_type, made.memory.state, made.memory.needs_reindex) == ("factual", "active", True)
    mid = made.memory.id
    assert await client.get(owner, mid) == made.memory

    same = await client.update(owner, mid, metadata={"origin": "profile"})
    assert not same.reembed and same.memory.content == "User prefers dark mode"
    assert same.memory.metadata == {"origin": "profile"}
    changed = await client.update(owner, mid, content="User prefers light mode", memory_type="procedural")
    assert changed.reembed and changed.memory.content == "User prefers light mode"
    assert changed.memory.memory_type == "procedural" and changed.memory.metadata == {"origin": "profile"}
    history = await pool.fetch("SELECT old_content, reason FROM content_history WHERE memory_id = $1", uuid.UUID(mid))
    assert [(r["old_content"], r["reason"]) for r in history] == [("User prefers dark mode", "api_update")]

    tap = await JobTap(nc).poll()
    assert [(j.memory_id, j.reason) for j in tap.embed] == [(mid, "new"), (mid, "update")]

    # a vector in pgvector and the history row go with it, and the receipt says so
    await pool.execute(
        "INSERT INTO memory_embeddings (memory_id, signature, owner, dim, embedding) VALUES ($1, 's', $2, 3, $3)",
        uuid.UUID(mid),
        owner,
        np.array([1, 0, 0], dtype=np.float32),
    )
    gone = await client.delete(owner, mid)
    assert gone.id == mid
    assert (gone.removed.rows, gone.removed.pgvector_vectors, gone.removed.history_rows) == (1, 1, 1)
    assert gone.removed.qdrant_points == 0
    assert await pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE memory_id = $1", uuid.UUID(mid)) == 0
    with pytest.raises(NotFound):
        await client.get(owner, mid)
    with pytest.raises(NotFound):
        await client.delete(owner, mid)
    with pytest.raises(NotFound):
        await client.update(owner, mid, content="x")


async def test_keyed_create_upserts(client: MemoryClient, nc: Client, owner: str) -> None:
    first = await client.create(owner, "User prefers tabs", key="preference:tabs", metadata={"a": 1})
    again = await client.create(owner, "User prefers tabs", key="preference:tabs", metadata={"b": 2})
    changed = await client.create(owner, "User prefers tabs (4 wide)", key="preference:tabs")
    assert first.created and not again.created and not changed.created
    assert first.memory.id == again.memory.id == changed.memory.id
    assert again.memory.metadata == {"a": 1, "b": 2}
    tap = await JobTap(nc).poll()
    assert [j.reason for j in tap.embed] == ["new", "update"]  # unchanged content: no re-embed
    listed = await client.list(owner)
    assert listed.total == 1 and listed.memories[0].content == "User prefers tabs (4 wide)"


async def test_list_filters_paging_and_stats(client: MemoryClient, pool: asyncpg.Pool, owner: str) -> None:
    ids = []
    for i in range(7):
        kind = "factual" if i % 2 == 0 else "episodic"
        made = await client.create(
            owner, f"note {i} about postgres indexes" + "!" * i, memory_type=kind, session_id="s"
        )
        ids.append(made.memory.id)
    await client.create(owner, "User likes Go", session_id="t")
    await pool.execute(
        "UPDATE memories SET last_accessed_at = now() WHERE id = ANY($1::uuid[])", [uuid.UUID(i) for i in ids[:2]]
    )
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = $1", uuid.UUID(ids[6]))

    everything = await client.list(owner)
    assert everything.total == 8 and len(everything.memories) == 8
    assert everything.hit_rate == 0.25  # 2 of 8 were ever retrieved
    assert everything.tokens_used == sum(-(-len(m.content) // 4) for m in everything.memories)
    created = [m.created_at for m in everything.memories]
    assert created == sorted(created, reverse=True)  # newest first

    page2 = await client.list(owner, limit=3, page=2)
    assert page2.total == 8 and [m.id for m in page2.memories] == [m.id for m in everything.memories[3:6]]
    off = await client.list(owner, limit=3, offset=3)
    assert [m.id for m in off.memories] == [m.id for m in page2.memories]
    beyond = await client.list(owner, limit=3, page=10)
    assert beyond.memories == [] and beyond.total == 8 and beyond.tokens_used == 0

    assert (await client.list(owner, memory_type="episodic")).total == 3
    assert (await client.list(owner, session_id="t")).memories[0].content == "User likes Go"
    assert [m.id for m in (await client.list(owner, state="archived")).memories] == [ids[6]]
    found = await client.list(owner, q="Postgres index")  # stemmed full-text match
    assert found.total == 7
    assert (await client.list(owner, q="go", session_id="t")).total == 1
    assert (await client.list(owner, q="nothing-like-this")).total == 0
    assert (await client.list(owner, q="   ")).total == 8  # blank query: no filter


async def test_clear_by_type_and_age(client: MemoryClient, pool: asyncpg.Pool, owner: str) -> None:
    old = await client.create(owner, "old fact")
    await client.create(owner, "new fact")
    await client.create(owner, "an episode", memory_type="episodic")
    await pool.execute(
        "UPDATE memories SET created_at = now() - interval '40 days' WHERE id = $1", uuid.UUID(old.memory.id)
    )
    aged = await client.clear(owner, older_than_days=30)
    assert aged.count == 1 and aged.removed.rows == 1
    typed = await client.clear(owner, memory_type="episodic")
    assert typed.count == 1
    assert [m.content for m in (await client.list(owner)).memories] == ["new fact"]
    rest = await client.clear(owner)
    assert rest.count == 1 and (await client.list(owner)).total == 0
    assert (await client.clear(owner)).count == 0


async def test_export_import_roundtrip(client: MemoryClient, nc: Client, pool: asyncpg.Pool, owner: str) -> None:
    other = f"{owner}-b"
    a = await client.create(owner, "User prefers TypeScript", key="preference:typescript", metadata={"k": [1, 2]})
    b = await client.create(owner, "Met Ana in Lisbon", memory_type="episodic", session_id="s1")
    expires = datetime.now(UTC) + timedelta(days=3)
    await client.create(owner, "temporary", expires_at=expires)
    await pool.execute(
        "UPDATE memories SET state = 'summary', full_content = 'the long original' WHERE id = $1",
        uuid.UUID(b.memory.id),
    )

    dump = await client.export(owner)
    records = [MemoryRecord(**{k: v for k, v in json.loads(line).items() if k != "type"}) for line in dump.splitlines()]
    assert len(records) == 3 and {r.owner for r in records} == {owner}
    assert [r.id for r in records] == sorted(r.id for r in records)
    assert (await client.export(owner, include_archived=False)).count("\n") == 3
    paged = [p async for p in client.export_pages(owner, page_size=2)]
    assert [p.count for p in paged] == [2, 1] and "".join(p.lines for p in paged) == dump

    # importing into the same owner changes nothing
    same = await client.import_lines(owner, dump)
    assert (same.imported, same.updated, same.unchanged, same.errors) == (0, 0, 3, [])

    # importing into another owner never touches the first one's rows
    before = await pool.fetch("SELECT id, owner, content, updated_at FROM memories WHERE owner = $1 ORDER BY id", owner)
    copied = await client.import_lines(other, dump)
    assert (copied.imported, copied.updated, copied.unchanged) == (3, 0, 0)
    after = await pool.fetch("SELECT id, owner, content, updated_at FROM memories WHERE owner = $1 ORDER BY id", owner)
    assert before == after
    theirs = (await client.list(other)).memories
    assert {m.owner for m in theirs} == {other} and {m.source for m in theirs} == {"import"}
    assert {m.id for m in theirs}.isdisjoint({r.id for r in records})
    summary = next(m for m in theirs if m.session_id == "s1")
    assert (summary.state, summary.full_content, summary.memory_type) == ("summary", "the long original", "episodic")
    assert next(m for m in theirs if m.key == "preference:typescript").metadata == {"k": [1, 2]}
    assert next(m for m in theirs if m.content == "temporary").expires_at == expires
    again = await client.import_lines(other, dump)
    assert (again.imported, again.updated, again.unchanged) == (0, 0, 3)

    # a changed line updates; a keyed line without a matching id upserts by key
    edited = dump.replace("Met Ana in Lisbon", "Met Ana in Porto")
    keyed = json.dumps(
        {
            "id": str(uuid.uuid4()),
            "owner": "someone-else",
            "memory_type": "factual",
            "content": "User prefers TypeScript 5",
            "source": "rule",
            "state": "active",
            "created_at": "2025-01-01T00:00:00Z",
            "updated_at": "2025-01-01T00:00:00Z",
            "content_hash": "x",
            "key": "preference:typescript",
        }
    )
    result = await client.import_lines(owner, edited + keyed + "\n")
    assert (result.imported, result.updated, result.unchanged) == (0, 2, 2)
    assert (await client.get(owner, b.memory.id)).content == "Met Ana in Porto"
    typescript = await client.get(owner, a.memory.id)
    assert (typescript.content, typescript.source, typescript.owner) == ("User prefers TypeScript 5", "import", owner)
    assert (await client.list(owner)).total == 3
    assert await pool.fetchval("SELECT count(*) FROM memories WHERE owner = 'someone-else'") == 0


async def test_import_reports_bad_lines_and_writes_nothing(
    client: MemoryClient, pool: asyncpg.Pool, owner: str
) -> None:
    await client.create(owner, "keep me")
    good = (await client.export(owner)).strip()
    lines = [
        good,
        "",
        "not json",
        good.replace('"memory_type":"factual"', '"memory_type":"gossip"'),
        good.replace('"content":"keep me"', '"content":"   "'),
        '{"id": 5}',
        good.replace('"content":"keep me"', '"content":"nul \\u0000 here"'),
        good.replace('"content":"keep me"', '"content":"bad \\ud800 surrogate"'),
    ]
    state = await snapshot(pool)
    result = await client.import_lines(f"{owner}-x", "\n".join(lines))
    assert (result.imported, result.updated, result.unchanged) == (0, 0, 0)
    assert [e.line for e in result.errors] == [3, 4, 5, 6, 7, 8]
    assert "malformed" in result.errors[0].error.lower() or "json" in result.errors[0].error.lower()
    assert "memory_type" in result.errors[1].error
    assert "content" in result.errors[2].error
    assert "NUL" in result.errors[4].error
    assert await snapshot(pool) == state


async def test_two_owners_never_see_each_other(client: MemoryClient, pool: asyncpg.Pool, owner: str) -> None:
    alice, bob = f"{owner}-alice", f"{owner}-bob"
    secret = await client.create(alice, "Alice's secret: the vault code is 1234", key="secret", session_id="shared")
    await client.create(bob, "Bob likes tea", key="secret", session_id="shared")
    sid = secret.memory.id
    state = await snapshot(pool)
    with pytest.raises(NotFound):
        await client.get(bob, sid)
    with pytest.raises(NotFound):
        await client.update(bob, sid, content="pwned")
    with pytest.raises(NotFound):
        await client.delete(bob, sid)
    assert await snapshot(pool) == state
    for listed in (
        await client.list(bob),
        await client.list(bob, q="vault code"),
        await client.list(bob, session_id="shared"),
    ):
        assert all(m.owner == bob for m in listed.memories) and "vault" not in str(listed.memories)
    assert (await client.list(bob, q="vault")).total == 0
    assert "vault" not in await client.export(bob)
    # an import by bob of alice's export creates bob's own copy, alice's row stays as it was
    dump = await client.export(alice)
    await client.import_lines(bob, dump.replace("1234", "0000"))
    assert (await client.get(alice, sid)).content == "Alice's secret: the vault code is 1234"
    assert (await client.clear(bob)).count == 1  # bob's key 'secret' row, updated by the import
    assert (await client.get(alice, sid)).owner == alice
    assert (await client.list(alice)).total == 1


async def test_health_through_client(client: MemoryClient, ingest: ServiceContext) -> None:
    health = await client.health("ingest")
    assert (health.service, health.status) == ("ingest", "ok")
    assert health.checks["postgres"] == "ok"


async def test_history_batch_add_and_agents_through_the_nats_client(
    client: MemoryClient, pool: asyncpg.Pool, owner: str
) -> None:
    made = await client.create(owner, "Edits with vim", agent_id="coder")
    assert made.memory.agent_id == "coder"
    await client.update(owner, made.memory.id, content="Edits with helix")
    [entry] = await client.history(owner, made.memory.id)
    assert (entry.old_content, entry.new_content, entry.reason) == ("Edits with vim", "Edits with helix", "api_update")
    with pytest.raises(NotFound):
        await client.history(owner, str(uuid.uuid4()))

    done = await client.add_batch(
        owner,
        [
            "Drinks green tea",
            {"content": "Flew to Oslo", "memory_type": "episodic", "agent_id": "travel"},
            {"content": "   "},
            {"messages": "I love cross-country skiing"},
        ],
        agent_id="coder",
        session_id="s1",
        metadata={"via": "nats"},
    )
    assert (done.stored, done.published, done.failed) == (2, 1, 1)
    tea, oslo, blank, chat = done.results
    assert tea.memory is not None and oslo.memory is not None and blank.error is not None
    assert (tea.memory.agent_id, tea.memory.session_id, tea.memory.metadata) == ("coder", "s1", {"via": "nats"})
    assert (oslo.memory.agent_id, oslo.memory.memory_type) == ("travel", "episodic")  # an item's own agent wins
    assert (blank.error.code, blank.error.field) == (400, "$.items[2].content")
    assert chat.event_id is not None
    await wait_event(pool, owner, chat.event_id)
    turn = await pool.fetchrow(
        "SELECT agent_id, session_id, content FROM memories WHERE owner = $1 AND source = 'chat_turn'", owner
    )
    assert tuple(turn) == ("coder", "s1", "I love cross-country skiing")  # the event's agent reached its turn

    coder = await client.list(owner, agent_id="coder")
    assert sorted(m.content for m in coder.memories) == [
        "Drinks green tea",
        "Edits with helix",
        "I love cross-country skiing",
    ]
    cleared = await client.clear(owner, agent_id="coder")
    assert cleared.count == 3
    assert [m.content for m in (await client.list(owner)).memories] == ["Flew to Oslo"]
    with pytest.raises(ValidationFailed) as empty:
        await client.add_batch(owner, [])
    assert empty.value.field == "$.items"
    with pytest.raises(ValidationFailed) as long:
        await client.list(owner, agent_id="a" * 257)
    assert long.value.field == "$.agent_id"
