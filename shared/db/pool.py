"""The asyncpg pool, with pgvector and JSON codecs registered on every connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, TypeAlias

import asyncpg
from pgvector.asyncpg import register_vector

from memoryd.errors import ConfigError
from shared.settings.env import PgConfig

from ..vectors import pgvector_sql as vector_sql

#: The driver's types under the names handlers use, so that a handler imports no driver.
Pool: TypeAlias = asyncpg.Pool
Connection: TypeAlias = asyncpg.Connection


async def init_connection(conn: asyncpg.Connection) -> None:
    """Per-connection set-up: jsonb as Python objects, vector as numpy arrays."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    with contextlib.suppress(ValueError):  # extension not created yet (before the first migration)
        await register_vector(conn)


#: Sent at connect (so the pool's ``RESET ALL`` keeps them). ``force_custom_plan``: nearly every
#: statement filters on an owner, and owners hold from one row to hundreds of thousands; after
#: five executions PostgreSQL may switch a prepared statement to a generic plan that cannot see
#: which owner or words it serves (measured: the keyword tier of a 100k-memory owner went from
#: 8 ms to 57 ms per search once it flipped). Planning each execution costs 0.3-0.9 ms (measured).
SESSION_SETTINGS: dict[str, str] = {"plan_cache_mode": "force_custom_plan", **vector_sql.session_settings()}

#: ``create_pool(generic_plans=True)``: PostgreSQL's own choice (``auto``), which after five
#: executions keeps a prepared statement's generic plan when it costs no more than the custom
#: ones, so planning is skipped. Only for statements whose best plan is the same whatever their
#: parameters (a primary-key probe per id): the retrieve engine's candidate rows read 0.45 ms
#: faster per search on LoCoMo-sized owners (2.15 -> 1.70 ms p50, measured).
GENERIC_PLANS: dict[str, str] = {"plan_cache_mode": "auto"}


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """The pool's reset for code that leaves no session state behind (no session ``SET``,
    ``LISTEN``, advisory lock or held cursor): asyncpg has already rolled back any open
    transaction, so the default reset query (``pg_advisory_unlock_all(); CLOSE ALL;
    UNLISTEN *; RESET ALL``, a round trip and four statements after every use) is skipped."""


async def create_pool(
    cfg: PgConfig, *, session_state: bool = True, generic_plans: bool = False, **kwargs: Any
) -> asyncpg.Pool:
    """A ready pool, or ``ConfigError`` naming ``MEMORYD_PG_DSN``.

    ``session_state=False``: the caller promises its queries leave no session state (see
    ``_keep_session``), so connections go back to the pool without the reset round trip.
    ``generic_plans``: the caller promises its statements plan alike for any parameters
    (``GENERIC_PLANS``).
    """
    if not session_state:
        kwargs.setdefault("reset", _keep_session)
    if generic_plans:
        kwargs["server_settings"] = {**GENERIC_PLANS, **kwargs.get("server_settings", {})}
    try:
        pool = await asyncio.wait_for(
            asyncpg.create_pool(
                cfg.dsn,
                min_size=cfg.pool_min,
                max_size=cfg.pool_max,
                init=init_connection,
                timeout=cfg.connect_timeout_s,
                command_timeout=60,
                server_settings={**SESSION_SETTINGS, **kwargs.pop("server_settings", {})},
                **kwargs,
            ),
            timeout=cfg.connect_timeout_s + 5,
        )
    except (TimeoutError, OSError, asyncpg.PostgresError, ValueError) as exc:
        raise ConfigError("MEMORYD_PG_DSN", f"cannot connect to PostgreSQL: {exc or type(exc).__name__}") from exc
    assert pool is not None
    return pool
