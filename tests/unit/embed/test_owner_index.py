"""OwnerIndexes: written owners are checked once per recheck period, in the background, and a
failed build is logged, not fatal."""

from __future__ import annotations

import asyncio
from typing import Any

from memoryd.errors import DependencyDown
from services.embed.owner_index import OwnerIndexes
from shared.vectors.pgvector import PgVectorStore


class _Store(PgVectorStore):
    def __init__(self, fail_for: str = "") -> None:
        super().__init__(pool=None)  # type: ignore[arg-type]  # never touched: ensure_owner is replaced
        self.calls: list[tuple[str, str]] = []
        self.fail_for = fail_for

    async def ensure_owner(self, signature: str, owner: str) -> bool:
        self.calls.append((signature, owner))
        if owner == self.fail_for:
            raise DependencyDown("postgres unreachable")
        return True


class _OtherStore:
    name = "qdrant"


async def _drain(indexes: OwnerIndexes, stop: asyncio.Event, task: asyncio.Task[Any]) -> None:
    for _ in range(100):
        if indexes._queue.empty():
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 2)


async def test_each_owner_is_checked_once_per_period_and_failures_do_not_stop_the_loop() -> None:
    store = _Store(fail_for="bad")
    indexes = OwnerIndexes(recheck_s=600)
    stop = asyncio.Event()
    task = asyncio.create_task(indexes.run(stop))
    indexes.note([store, _OtherStore()], "sig", ["alice", "alice", "bad", "bob"])  # type: ignore[list-item]
    indexes.note([store], "sig", ["alice", "bob"])  # already checked in this period
    indexes.note([store], "sig2", ["alice"])  # another signature is another index
    await _drain(indexes, stop, task)
    assert sorted(store.calls) == [("sig", "alice"), ("sig", "bad"), ("sig", "bob"), ("sig2", "alice")]
    assert task.done() and task.exception() is None


async def test_rechecked_after_the_period() -> None:
    store = _Store()
    indexes = OwnerIndexes(recheck_s=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(indexes.run(stop))
    indexes.note([store], "sig", ["alice"])
    await asyncio.sleep(0.1)
    indexes.note([store], "sig", ["alice"])
    await _drain(indexes, stop, task)
    assert store.calls == [("sig", "alice"), ("sig", "alice")]
