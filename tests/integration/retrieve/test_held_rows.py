"""A search's rows read from the in-memory keyword index equal ``fetch_rows``' on real PostgreSQL:
on a generated corpus of chat turns in sessions (archived turns among them) and other memories,
for many visibilities and candidate sets, with and without turn positions, through inserts (at a
session's end and before its last turn), content, metadata and source edits, archival, moved
sessions, type, agent and expiry changes, and deletes; a candidate the index does not hold alive
and visible leaves the rows to the statement."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import msgspec
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.keyword_memory import HeldRanking, KeywordIndexes
from shared.db.memories import content_hash
from shared.service import ServiceContext
from shared.settings.store import put_values

from .conftest import ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.integration

WORDS = ["apple", "river", "guitar", "camping", "research", "parade", "lake", "coffee", "music", "garden", "yoga"]
TYPES = ("factual", "episodic")
AGENTS = ("a1", None)
SESSIONS = [f"s{i}" for i in range(8)]
START = datetime.now(UTC) - timedelta(days=20)


def _text(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 5)))


def _record(
    owner: str, rnd: random.Random, at: datetime, session: str | None, source: str, globals_share: float = 0.0
) -> tuple[object, ...]:
    """A memory row (``globals_share``: the chance it is global; another owner's global memories
    would leave the keyword tier to the statement)."""
    text = _text(rnd) + f" #{uuid.uuid4().hex[:6]}"
    meta = msgspec.json.encode({"speaker": rnd.choice(["Ann", "Bo"]), "n": rnd.randint(0, 9)}).decode()
    return (
        uuid.uuid4(), owner, rnd.choice(TYPES), text, source, at, at, content_hash(text), session,
        rnd.choice(AGENTS), "global" if rnd.random() < globals_share else "apiKey",
        meta if rnd.random() < 0.7 else "{}",
    )  # fmt: skip


async def _insert(pool: asyncpg.Pool, records: list[tuple[object, ...]]) -> list[uuid.UUID]:
    await pool.executemany(
        "INSERT INTO memories (id, owner, type, content, source, created_at, updated_at, content_hash, session_id,"
        " agent_id, scope, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb)",
        records,
    )
    return [r[0] for r in records]  # type: ignore[misc]


async def _seed(pool: asyncpg.Pool, owner: str, rnd: random.Random, globals_share: float = 0.0) -> list[uuid.UUID]:
    """Sessions of chat turns a minute apart (some sharing a time: ties go by id) and memories
    without a session."""
    records = []
    for k, session in enumerate(SESSIONS):
        for i in range(rnd.randint(15, 40)):
            at = START + timedelta(days=k, minutes=i - (i % 7 == 3))
            records.append(_record(owner, rnd, at, session, "chat_turn", globals_share))
    for i in range(40):
        records.append(_record(owner, rnd, START + timedelta(hours=i), rnd.choice([None, "s1"]), "api", globals_share))
    return await _insert(pool, records)


VIEWS = [
    dict(session_id=None, agent_id=None, types=None, days=365),
    dict(session_id="s1", agent_id=None, types=None, days=365),
    dict(session_id=None, agent_id="a1", types=None, days=365),
    dict(session_id="s2", agent_id=None, types=("episodic",), days=365),
    dict(session_id=None, agent_id=None, types=None, days=10),  # the older half is out of retention
]


async def _compare(pool: asyncpg.Pool, index: KeywordIndexes, owner: str, rnd: random.Random, rounds: int) -> None:
    ids = [str(r[0]) for r in await pool.fetch("SELECT id FROM memories WHERE owner = $1", owner)]
    held = index.row_counts["held"]
    for i in range(rounds):
        v = VIEWS[i % len(VIEWS)]
        vis = tiers.Visibility(owner, v["session_id"], v["types"], v["days"], agent_id=v["agent_id"])  # type: ignore[arg-type]
        ranking = await tiers.keyword_search(pool, vis, _text(rnd), 100, None, match_budget=0, memory=index)
        assert isinstance(ranking, HeldRanking)
        # the keyword hits and other memories, as a vector tier adds them: the statement's visible ones
        asked = list(dict.fromkeys([m for m, _ in ranking.ranked] + rnd.sample(ids, min(len(ids), 150))))
        visible = list(await tiers.fetch_rows(pool, vis, asked))
        rnd.shuffle(visible)
        for turns in (False, True):
            want = await tiers.fetch_rows(pool, vis, visible, turns=turns)
            assert index.rows(ranking, visible, turns=turns) == want
            if turns:
                assert sum(r.turn is not None for r in want.values()) > 0 or len(want) < 2
        if len(visible) < len(asked):  # an invisible candidate: the statement reads the rows
            assert index.rows(ranking, asked, turns=True) is None
    assert index.row_counts["held"] == held + 2 * rounds


async def test_rows_from_the_index_are_the_statement_s_through_writes(pool: asyncpg.Pool) -> None:
    rnd = random.Random(3)
    owner, other = f"hr-{uuid.uuid4().hex[:8]}", f"hr-{uuid.uuid4().hex[:8]}"
    ids = await _seed(pool, owner, rnd, globals_share=0.05)  # the owner's own global memories are held
    await _seed(pool, other, rnd)
    await pool.execute(
        "UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 20)
    )  # archived turns still count as turns
    try:
        index = KeywordIndexes(pool, inline_rows=2000)
        await _compare(pool, index, owner, rnd, 30)
        assert index.counts["memory"] == 30

        # inserts: at the end of sessions, before a session's last turn, in a new session
        late = [_record(owner, rnd, START + timedelta(days=k, hours=2), f"s{k}", "chat_turn") for k in range(8)]
        early = [_record(owner, rnd, START + timedelta(days=k, seconds=30), f"s{k}", "chat_turn") for k in range(8)]
        fresh = [_record(owner, rnd, START + timedelta(days=9, minutes=i), "s9", "chat_turn") for i in range(6)]
        new = await _insert(pool, late + early + fresh)
        await _compare(pool, index, owner, rnd, 15)
        ids += new

        # edits of what the rows show, and of what the turns are
        for mid in rnd.sample(ids, 10):
            await pool.execute("UPDATE memories SET content = $2 WHERE id = $1", mid, _text(rnd))
        await pool.execute(
            'UPDATE memories SET metadata = metadata || \'{"speaker": "Cy"}\' WHERE id = ANY($1::uuid[])',
            rnd.sample(ids, 15),
        )
        await pool.execute("UPDATE memories SET source = 'import' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 8))
        await pool.execute("UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 10))
        await pool.execute("UPDATE memories SET state = 'active' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 10))
        await pool.execute("UPDATE memories SET session_id = 's3' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 6))
        await pool.execute(
            "UPDATE memories SET created_at = created_at - interval '1 day' WHERE id = ANY($1::uuid[])",
            rnd.sample(ids, 4),
        )
        await pool.execute("UPDATE memories SET type = 'semantic' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 6))
        await pool.execute("UPDATE memories SET agent_id = 'a1' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 6))
        await pool.execute(
            "UPDATE memories SET expires_at = now() - interval '1 minute' WHERE id = ANY($1::uuid[])",
            rnd.sample(ids, 5),
        )
        await _compare(pool, index, owner, rnd, 25)
        assert index.counts["statement_fallback:rebuilding"] == 0  # all of it followed through the log

        # deletes: the index is rebuilt (inline, the owner is small), then the same again
        await pool.execute("DELETE FROM memories WHERE id = ANY($1::uuid[])", rnd.sample(ids, 12))
        await _compare(pool, index, owner, rnd, 15)
        await index.close()
    finally:
        await pool.execute("DELETE FROM memories WHERE owner = ANY($1::text[])", [owner, other])


async def test_metadata_and_source_edits_advance_the_owner_s_version(pool: asyncpg.Pool) -> None:
    """The change log (migration 0017) logs a change of metadata or source, not a touch."""
    owner = f"hr-{uuid.uuid4().hex[:8]}"
    (mid,) = await _insert(pool, [_record(owner, random.Random(5), START, "s1", "chat_turn")])
    version = "SELECT version FROM keyword_versions WHERE owner = $1"
    try:
        first = await pool.fetchval(version, owner)
        await pool.execute('UPDATE memories SET metadata = \'{"speaker": "Di"}\' WHERE id = $1', mid)
        second = await pool.fetchval(version, owner)
        await pool.execute("UPDATE memories SET source = 'import' WHERE id = $1", mid)
        third = await pool.fetchval(version, owner)
        await pool.execute("UPDATE memories SET last_accessed_at = now() WHERE id = $1", mid)
        assert (second - first, third - second, await pool.fetchval(version, owner)) == (1, 1, third)
        logged = "SELECT count(*) FROM keyword_changes WHERE owner = $1 AND version = $2 AND memory_id = $3"
        assert await pool.fetchval(logged, owner, second, mid) == 1
    finally:
        await pool.execute("DELETE FROM memories WHERE owner = $1", owner)


@pytest.mark.usefixtures("vec_meta")
async def test_through_the_service_the_answer_is_the_statement_s(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    """Two owners with the same memories, one ranked in memory (rows read from its index), one by
    the statement (rows by ``fetch_rows``): hybrid answers with the same scores, neighbour and
    session boosts over sessions with archived turns included."""
    rnd = random.Random(9)
    held, statement = owner(), owner()
    texts = [f"{_text(rnd)} note{i}" for i in range(60)]
    vectors = [unit(*(rnd.random() for _ in range(4))) for _ in texts]
    for who in (held, statement):
        ids = []
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            at = START + timedelta(minutes=i)
            ids.append(await put(pool, who, text, vector=vector, source="chat_turn", session_id=f"s{i // 15}",
                                 memory_type="episodic", created_at=at))  # fmt: skip
        await pool.execute("UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", ids[1::4])
        tier = "memory" if who == held else "statement"
        await put_values(pool, who, {"keywordIndex": tier, "keywordMatchBudget": 0, "keywordMaxCandidates": 0})
    embed = await ScriptedEmbed(default=(1, 0.5, 0.2, 0)).start(nc)
    try:
        for question in ["apple river", "guitar camping lake", "coffee music yoga", "research parade garden"]:
            answers = []
            for who in (held, statement):
                ask = RetrieveRequest(owner=who, query=question, strategy="hybrid", limit=50, dry_run=True)
                got: RetrieveResult = await call(nc, "retrieve", ask, timeout=10)
                answers.append({m.content: (m.score, m.fts_score or -1.0, m.vec_score or -1.0) for m in got.memories})
            assert answers[0].keys() == answers[1].keys() and len(answers[0]) > 10
            for content, scores in answers[0].items():
                # the vector scores: held ones are float32 products, the store's its own (equal to ~1e-7)
                assert scores == pytest.approx(answers[1][content], rel=1e-6), content
    finally:
        await embed.stop()
    status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=held), timeout=10)
    assert "rows held 4" in status.keyword_tier and "read:" not in status.keyword_tier, status.keyword_tier
