"""The asyncpg pool, with pgvector and JSON codecs registered on every connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from ..config import PgConfig
from ..errors import ConfigError


async def init_connection(conn: asyncpg.Connection) -> None:
    """Per-connection set-up: jsonb as Python objects, vector as numpy arrays."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    with contextlib.suppress(ValueError):  # extension not created yet (before the first migration)
        await register_vector(conn)


async def create_pool(cfg: PgConfig, **kwargs: Any) -> asyncpg.Pool:
    """A ready pool, or ``ConfigError`` naming ``MEMORYD_PG_DSN``."""
    try:
        pool = await asyncio.wait_for(
            asyncpg.create_pool(
                cfg.dsn,
                min_size=cfg.pool_min,
                max_size=cfg.pool_max,
                init=init_connection,
                timeout=cfg.connect_timeout_s,
                command_timeout=60,
                **kwargs,
            ),
            timeout=cfg.connect_timeout_s + 5,
        )
    except (TimeoutError, OSError, asyncpg.PostgresError, ValueError) as exc:
        raise ConfigError("MEMORYD_PG_DSN", f"cannot connect to PostgreSQL: {exc or type(exc).__name__}") from exc
    assert pool is not None
    return pool
