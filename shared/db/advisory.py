"""PostgreSQL session advisory locks: the SQL and the release in one place.

A key is one 64-bit integer or a pair of 32-bit integers (PostgreSQL's two key spaces). The
lock belongs to the connection's session: it is released when the block ends, and a release
that fails because the connection died is ignored (the lock died with the session).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg

LockKey = int | tuple[int, int]

#: what a release on a dead connection raises; asyncpg's InternalClientError ("another operation is in
#: progress") comes when the server went away in the middle of the protocol
_RELEASE_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError)


def _call(function: str, key: LockKey) -> tuple[str, tuple[int, ...]]:
    if isinstance(key, tuple):
        return f"SELECT {function}($1::int, $2::int)", key
    return f"SELECT {function}($1::bigint)", (key,)


async def try_lock(conn: asyncpg.Connection, key: LockKey) -> bool:
    """Take the lock if it is free; whether it was taken."""
    query, args = _call("pg_try_advisory_lock", key)
    return bool(await conn.fetchval(query, *args))


async def unlock(conn: asyncpg.Connection, key: LockKey) -> None:
    """Release a lock taken on ``conn``."""
    query, args = _call("pg_advisory_unlock", key)
    with contextlib.suppress(*_RELEASE_ERRORS):
        await conn.execute(query, *args)


@contextlib.asynccontextmanager
async def advisory_lock(conn: asyncpg.Connection, key: LockKey) -> AsyncIterator[None]:
    """Hold the lock for the block, waiting until it is free."""
    query, args = _call("pg_advisory_lock", key)
    await conn.execute(query, *args)
    try:
        yield
    finally:
        await unlock(conn, key)


@contextlib.asynccontextmanager
async def try_advisory_lock(conn: asyncpg.Connection, key: LockKey) -> AsyncIterator[bool]:
    """Hold the lock for the block if it is free; yields whether it was taken."""
    taken = await try_lock(conn, key)
    try:
        yield taken
    finally:
        if taken:
            await unlock(conn, key)
