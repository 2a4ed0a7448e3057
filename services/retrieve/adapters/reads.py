"""Reads as owner activity: after a retrieval, the owner's last read time, throttled per owner.

Written to the `MEM_ACTIVITY` bucket under `read_activity_key(owner)` and announced on
`mem.v1.activity.<owner>` with kind `read`, in the background (a read never waits for
it). The sleep worker counts reads as activity only for owners with `sleepCountReads`.
A lost announcement is harmless: the next read (after the throttle interval) repeats it.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from nats.aio.client import Client
from nats.js.kv import KeyValue

from memoryd.codec import encode
from memoryd.schemas.events import Activity
from memoryd.subjects import activity_subject, read_activity_key
from shared.observability.logging import get_logger

log = get_logger(__name__)

MAX_TRACKED = 100_000  # owners remembered for the throttle before it starts afresh


class ReadAnnouncer:
    def __init__(self, nc: Client, kv: KeyValue, interval_s: float = 1.0) -> None:
        self._nc = nc
        self._kv = kv
        self._interval_s = interval_s
        self._last: dict[str, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def note(self, owner: str, session_id: str | None = None) -> None:
        """Announce a read of `owner` unless one was announced within the interval."""
        now = time.monotonic()
        if now - self._last.get(owner, float("-inf")) < self._interval_s:
            return
        if len(self._last) >= MAX_TRACKED:
            self._last.clear()
        self._last[owner] = now
        task = asyncio.create_task(self._announce(owner, session_id, datetime.now(UTC)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _announce(self, owner: str, session_id: str | None, at: datetime) -> None:
        try:
            await self._kv.put(read_activity_key(owner), at.isoformat().encode())
            await self._nc.publish(
                activity_subject(owner), encode(Activity(owner=owner, at=at, kind="read", session_id=session_id))
            )
        except Exception as exc:  # never a reason to fail or slow a read
            log.debug("retrieve.read_announce_failed", owner=owner, error=str(exc) or type(exc).__name__)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
