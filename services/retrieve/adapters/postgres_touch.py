"""Recall heat: ``last_accessed_at`` of returned memories, written asynchronously in batches.

A retrieval only records ``(id, time)`` in memory (``touch`` never awaits); a background
loop writes them every ``interval_s`` (or sooner when ``max_batch`` ids wait) in one
``UPDATE ... FROM unnest(...)``, keeping the later time per memory (``GREATEST``), so a
slow flush never moves a memory's access time backwards. If Postgres is down the ids stay
queued (bounded by ``max_pending``; beyond it the oldest are dropped and counted): heat is
advisory, a read never waits for it.

A time is written only when it is ``granularity_s`` past the stored one (a first access is
always written): no touch is a HOT update (``memories_owner_cold`` indexes the column), so
each write adds a row version to every index of ``memories``, full-text ones included, and a
memory recalled on every turn of a conversation would be rewritten every second. The oldest
consumer of the time, archival demotion, counts in days.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from datetime import datetime

import asyncpg

from shared.observability.logging import get_logger
from shared.periodic import every

log = get_logger(__name__)

_UPDATE = (
    "UPDATE memories m SET last_accessed_at = GREATEST(coalesce(m.last_accessed_at, t.at), t.at)"
    " FROM unnest($1::uuid[], $2::timestamptz[]) AS t(id, at) WHERE m.id = t.id"
    " AND (m.last_accessed_at IS NULL OR m.last_accessed_at <= t.at - make_interval(secs => $3))"
)


class Toucher:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        interval_s: float = 1.0,
        granularity_s: float,
        max_batch: int = 1000,
        max_pending: int = 100_000,
    ) -> None:
        self._pool = pool
        self._interval = interval_s
        self._granularity = granularity_s
        self._max_batch = max_batch
        self._max_pending = max_pending
        self._pending: dict[str, datetime] = {}
        self._wake = asyncio.Event()
        self.written = 0
        self.dropped = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def touch(self, ids: Iterable[str], at: datetime) -> None:
        """Queue ``ids`` as accessed at ``at`` (returns at once)."""
        for memory_id in ids:
            prev = self._pending.pop(memory_id, None)  # re-insert: the dict stays oldest-first
            self._pending[memory_id] = at if prev is None or at > prev else prev
        while len(self._pending) > self._max_pending:
            self._pending.pop(next(iter(self._pending)))
            self.dropped += 1
        if len(self._pending) >= self._max_batch:
            self._wake.set()

    async def flush(self) -> int:
        """Write everything queued now; on failure the ids go back to the queue and it raises."""
        written = 0
        while self._pending:
            batch = list(self._pending.items())[: self._max_batch]
            for memory_id, _at in batch:
                del self._pending[memory_id]
            batch.sort()  # one lock order across replicas: no deadlocks between concurrent flushes
            try:
                ids, times = [uuid.UUID(i) for i, _ in batch], [at for _, at in batch]
                await self._pool.execute(_UPDATE, ids, times, self._granularity)
            except BaseException:
                self.touch_back(batch)
                raise
            written += len(batch)
        self.written += written
        return written

    def touch_back(self, batch: list[tuple[str, datetime]]) -> None:
        for memory_id, at in batch:
            prev = self._pending.get(memory_id)
            if prev is None or at > prev:
                self._pending[memory_id] = at

    async def run(self, stop: asyncio.Event) -> None:
        """Flush every ``interval_s`` until ``stop``, then a last time."""
        await every(
            self._interval, stop, self.flush_logged, failed="retrieve.touch_failed", wait_first=True, wake=self._wake
        )
        await self.flush_logged()

    async def flush_logged(self) -> None:
        """``flush`` that logs a failure instead of raising (the loop and the shutdown closer)."""
        try:
            await self.flush()
        except Exception as exc:
            log.warning("retrieve.touch_failed", error=str(exc) or type(exc).__name__, pending=self.pending)
