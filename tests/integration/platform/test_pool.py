"""The connection pool: settings sent at connect, the two reset policies, and the two plan policies."""

from __future__ import annotations

import asyncpg

from shared.db.pool import GENERIC_PLANS, SESSION_SETTINGS, create_pool
from shared.settings.env import PgConfig


async def _setting(pool: asyncpg.Pool, name: str) -> str:
    value: str = await pool.fetchval("SELECT current_setting($1, true)", name)
    return value


async def test_connect_settings_survive_the_default_reset(pg_dsn: str) -> None:
    pool = await create_pool(PgConfig(dsn=pg_dsn, pool_min=1, pool_max=1))
    try:
        assert {k: await _setting(pool, k) for k in SESSION_SETTINGS} == SESSION_SETTINGS
        async with pool.acquire() as conn:
            await conn.execute("SET plan_cache_mode = auto; SET application_name = 'left-behind'")
        # the default reset (RESET ALL) drops what a query SET, back to the connect values
        assert await _setting(pool, "plan_cache_mode") == "force_custom_plan"
        assert await _setting(pool, "application_name") == ""
    finally:
        await pool.close()


async def test_stateless_pool_skips_the_reset_but_never_keeps_a_transaction(pg_dsn: str) -> None:
    pool = await create_pool(PgConfig(dsn=pg_dsn, pool_min=1, pool_max=1), session_state=False)
    try:
        async with pool.acquire() as conn:
            await conn.execute("SET application_name = 'left-behind'")
        # no RESET ALL: what a session SETs stays (hence the promise ``session_state=False`` makes)
        assert await _setting(pool, "application_name") == "left-behind"
        async with pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            await conn.execute("CREATE TEMP TABLE scratch (x int)")  # left open on purpose
        async with pool.acquire() as conn:
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT to_regclass('pg_temp.scratch')") is None  # rolled back
        assert await _setting(pool, "plan_cache_mode") == "force_custom_plan"
    finally:
        await pool.close()


async def _plans_of(pool: asyncpg.Pool, runs: int) -> tuple[int, int]:
    """(generic, custom) plans of one prepared statement run ``runs`` times on one connection."""
    statement = "SELECT count(*) FROM pg_class WHERE relname = $1 AND relkind = 'r'"
    async with pool.acquire() as conn:
        for _ in range(runs):
            await conn.fetchval(statement, "pg_class")
        row = await conn.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", statement
        )
    assert row is not None
    return row["generic_plans"], row["custom_plans"]


async def test_generic_plans_pool_lets_postgres_keep_a_generic_plan(pg_dsn: str) -> None:
    """The default pool plans every execution for its parameters; ``generic_plans`` lets
    PostgreSQL keep the generic plan after its five custom ones (planning skipped), and keeps
    the other connect settings."""
    cfg = PgConfig(dsn=pg_dsn, pool_min=1, pool_max=1)
    custom, generic = (
        await create_pool(cfg, session_state=False),
        await create_pool(cfg, session_state=False, generic_plans=True),
    )
    try:
        assert await _plans_of(custom, 8) == (0, 8)
        assert await _plans_of(generic, 8) == (3, 5)
        expected = {**SESSION_SETTINGS, **GENERIC_PLANS}
        assert {k: await _setting(generic, k) for k in expected} == expected
    finally:
        await custom.close()
        await generic.close()
