"""Reading and writing runtime settings rows (global ``*`` and per owner).

``put_values`` is the one writer: secret-bearing values (API keys) are sealed with the
keyring before they reach the table (``shared.settings.sealed``); ``read_values`` returns a
row as stored (sealed).
"""

from __future__ import annotations

from typing import Any

import asyncpg

from shared.secrets import Keyring
from shared.settings.memory import GLOBAL_OWNER, MemorySettings, effective, validate_update
from shared.settings.sealed import seal_values


async def read_values(conn: asyncpg.Connection | asyncpg.Pool, owner: str) -> dict[str, Any]:
    row = await conn.fetchrow('SELECT "values" FROM settings WHERE owner = $1', owner)
    return dict(row["values"]) if row else {}


async def effective_settings(conn: asyncpg.Connection | asyncpg.Pool, owner: str) -> MemorySettings:
    """The settings that apply to ``owner`` now."""
    rows = await conn.fetch('SELECT owner, "values" FROM settings WHERE owner = ANY($1::text[])', [GLOBAL_OWNER, owner])
    by_owner = {r["owner"]: dict(r["values"]) for r in rows}
    return effective(by_owner.get(GLOBAL_OWNER, {}), by_owner.get(owner, {}) if owner != GLOBAL_OWNER else {})


async def put_values(
    conn: asyncpg.Connection | asyncpg.Pool, owner: str | None, values: dict[str, Any], keyring: Keyring | None = None
) -> dict[str, Any]:
    """Validate and merge ``values`` into the row of ``owner`` (None = global), API keys sealed
    with ``keyring`` (``SecretUnavailable``, nothing written, when one is given and there is no key)."""
    key = owner or GLOBAL_OWNER
    current = await read_values(conn, key)
    inherited = await read_values(conn, GLOBAL_OWNER) if owner else {}
    validate_update(current, inherited, values, is_global=key == GLOBAL_OWNER)  # nothing written when bad
    values = seal_values(values, keyring or Keyring())
    row = await conn.fetchrow(
        'INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb) '
        'ON CONFLICT (owner) DO UPDATE SET "values" = settings."values" || EXCLUDED."values", updated_at = now() '
        'RETURNING "values"',
        key,
        values,
    )
    assert row is not None
    return dict(row["values"])
