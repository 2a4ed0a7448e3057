"""Follow the global settings row at run time: a callback after every change of it.

``settings.put`` announces a change on ``mem.v1.settings.changed`` (``*`` for the global
row). ``GlobalSettingsWatch`` wakes on that (every replica: no queue group), re-reads the
row and, when it differs from the one last applied, awaits ``on_change(values)``. Changes are
applied one at a time, in order, and a burst of them is applied once. A poll every
``poll_s`` catches a notification missed during a reconnect; a callback that raises is
retried at the next wake-up.

Services use it for the engine settings (``shared.settings.engine``), which rebuild
things (an embedding source, vector store clients) rather than being read per request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from memoryd.subjects import SETTINGS_CHANGED
from shared.observability.logging import get_logger
from shared.periodic import every
from shared.service import ServiceContext
from shared.settings.memory import GLOBAL_OWNER
from shared.settings.store import read_values

log = get_logger(__name__)

OnChange = Callable[[dict[str, Any]], Awaitable[None]]
#: how the row is read (``shared.settings.sealed.GlobalRow.read`` opens its secrets)
ReadRow = Callable[[], Awaitable[dict[str, Any]]]


class GlobalSettingsWatch:
    def __init__(
        self,
        pool: asyncpg.Pool,
        on_change: OnChange,
        *,
        initial: dict[str, Any] | None,
        poll_s: float = 30.0,
        read: ReadRow | None = None,
    ) -> None:
        self._pool = pool
        self._read = read or (lambda: read_values(pool, GLOBAL_OWNER))
        self._on_change = on_change
        self._applied = initial  # the row the caller built its state from
        self._poll_s = poll_s
        self._wake = asyncio.Event()
        self._sub: Subscription | None = None

    async def start(self, nc: Client) -> None:
        async def on_message(msg: Msg) -> None:
            if (msg.data.decode(errors="replace") or GLOBAL_OWNER) == GLOBAL_OWNER:
                self._wake.set()

        self._sub = await nc.subscribe(SETTINGS_CHANGED, cb=on_message)

    def wake(self) -> None:
        """Re-read the row now (as a notification would)."""
        self._wake.set()

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: wait for a notification (or the poll), apply what changed."""
        await every(
            self._poll_s, stop, self.check, failed="settings.global_watch_failed", wait_first=True, wake=self._wake
        )

    async def check(self) -> bool:
        """Apply the row if it changed since the last applied one; True when applied."""
        try:
            values = await self._read()
        except Exception as exc:  # Postgres away: the next wake-up or poll retries
            log.warning("settings.global_read_failed", error=f"{type(exc).__name__}: {exc}")
            return False
        if values == self._applied:
            return False
        try:
            await self._on_change(values)
        except Exception:
            log.exception("settings.global_apply_failed")
            return False
        self._applied = values
        return True


async def follow_global_settings(
    ctx: ServiceContext, on_change: OnChange, initial: dict[str, Any], read: ReadRow | None = None
) -> None:
    """Run a ``GlobalSettingsWatch`` for the service's lifetime (``read``: how to read the row)."""
    watch = GlobalSettingsWatch(ctx.db, on_change, initial=initial, read=read)
    await watch.start(ctx.nc)
    watch.wake()  # a change made between reading ``initial`` and subscribing is not missed
    ctx.closers.append(watch.stop)
    ctx.spawn(watch.run(ctx.stop), f"{ctx.name}-global-settings")
