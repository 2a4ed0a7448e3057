"""Owner activity as the sleep worker sees it: the `MEM_ACTIVITY` KV bucket and the live subject.

Ingest writes each owner's last activity time (ISO 8601) under `activity_key(owner)` and
announces it on `mem.v1.activity.<owner>`; retrieve does the same for reads under
`read_activity_key(owner)` (kind `read`), which count only for owners with
`sleepCountReads`. The scheduler reads the bucket to decide idleness; a run reads it at
every boundary and also listens on the subject, so activity aborts the run at the next
batch or phase boundary (or cancels its LLM call) even before the KV write is visible.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KeyValue

from memoryd.codec import decode
from memoryd.errors import MemorydError
from memoryd.schemas.events import Activity
from memoryd.subjects import READ_KEY_PREFIX, activity_key, activity_subject, owner_of_activity_key, read_activity_key
from shared.bus.kv_keys import all_keys
from shared.observability.logging import get_logger

log = get_logger(__name__)


def parse_time(raw: bytes | None) -> datetime | None:
    """An ISO time as written by ingest (naive means UTC); None when absent or unreadable."""
    if not raw:
        return None
    try:
        at = datetime.fromisoformat(raw.decode("utf-8").strip().strip('"'))
    except (UnicodeDecodeError, ValueError):
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def newer(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or (b is not None and b > a):
        return b
    return a


class ActivityReader:
    """Last-activity times from the KV bucket."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def _get(self, key: str) -> datetime | None:
        try:
            entry = await self._kv.get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        return parse_time(entry.value)

    async def last(self, owner: str, *, reads: bool = False) -> datetime | None:
        """The owner's last activity; with `reads`, its last retrieval counts too."""
        last = await self._get(activity_key(owner))
        return newer(last, await self._get(read_activity_key(owner))) if reads else last

    async def all(self) -> tuple[dict[str, datetime], dict[str, datetime]]:
        """Every owner's last activity and last read (the scheduler's tick)."""
        keys = await all_keys(self._kv)
        writes: dict[str, datetime] = {}
        reads: dict[str, datetime] = {}
        for key in keys:
            with contextlib.suppress(KeyNotFoundError, KeyDeletedError):
                at = parse_time((await self._kv.get(key)).value)
                if at is None:
                    continue
                if key.startswith(READ_KEY_PREFIX):
                    reads[owner_of_activity_key(key.removeprefix(READ_KEY_PREFIX))] = at
                else:
                    writes[owner_of_activity_key(key)] = at
        return writes, reads


class LiveActivity:
    """The newest activity (and read) announced for one owner since the watch started."""

    def __init__(self) -> None:
        self.latest: datetime | None = None
        self.latest_read: datetime | None = None
        self.changed = asyncio.Event()

    def newest(self, *, reads: bool) -> datetime | None:
        return newer(self.latest, self.latest_read) if reads else self.latest

    async def on_msg(self, msg: Msg) -> None:
        kind = "chat"
        try:
            activity = decode(msg.data, Activity)
            at, kind = activity.at, activity.kind
        except MemorydError:
            at = datetime.now(UTC)  # unreadable, but it still says the owner is active
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        if kind == "read":
            self.latest_read = newer(self.latest_read, at)
        else:
            self.latest = newer(self.latest, at)
        self.changed.set()


@contextlib.asynccontextmanager
async def watch(nc: Client, owner: str) -> AsyncIterator[LiveActivity]:
    """Listen on `mem.v1.activity.<owner>` for the duration of a run."""
    live = LiveActivity()
    sub = await nc.subscribe(activity_subject(owner), cb=live.on_msg)
    try:
        yield live
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()
