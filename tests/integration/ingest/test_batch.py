"""``memory.batch`` on real NATS + PostgreSQL: texts stored, messages published as chat events,
each item's error typed and placed at its path while the other items are still done."""

from __future__ import annotations

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.errors import Forbidden, ValidationFailed
from memoryd.rpc import call
from memoryd.schemas import ChatMessage
from memoryd.schemas.memory import BatchItem, MemoryBatchRequest, MemoryBatchResult
from memoryd.subjects import owner_rpc_subject
from shared.service import ServiceContext

from .conftest import JobTap, turns, wait_event


async def batch(nc: Client, owner: str, *items: BatchItem) -> MemoryBatchResult:
    result: MemoryBatchResult = await call(nc, "memory.batch", MemoryBatchRequest(owner=owner, items=list(items)))
    return result


async def test_texts_and_messages_with_per_item_errors(
    nc: Client, ingest: ServiceContext, pool: asyncpg.Pool, owner: str
) -> None:
    done = await batch(
        nc,
        owner,
        BatchItem(content="Prefers green tea", metadata={"src": "mem0"}, session_id="s1"),
        BatchItem(content=""),  # blank: refused, the others are still done
        BatchItem(content="Works in Lisbon", memory_type="tasks"),  # unknown type
        BatchItem(content="Lives in Porto", key="city", memory_type="semantic"),
        BatchItem(messages=[ChatMessage(role="user", content="I love hiking")], event_id="ev-batch-1"),
        BatchItem(content="both", messages=[ChatMessage(role="user", content="x")]),
        BatchItem(content="Lives in Braga", key="city", memory_type="semantic"),  # same key: updated
        BatchItem(content="a\x00b"),  # what Postgres cannot store
    )
    assert (done.stored, done.published, done.failed) == (3, 1, 4)
    assert [r.index for r in done.results] == list(range(8))
    tea, blank, bad_type, porto, event, both, braga, nul = done.results
    assert nul.error is not None and (nul.error.code, nul.error.field) == (400, "$.items[7].content")
    assert tea.created and tea.memory is not None
    assert (tea.memory.content, tea.memory.metadata, tea.memory.session_id) == (
        "Prefers green tea",
        {"src": "mem0"},
        "s1",
    )
    assert tea.memory.source == "api" and tea.memory.owner == owner
    assert blank.error is not None and (blank.error.code, blank.error.err_code) == (400, "validation")
    assert blank.error.field == "$.items[1].content" and "`$.items[1].content`" in blank.error.description
    assert bad_type.error is not None and bad_type.error.field == "$.items[2].memory_type"
    assert porto.created and porto.memory is not None and porto.memory.key == "city"
    assert event.event_id == "ev-batch-1" and event.duplicate is False and event.memory is None
    assert both.error is not None and both.error.field == "$.items[5]" and both.error.code == 400
    assert braga.created is False and braga.memory is not None
    assert braga.memory.id == porto.memory.id and braga.memory.content == "Lives in Braga"

    rows = await pool.fetch("SELECT content FROM memories WHERE owner = $1 AND source = 'api' ORDER BY 1", owner)
    assert [r["content"] for r in rows] == ["Lives in Braga", "Prefers green tea"]
    await wait_event(pool, owner, "ev-batch-1")
    assert [t["content"] for t in await turns(pool, owner)] == ["I love hiking"]
    tap = await JobTap(nc).poll()
    assert {j.memory_id for j in tap.embed} >= {tea.memory.id, porto.memory.id}

    again = await batch(
        nc, owner, BatchItem(messages=[ChatMessage(role="user", content="I love hiking")], event_id="ev-batch-1")
    )
    assert again.results[0].duplicate is True and again.published == 1


async def test_whole_request_checks_and_owner_binding(nc: Client, ingest: ServiceContext, owner: str) -> None:
    with pytest.raises(ValidationFailed) as empty:
        await call(nc, "memory.batch", MemoryBatchRequest(owner=owner, items=[]))
    assert empty.value.field == "$.items"
    too_many = MemoryBatchRequest(owner=owner, items=[BatchItem(content=f"t{i}") for i in range(101)])
    with pytest.raises(ValidationFailed):
        await call(nc, "memory.batch", too_many)
    # the owner-bound subject holds the payload to its owner, as every other memory op
    with pytest.raises(Forbidden):
        await call(
            nc,
            "memory.batch",
            MemoryBatchRequest(owner="someone-else", items=[BatchItem(content="x")]),
            subject=owner_rpc_subject("memory.batch", owner),
        )
