"""``settings.get`` / ``settings.put``: runtime memory and sleep settings, global and per owner.

A put is validated as a whole (unknown names and bad values are a 400 naming the field,
and nothing is written), merged into the row, and announced on ``mem.v1.settings.changed``
so every replica of every service drops its cached copy at once.
"""

from __future__ import annotations

import asyncpg
from nats.aio.client import Client

from shared.db.settings_store import put_values, read_values
from shared.memory_settings import GLOBAL_OWNER, as_dict, sources
from shared.schemas.ops import SettingsGetRequest, SettingsGetResult, SettingsPutRequest, SettingsPutResult
from shared.settings_cache import announce_change


class SettingsApi:
    def __init__(self, pool: asyncpg.Pool, nc: Client) -> None:
        self._pool = pool
        self._nc = nc

    async def _rows(self, owner: str | None) -> tuple[dict[str, object], dict[str, object]]:
        global_values = await read_values(self._pool, GLOBAL_OWNER)
        owner_values = await read_values(self._pool, owner) if owner else {}
        return global_values, owner_values

    async def get(self, req: SettingsGetRequest) -> SettingsGetResult:
        """Effective settings (owner over global over defaults) and where each came from."""
        global_values, owner_values = await self._rows(req.owner)
        return SettingsGetResult(
            settings=as_dict(global_values, owner_values), sources=sources(global_values, owner_values)
        )

    async def put(self, req: SettingsPutRequest) -> SettingsPutResult:
        await put_values(self._pool, req.owner, dict(req.values))
        await announce_change(self._nc, req.owner)
        global_values, owner_values = await self._rows(req.owner)
        return SettingsPutResult(settings=as_dict(global_values, owner_values))
