"""Visibility through every tier: owner, session, state, expiry, retention, types, global scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.service import ServiceContext

from .conftest import ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")

V = unit(1, 0, 0, 0)


async def _world(pool: asyncpg.Pool) -> tuple[str, str, dict[str, str]]:
    """Two owners and one memory per visibility case, all matching "zebra" and the query vector."""
    alice, bob, carol = owner(), owner(), owner()
    now = datetime.now(UTC)
    ids = {
        "visible": await put(pool, alice, "zebra visible", vector=V, session_id="s1"),
        "no_session": await put(pool, alice, "zebra without session", vector=V),
        "other_session": await put(pool, alice, "zebra other session", vector=V, session_id="s2"),
        "expired": await put(pool, alice, "zebra expired", vector=V, expires_at=now - timedelta(minutes=1)),
        "expiring_later": await put(pool, alice, "zebra later", vector=V, expires_at=now + timedelta(days=1)),
        "too_old": await put(pool, alice, "zebra ancient", vector=V, created_at=now - timedelta(days=400)),
        "episodic": await put(pool, alice, "zebra episode", vector=V, memory_type="episodic"),
        "archived": await put(pool, alice, "zebra archived", vector=V),
        "summary_state": await put(pool, alice, "zebra demoted", vector=V),
        "bob": await put(pool, bob, "zebra of bob", vector=V),
        "global": await put(pool, carol, "zebra for everyone", vector=V, scope="global"),
    }
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = $1::uuid", ids["archived"])
    await pool.execute("UPDATE memories SET state = 'summary' WHERE id = $1::uuid", ids["summary_state"])
    return alice, bob, ids


@pytest.mark.parametrize("strategy", ["hybrid", "semantic", "exact"])
async def test_filters_apply_on_every_path(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, strategy: str
) -> None:
    alice, bob, ids = await _world(pool)
    name = {v: k for k, v in ids.items()}
    embed = await ScriptedEmbed({"zebra": V}).start(nc)
    try:

        async def seen(**kw: object) -> set[str]:
            req = RetrieveRequest(query="zebra", strategy=strategy, limit=50, **kw)  # type: ignore[arg-type]
            res: RetrieveResult = await call(nc, "retrieve", req, timeout=10)
            assert res.fallbacks == [], res.tiers
            return {name[m.id] for m in res.memories}

        everything = {"visible", "no_session", "other_session", "expiring_later", "episodic", "global"}
        assert await seen(owner=alice) == everything
        assert await seen(owner=alice, session_id="s1") == {"visible", "global"}
        assert await seen(owner=alice, types=["episodic"]) == {"episodic"}
        assert await seen(owner=bob) == {"bob", "global"}
        assert await seen(owner=owner()) == {"global"}  # a new owner sees only global memories
    finally:
        await embed.stop()
        await pool.execute("DELETE FROM memories WHERE scope = 'global'")  # visible to later tests' owners


@pytest.mark.parametrize("strategy", ["hybrid", "semantic"])
async def test_a_metadata_filter_finds_a_match_the_vector_store_ranks_far_down(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, strategy: str
) -> None:
    """The vector stores rank without metadata: twenty closer memories of another project must
    not hide the one that passes the filter."""
    alice = owner()
    for i in range(20):
        await put(pool, alice, f"note {i}", vector=V, metadata={"project": "web"})
    far = await put(pool, alice, "the ops runbook", vector=unit(1, 1, 0, 0), metadata={"project": "ops", "n": 2})
    embed = await ScriptedEmbed({"zebra": V}).start(nc)
    try:

        async def found(filters: dict[str, object]) -> list[str]:
            req = RetrieveRequest(owner=alice, query="zebra", strategy=strategy, limit=5, filters=filters)  # type: ignore[arg-type]
            res: RetrieveResult = await call(nc, "retrieve", req, timeout=10)
            assert res.fallbacks == [], res.tiers
            return [m.id for m in res.memories]

        assert await found({"project": "ops"}) == [far]
        assert await found({"AND": [{"project": {"in": ["ops", "api"]}}, {"n": 2}]}) == [far]
        assert await found({"project": "none"}) == []
        assert len(await found({"project": "web"})) == 5
    finally:
        await embed.stop()
