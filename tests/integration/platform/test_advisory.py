"""Advisory locks on the real PostgreSQL: exclusion across sessions, both key spaces, release."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from shared.db.advisory import LockKey, advisory_lock, try_advisory_lock, try_lock, unlock

KEYS: list[LockKey] = [0x7465_7374, (0x7465, 7)]


async def held(pool: asyncpg.Pool) -> set[tuple[int, int, int]]:
    """The advisory locks held now, as (classid, objid, objsubid): objsubid 1 for a 64-bit key, 2 for a pair."""
    rows = await pool.fetch("SELECT classid::int, objid::int, objsubid::int FROM pg_locks WHERE locktype = 'advisory'")
    return {(r["classid"], r["objid"], r["objsubid"]) for r in rows}


@pytest.mark.parametrize("key", KEYS)
async def test_a_held_lock_excludes_other_sessions_until_the_block_ends(pool: asyncpg.Pool, key: LockKey) -> None:
    async with pool.acquire() as mine, pool.acquire() as theirs:
        async with try_advisory_lock(mine, key) as taken:
            assert taken
            assert len(await held(pool)) == 1
            async with try_advisory_lock(theirs, key) as also:
                assert not also
        assert await held(pool) == set()
        async with try_advisory_lock(theirs, key) as now:
            assert now


async def test_the_waiting_lock_waits_for_the_holder(pool: asyncpg.Pool) -> None:
    order: list[str] = []
    async with pool.acquire() as mine, pool.acquire() as theirs:
        async with advisory_lock(mine, KEYS[0]):

            async def other() -> None:
                async with advisory_lock(theirs, KEYS[0]):
                    order.append("theirs")

            waiting = asyncio.create_task(other())
            await asyncio.sleep(0.2)
            assert not waiting.done()
            order.append("mine released")
        await asyncio.wait_for(waiting, 5)
    assert order == ["mine released", "theirs"]
    assert await held(pool) == set()


async def test_the_two_key_spaces_do_not_collide(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as mine, pool.acquire() as theirs:
        assert await try_lock(mine, 5)
        assert await try_lock(theirs, (0, 5))  # the pair (0, 5) is another lock than the number 5
        assert {sub for _c, _o, sub in await held(pool)} == {1, 2}
        await unlock(mine, 5)
        await unlock(theirs, (0, 5))
    assert await held(pool) == set()


async def test_a_release_on_a_dead_connection_is_ignored_and_the_lock_dies_with_it(
    pg_dsn: str, pool: asyncpg.Pool
) -> None:
    conn = await asyncpg.connect(pg_dsn)
    with pytest.raises(RuntimeError, match="body failed"):
        async with advisory_lock(conn, KEYS[0]):
            await pool.execute("SELECT pg_terminate_backend($1)", conn.get_server_pid())
            raise RuntimeError("body failed")  # this error, not the failed release, reaches the caller
    async with pool.acquire() as other, try_advisory_lock(other, KEYS[0]) as taken:
        assert taken
