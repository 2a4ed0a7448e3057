"""Per-process cache of effective runtime settings, invalidated over NATS.

Every replica of every service reads settings through one ``SettingsCache``. A write
(``settings.put``) publishes ``mem.v1.settings.changed`` with the owner (``*`` for the
global row); every cache drops that owner (or everything, for ``*``), so a change is
visible everywhere within a round trip. A TTL bounds staleness if a notification is
ever missed (e.g. during a reconnect). The entries are a ``cachetools.TTLCache``, bounded
to ``max_owners`` owners (the least recently used beyond that are dropped), so a process
serving many owners keeps a fixed amount of memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg
from cachetools import TTLCache
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from memoryd.subjects import SETTINGS_CHANGED
from shared.settings.memory import GLOBAL_OWNER, MemorySettings
from shared.settings.store import effective_settings

Loader = Callable[[str], Awaitable[MemorySettings]]

#: owners whose effective settings one process keeps (~1 KiB each)
MAX_OWNERS = 10_000


class SettingsCache:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        ttl_s: float = 30.0,
        max_owners: int = MAX_OWNERS,
        loader: Loader | None = None,
    ) -> None:
        self._pool = pool
        self._entries: TTLCache[str, MemorySettings] = TTLCache(max_owners, ttl_s)
        self._sub: Subscription | None = None
        self._loader = loader or (lambda owner: effective_settings(pool, owner))

    async def start(self, nc: Client) -> None:
        """Listen for change notifications (every replica, no queue group)."""

        async def on_change(msg: Msg) -> None:
            self.invalidate(msg.data.decode(errors="replace") or GLOBAL_OWNER)

        self._sub = await nc.subscribe(SETTINGS_CHANGED, cb=on_change)

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    def invalidate(self, owner: str) -> None:
        if owner == GLOBAL_OWNER:
            self._entries.clear()
        else:
            self._entries.pop(owner, None)

    async def get(self, owner: str) -> MemorySettings:
        """The owner's effective settings (cached)."""
        hit = self._entries.get(owner)
        if hit is not None:
            return hit
        value = await self._loader(owner)
        self._entries[owner] = value
        return value


async def announce_change(nc: Client, owner: str | None) -> None:
    """Tell every replica that ``owner``'s settings (None = global) changed."""
    await nc.publish(SETTINGS_CHANGED, (owner or GLOBAL_OWNER).encode())
    await nc.flush()
