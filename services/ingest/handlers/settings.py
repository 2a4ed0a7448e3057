"""``settings.get`` / ``settings.put``: runtime memory, sleep and engine settings, global and per owner.

A put is validated as a whole (unknown names and bad values are a 400 naming the field,
and nothing is written), merged into the row, and announced on ``mem.v1.settings.changed``
so every replica of every service drops its cached copy (or, for the engine settings of the
global row, rebuilds what they run) at once.

Engine settings (``shared.settings.engine``) are global only; their defaults are this
process's environment (``MEMORYD_EMBED_*``, ``MEMORYD_QDRANT_*``), against which a global put
that names one is checked as a whole (e.g. a remote source needs a URL, a model and a
dimension). API keys are write-only: ``***`` in every answer, sealed in the table
(``shared.settings.sealed``); without a secrets key a put naming one is a 503
``secret_unavailable`` and nothing is written.
"""

from __future__ import annotations

from typing import Any

from nats.aio.client import Client

from memoryd.errors import ValidationFailed
from memoryd.schemas.ops import SettingsGetRequest, SettingsGetResult, SettingsPutRequest, SettingsPutResult
from shared.db.pool import Pool
from shared.observability.logging import get_logger
from shared.secrets import Keyring
from shared.settings.cache import announce_change
from shared.settings.engine import (
    ENGINE_KEYS,
    EmbeddingConfig,
    EngineChoice,
    effective_engine,
    engine_view,
    usable_engine,
)
from shared.settings.memory import GLOBAL_OWNER, as_dict, sources
from shared.settings.sealed import mask_sealed
from shared.settings.store import put_values, read_values

log = get_logger(__name__)


class SettingsApi:
    def __init__(self, pool: Pool, nc: Client, engine_env: EngineChoice[EmbeddingConfig], keyring: Keyring) -> None:
        self._pool = pool
        self._keyring = keyring
        self._nc = nc
        self._env = engine_env

    async def _rows(self, owner: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        global_values = await read_values(self._pool, GLOBAL_OWNER)
        owner_values = await read_values(self._pool, owner) if owner else {}
        return global_values, owner_values

    async def get(self, req: SettingsGetRequest) -> SettingsGetResult:
        """Effective settings (owner over global over defaults) and where each came from."""
        global_values, owner_values = await self._rows(req.owner)
        return SettingsGetResult(
            settings=self._view(global_values, owner_values), sources=sources(global_values, owner_values)
        )

    async def put(self, req: SettingsPutRequest) -> SettingsPutResult:
        values = dict(req.values)
        if req.owner is None and ENGINE_KEYS & set(values):
            usable_engine(
                self._env.embedding,
                self._env.qdrant,
                {**mask_sealed(await read_values(self._pool, GLOBAL_OWNER)), **values},
            )
        await put_values(self._pool, req.owner, values, self._keyring)
        await announce_change(self._nc, req.owner)
        global_values, owner_values = await self._rows(req.owner)
        return SettingsPutResult(settings=self._view(global_values, owner_values))

    def _view(self, global_values: dict[str, Any], owner_values: dict[str, Any]) -> dict[str, Any]:
        """Memory and sleep settings, and the engine settings with API keys redacted."""
        try:
            engine = effective_engine(self._env.embedding, self._env.qdrant, mask_sealed(global_values))
        except ValidationFailed as exc:  # a row written before a rule tightened: show the environment's
            log.warning("settings.engine_row_unreadable", error=exc.description)
            engine = self._env
        return {**as_dict(global_values, owner_values), **engine_view(engine)}
