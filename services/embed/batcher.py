"""Micro-batching: many concurrent `submit(item)` calls become few `flush(items)` calls.

A batch is flushed when it reaches `max_size`, or when its oldest item has waited `max_wait_s`
(0 = as soon as the event loop has run what is ready, so requests arriving together still share
a batch), and only while fewer than `max_inflight` flushes run. While all flush slots are busy,
items pile up and leave together: under load batches grow by themselves, idle requests pay no
wait. With `max_inflight=2`, the next batch reads its input while the previous one is in
inference (the executor still runs one inference at a time).

Each submitter gets its own result (or the flush's exception). Pure asyncio, no I/O.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741

Flush = Callable[[list[I]], Awaitable[Sequence[O]]]


class MicroBatcher(Generic[I, O]):
    """Group items into batches for `flush`, which returns one result per item, in order."""

    def __init__(self, flush: Flush[I, O], *, max_size: int, max_wait_s: float, max_inflight: int = 1) -> None:
        if max_size < 1 or max_inflight < 1 or max_wait_s < 0:
            raise ValueError("max_size and max_inflight must be >= 1, max_wait_s >= 0")
        self._flush = flush
        self.max_size = max_size
        self.max_wait_s = max_wait_s
        self.max_inflight = max_inflight
        self._pending: list[tuple[I, asyncio.Future[O], float]] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._timer: asyncio.Handle | None = None
        self._closed = False
        self.batches = 0  # flushes started
        self.items = 0  # items flushed
        self.largest = 0  # largest batch so far

    async def submit(self, item: I) -> O:
        """Queue `item` and wait for its result."""
        if self._closed:
            raise RuntimeError("batcher is closed")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[O] = loop.create_future()
        self._pending.append((item, fut, time.monotonic()))
        self._schedule()
        return await fut

    async def submit_many(self, items: Sequence[I]) -> list[O]:
        return list(await asyncio.gather(*(self.submit(i) for i in items)))

    def _schedule(self) -> None:
        """Flush now if a batch is due and a slot is free, else arm the timer for the oldest item."""
        while self._pending and len(self._inflight) < self.max_inflight:
            waited = time.monotonic() - self._pending[0][2]
            if len(self._pending) >= self.max_size or waited >= self.max_wait_s > 0:
                self._start()
                continue
            if self._timer is None:
                delay = self.max_wait_s - waited
                loop = asyncio.get_running_loop()
                # max_wait 0: one turn of the loop, so items submitted together go together.
                self._timer = loop.call_soon(self._fire) if delay <= 0 else loop.call_later(delay, self._fire)
            return

    def _fire(self) -> None:
        self._timer = None
        if self._pending and len(self._inflight) < self.max_inflight:
            self._start()
        self._schedule()

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending[: self.max_size], self._pending[self.max_size :]
        self.batches += 1
        self.items += len(batch)
        self.largest = max(self.largest, len(batch))
        task = asyncio.get_running_loop().create_task(self._run(batch))
        self._inflight.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        if self._pending:
            self._schedule()

    async def _run(self, batch: list[tuple[I, asyncio.Future[O], float]]) -> None:
        try:
            results = await self._flush([item for item, _fut, _t in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"flush returned {len(results)} results for {len(batch)} items")
        except Exception as exc:
            for _item, fut, _t in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        except BaseException:
            for _item, fut, _t in batch:
                fut.cancel()
            raise
        for (_item, fut, _t), result in zip(batch, results, strict=True):
            if not fut.done():
                fut.set_result(result)

    async def close(self, timeout: float = 15.0) -> None:
        """Flush what is queued, wait for flushes in flight, refuse new items."""
        self._closed = True
        deadline = time.monotonic() + timeout
        while (self._pending or self._inflight) and time.monotonic() < deadline:
            if self._pending and len(self._inflight) < self.max_inflight:
                self._start()
                continue
            if self._inflight:
                await asyncio.wait(set(self._inflight), timeout=max(0.0, deadline - time.monotonic()))
        for _item, fut, _t in self._pending:
            if not fut.done():
                fut.set_exception(RuntimeError("batcher closed before this item was flushed"))
        self._pending.clear()
