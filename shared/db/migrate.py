"""Ordered, idempotent SQL migrations recorded in ``schema_migrations``.

Files ``migrations/NNNN_name.sql`` are applied in name order, each in its own
transaction, under an advisory lock so concurrent starts apply each file once.

There is no ``0002``: the number was set aside and never written. The others keep their
numbers, because ``schema_migrations`` of existing databases records each by its version:
renumbering would apply them again. A gap is harmless (only the order counts); a new
migration takes the next number after the highest, never a free lower one.
"""

from __future__ import annotations

from importlib import resources

import asyncpg

from shared.db.advisory import advisory_lock

MIGRATION_LOCK = 0x6D656D6F  # "memo"


def migration_files() -> list[tuple[str, str]]:
    """``(version, sql)`` for every packaged migration, in order."""
    root = resources.files("shared.db") / "migrations"
    files = sorted((p for p in root.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    return [(p.name.removesuffix(".sql"), p.read_text(encoding="utf-8")) for p in files]


async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Apply pending migrations; return the versions applied now."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    applied_now: list[str] = []
    async with advisory_lock(conn, MIGRATION_LOCK):
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for version, sql in migration_files():
            if version in done:
                continue
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
            applied_now.append(version)
    return applied_now
