"""The conflict review queue through the sleep service: freeze mode parks pairs, `conflicts.list`
shows them with a pending count, `conflicts.resolve` settles them (accept, merge, dismiss) with a
stored receipt, owner-bound like the memory ops."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.errors import Conflict, Forbidden, NotFound, ValidationFailed
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.conflicts import (
    ConflictListRequest,
    ConflictListResult,
    ConflictResolveRequest,
    ConflictResolveResult,
)
from memoryd.subjects import owner_rpc_subject

from .conftest import SleepLlm, add_memory, memory_row, put_settings, run_sleep, sleep_service
from .test_conflict import ledger, seed_pair, vec


async def listed(nc: Client, owner: str, status: str = "pending") -> ConflictListResult:
    result: ConflictListResult = await call(nc, "conflicts.list", ConflictListRequest(owner=owner, status=status))
    return result


async def resolve(nc: Client, owner: str, entry: str, action: str, **fields: str) -> ConflictResolveResult:
    request = ConflictResolveRequest(owner=owner, id=entry, action=action, resolved_by="test:reviewer", **fields)
    result: ConflictResolveResult = await call(nc, "conflicts.resolve", request)
    return result


def entry_of(result: ConflictListResult, memory_id: str) -> str:
    (found,) = [item.id for item in result.items if memory_id in (item.a.id, item.b.id)]
    return found


async def test_freeze_mode_without_an_llm_route_still_parks_pairs(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client
) -> None:
    await put_settings(pool, "o1", {"conflictFreezeEnabled": True})
    tea = await seed_pair(pool, "o1", 0, "likes tea", "likes green tea")
    async with sleep_service(nats_server, pg_dsn, None):
        run = await run_sleep(nc, "o1")
        queue = await listed(nc, "o1")
    phase = run.phases["conflict_resolution"]
    assert (phase["status"], phase["frozen"], phase["batches"]) == ("ok", 1, 0)
    assert queue.pending == 1
    (item,) = queue.items
    assert {item.a.id, item.b.id} == set(tea) and item.run_id == run.run_id
    assert {item.a.content, item.b.content} == {"likes tea", "likes green tea"}


async def test_parked_pairs_are_listed_and_resolved_with_receipts(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "*", {"conflictFreezeEnabled": True})  # every owner
    tea = await seed_pair(pool, "o1", 0, "likes tea", "likes green tea")
    city = await seed_pair(pool, "o1", 1, "lives in Berlin", "lives in Lisbon")
    vim = await seed_pair(pool, "o1", 2, "uses vim", "uses neovim")
    other = await seed_pair(pool, "o2", 0, "o2 likes tea", "o2 likes green tea")
    async with sleep_service(nats_server, pg_dsn, llm):
        await run_sleep(nc, "o1")
        await run_sleep(nc, "o2")
        queue = await listed(nc, "o1")
        assert queue.pending == 3 and len(queue.items) == 3
        assert llm.fake.requests == []

        accepted = await resolve(nc, "o1", entry_of(queue, tea[0]), "accept", keep=tea[1])
        merged = await resolve(nc, "o1", entry_of(queue, city[0]), "merge", keep=city[0], content="lives in Lisbon")
        dismissed = await resolve(nc, "o1", entry_of(queue, vim[0]), "dismiss")
        done = await listed(nc, "o1", "resolved")

        with pytest.raises(Conflict, match="resolved already"):
            await resolve(nc, "o1", entry_of(queue, vim[0]), "dismiss")
        with pytest.raises(NotFound):  # another owner's entry is not in this owner's queue
            await resolve(nc, "o1", entry_of(await listed(nc, "o2"), other[0]), "dismiss")
        with pytest.raises(NotFound):
            await resolve(nc, "o1", str(uuid.uuid4()), "dismiss")
        with pytest.raises(ValidationFailed) as caught:
            await resolve(nc, "o2", entry_of(await listed(nc, "o2"), other[0]), "merge", keep=other[0])
        assert caught.value.field == "$.content"
        with pytest.raises(Forbidden):  # the owner-bound subject of o1 with o2 in the payload
            await call(
                nc, "conflicts.list", ConflictListRequest(owner="o2"), subject=owner_rpc_subject("conflicts.list", "o1")
            )
        bound = await call(
            nc, "conflicts.list", ConflictListRequest(owner="o2"), subject=owner_rpc_subject("conflicts.list", "o2")
        )
    # accept: the other side archived into the kept one, nothing rewritten
    assert accepted.receipt.kept == tea[1] and accepted.receipt.archived == tea[0]
    assert accepted.receipt.resolved_by == "test:reviewer" and accepted.pending == 2
    gone = await memory_row(pool, tea[0])
    assert gone["state"] == "archived" and gone["metadata"]["mergedInto"] == tea[1]
    assert (await memory_row(pool, tea[1]))["content"] == "likes green tea"
    # merge: the kept memory's text replaced (old text in its history), the other archived
    assert (merged.receipt.content_before, merged.receipt.content_after) == ("lives in Berlin", "lives in Lisbon")
    kept = await memory_row(pool, city[0])
    assert kept["content"] == "lives in Lisbon" and kept["state"] == "active" and kept["needs_reindex"]
    history = await pool.fetch(
        "SELECT old_content, reason FROM content_history WHERE memory_id = $1", uuid.UUID(city[0])
    )
    assert [(r["old_content"], r["reason"]) for r in history] == [("lives in Berlin", "review:merge")]
    assert (await memory_row(pool, city[1]))["metadata"]["mergedInto"] == city[0]
    # dismiss: both stay, the pair recorded as judged
    assert dismissed.receipt.kept is None and dismissed.pending == 0
    assert [(await memory_row(pool, m))["state"] for m in vim] == ["active", "active"]
    assert [r["outcome"] for k, r in (await ledger(pool, "o1")).items() if {str(i) for i in k} == set(vim)] == [
        "dismissed"
    ]
    # the receipts are stored with the entries: listed as resolved, newest first
    assert done.pending == 0
    assert [(i.receipt.action, i.receipt.resolved_at) for i in done.items if i.receipt] == [
        ("dismiss", dismissed.receipt.resolved_at),
        ("merge", merged.receipt.resolved_at),
        ("accept", accepted.receipt.resolved_at),
    ]
    row = await pool.fetchrow(
        "SELECT resolution, resolved_by FROM conflict_pending WHERE id = $1", uuid.UUID(entry_of(queue, city[0]))
    )
    assert (row["resolution"], row["resolved_by"]) == ("merge", "test:reviewer")
    assert bound.pending == 1 and {bound.items[0].a.id, bound.items[0].b.id} == set(other)


async def test_a_dismissed_pair_stays_out_of_the_queue_until_a_side_changes(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await put_settings(pool, "o1", {"conflictFreezeEnabled": True})
    own = await seed_pair(pool, "o1", 0, "likes tea", "likes green tea")
    mine = await add_memory(pool, "o1", "Deploys happen on Fridays", vector=vec(1))
    shared_one = await add_memory(pool, "o1", "Deploys happen on Thursdays", vector=vec(1, 0.1), scope="global")
    async with sleep_service(nats_server, pg_dsn, llm):
        await run_sleep(nc, "o1")
        queue = await listed(nc, "o1")
        assert queue.pending == 2
        cross = entry_of(queue, shared_one)
        with pytest.raises(Forbidden, match="global"):  # the global memory is never archived by a resolution
            await resolve(nc, "o1", cross, "accept", keep=mine)
        for item in queue.items:
            await resolve(nc, "o1", item.id, "dismiss")
        await put_settings(pool, "o1", {"sleepConflictStrictness": "aggressive"})  # a new threshold: a full scan
        again = await run_sleep(nc, "o1")
        still_empty = await listed(nc, "o1")
        await pool.execute(
            "UPDATE memories SET content = 'likes black tea', updated_at = clock_timestamp() WHERE id = $1",
            uuid.UUID(own[1]),
        )
        await pool.execute("UPDATE memories SET updated_at = clock_timestamp() WHERE id = $1", uuid.UUID(mine))
        changed = await run_sleep(nc, "o1")
        requeued = await listed(nc, "o1")
    phase = again.phases["conflict_resolution"]
    assert again.counters["conflictScan"]["since"] is None  # every pair was found again, and skipped
    assert (phase["frozen"], phase["crossScopePending"], phase["ledgerSkipped"]) == (0, 0, 1)
    assert still_empty.pending == 0
    assert (
        changed.phases["conflict_resolution"]["frozen"],
        changed.phases["conflict_resolution"]["crossScopePending"],
    ) == (1, 1)
    assert requeued.pending == 2
    assert (await memory_row(pool, shared_one))["state"] == "active"
    assert llm.fake.requests == []
