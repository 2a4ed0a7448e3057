"""``fetch_rows``: the winners' rows by primary key, the visibility rule re-checked, and turn
positions whose differences are the true turn distances up to ``MAX_DISTANCE``."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import msgspec

from services.retrieve.adapters.postgres import Visibility, fetch_rows
from services.retrieve.logic.fusion import MAX_DISTANCE
from shared.db import memories


async def _add(pool: asyncpg.Pool, owner: str, n: int, **kw: object) -> list[str]:
    start = datetime.now(UTC) - timedelta(days=3)
    async with pool.acquire() as conn:
        return [
            (
                await memories.insert(
                    conn,
                    owner=owner,
                    memory_type=str(kw.get("memory_type", "episodic")),
                    content=f"turn {i} of {owner}",
                    source=str(kw.get("source", "chat_turn")),
                    session_id=f"s{i // 12}" if kw.get("sessions", True) else None,
                    scope=str(kw.get("scope", "apiKey")),
                    created_at=start + timedelta(seconds=i),
                )
            ).id
            for i in range(n)
        ]


async def test_rows_are_the_visible_candidates_with_exact_near_turn_distances(pool: asyncpg.Pool) -> None:
    owner, other = f"rows-{uuid.uuid4().hex[:6]}", f"rows-o-{uuid.uuid4().hex[:6]}"
    mine = await _add(pool, owner, 60)
    facts = await _add(pool, owner, 5, source="api", memory_type="factual", sessions=False)
    theirs = await _add(pool, other, 10)
    shared = await _add(pool, other, 2, source="api", scope="global", sessions=False)
    archived = mine[7]
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = $1", uuid.UUID(archived))
    rng = random.Random(5)
    vis = Visibility(owner, None, None, 365)
    for _ in range(20):
        ids = rng.sample(mine, 25) + rng.sample(facts, 2) + rng.sample(theirs, 3) + shared
        rng.shuffle(ids)
        plain = await fetch_rows(pool, vis, ids)
        with_turns = await fetch_rows(pool, vis, [*ids, ids[0]], turns=True)  # a repeated id is read once
        visible = {i for i in ids if i not in theirs and i != archived}
        assert set(plain) == set(with_turns) == visible
        for i, row in with_turns.items():
            assert row == msgspec.structs.replace(plain[i], turn=row.turn) and plain[i].turn is None
        # positions: the turns of one session, numbered in time order (the archived one counts)
        true_turn = {m: k % 12 for k, m in enumerate(mine)}
        by_session: dict[str, list[str]] = {}
        for i, row in with_turns.items():
            if i in true_turn:
                by_session.setdefault(str(row.session_id), []).append(i)
        for members in by_session.values():
            if len(members) < 2:
                assert all(with_turns[m].turn is None for m in members)
                continue
            for a in members:
                for b in members:
                    got = abs(int(with_turns[a].turn or 0) - int(with_turns[b].turn or 0))
                    want = abs(true_turn[a] - true_turn[b])
                    assert got == want if want <= MAX_DISTANCE else got > MAX_DISTANCE, (a, b, got, want)
        assert all(with_turns[i].turn is None for i in with_turns if i not in true_turn)
    # one session and one type: that session's turns and the other owner's global memories
    session_vis = Visibility(owner, "s1", ("episodic",), 365)
    assert set(await fetch_rows(pool, session_vis, [*mine, *facts, *theirs, *shared], turns=True)) == {
        *mine[12:24],
        *shared,
    }
    assert await fetch_rows(pool, vis, []) == {}


async def test_rows_carry_their_stored_time_to_the_microsecond(pool: asyncpg.Pool) -> None:
    """``created_at`` is read as microseconds since the epoch; as a datetime it is the stored one."""
    owner = f"rows-t-{uuid.uuid4().hex[:6]}"
    ids = await _add(pool, owner, 3)
    await pool.execute(
        "UPDATE memories SET created_at = $2 WHERE id = $1",
        uuid.UUID(ids[0]),
        datetime(2025, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    )
    found = await pool.fetch("SELECT id, created_at FROM memories WHERE owner = $1", owner)
    stored = {str(r["id"]): r["created_at"] for r in found}
    for turns in (False, True):
        rows = await fetch_rows(pool, Visibility(owner, None, None, 3650), ids, turns=turns)
        assert {i: r.created for i, r in rows.items()} == stored
        assert {i: r.day for i, r in rows.items()} == {i: at.date() for i, at in stored.items()}
        assert all(type(r.created_at) is int for r in rows.values())
    assert rows[ids[0]].day.isoformat() == "2025-12-31"
