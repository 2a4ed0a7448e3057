"""The global settings row as the services use it: its sealed secrets opened, and sealed at rest.

The services that use the engine settings (embed, retrieve, ingest, sleep) read the global
row through ``GlobalRow``: it opens the sealed API keys and, when one cannot be opened (no
key, another key), leaves that key out (the environment's value applies) and reports the
service degraded in its health (check ``secrets``) instead of using the ciphertext.

Rows written before sealing existed hold plaintext: ``reseal_global_row``, run by ingest at
every start, seals them, and re-seals values under an older key with the current one.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from memoryd.errors import SecretUnavailable
from shared.observability.logging import get_logger
from shared.observability.metrics import SECRETS_UNAVAILABLE
from shared.secrets import Keyring, is_sealed
from shared.service import ServiceContext
from shared.settings.engine import SECRET_KEYS
from shared.settings.memory import GLOBAL_OWNER
from shared.settings.sealed import needs_reseal, open_values
from shared.settings.store import read_values

log = get_logger(__name__)


async def reseal_global_row(pool: asyncpg.Pool, keyring: Keyring) -> list[str]:
    """Seal plaintext secrets of the global row (and re-seal those of an older key); the keys changed.

    Without a key nothing changes and a plaintext secret is logged as a warning. A value that
    cannot be opened (a key this process lacks) is left as it is."""
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow('SELECT "values" FROM settings WHERE owner = $1 FOR UPDATE', GLOBAL_OWNER)
        values = dict(row["values"]) if row else {}
        if not keyring.configured:
            plain = [
                k for k in sorted(SECRET_KEYS & set(values)) if isinstance(values[k], str) and not is_sealed(values[k])
            ]
            if plain:
                log.warning("settings.secrets_in_plaintext", keys=plain, fix="set MEMORYD_SECRETS_KEY(_FILE)")
            return []
        changed: dict[str, Any] = {}
        for key in needs_reseal(values, keyring):
            value = values[key]
            try:
                plaintext = keyring.open(key, value) if is_sealed(value) else value
            except SecretUnavailable as exc:
                log.warning("settings.secret_unopenable", key=key, error=exc.description)
                continue
            changed[key] = keyring.seal(key, plaintext)
        if changed:
            await conn.execute(
                'UPDATE settings SET "values" = "values" || $2::jsonb, updated_at = now() WHERE owner = $1',
                GLOBAL_OWNER,
                changed,
            )
            log.info("settings.secrets_sealed", keys=sorted(changed), key_id=keyring.current_id)
        return sorted(changed)


class GlobalRow:
    """Reads the global settings row with its secrets opened, and says in health when one cannot be."""

    def __init__(self, pool: asyncpg.Pool, keyring: Keyring) -> None:
        self._pool = pool
        self._keyring = keyring
        self.problems: list[str] = []

    async def read(self) -> dict[str, Any]:
        values, problems = open_values(await read_values(self._pool, GLOBAL_OWNER), self._keyring)
        if problems and problems != self.problems:
            log.error("settings.secret_unavailable", problems=problems)
        self.problems = problems
        SECRETS_UNAVAILABLE.set(len(problems))
        return values

    async def check(self) -> str:
        """The health check ``secrets``: ``ok``, or what cannot be opened (the service is degraded)."""
        return "ok" if not self.problems else "degraded: " + "; ".join(self.problems)


async def open_global_row(ctx: ServiceContext) -> tuple[GlobalRow, dict[str, Any]]:
    """A service's ``GlobalRow`` (its health check ``secrets`` registered) and the row as it is now."""
    row = GlobalRow(ctx.db, ctx.keyring)
    ctx.checks["secrets"] = row.check
    return row, await row.read()
