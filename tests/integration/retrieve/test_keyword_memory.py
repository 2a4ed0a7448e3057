"""The in-memory keyword tier (``keywordIndex=memory``) on real PostgreSQL: on generated corpora it
returns the exact statement's ids and scores (no cap, no pruning) for many questions and
visibilities, after inserts, updates, archival, deletes and expiry, and after a restart; a write
committed before a search is seen by it; phrases, negations, metadata filters and other owners'
global memories are answered by the statement."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.keyword_memory import INLINE_ROWS, KeywordIndexes
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.keyword_index import tsvector_entries
from shared.db.memories import content_hash
from shared.metadata_filter import parse
from shared.service import ServiceContext
from shared.settings.store import put_values

pytestmark = pytest.mark.integration

WORDS = [
    *("apple", "river", "guitar", "painting", "camping", "research", "adoption", "parade", "sunrise"),
    *("lake", "friends", "kids", "counseling", "hiking", "coffee", "music", "book", "garden", "winter"),
    *("beach", "museum", "recipe", "running", "yoga"),
]
FILLER = ["the", "a", "my", "with", "and", "of", "to"]
TYPES = ("factual", "episodic", "procedural")
SESSIONS = ("s1", "s2", None)
AGENTS = ("a1", "a2", None)


def _text(rnd: random.Random) -> str:
    words = [rnd.choice(WORDS) for _ in range(rnd.randint(1, 6))] + rnd.sample(FILLER, 2)
    rnd.shuffle(words)
    return " ".join(words)


def _question(rnd: random.Random) -> str:
    words = [rnd.choice(WORDS) for _ in range(rnd.randint(1, 4))]
    if rnd.random() < 0.3:
        words.append(rnd.choice(["zebra", "what", "did", "the"]))
    return " ".join(words)


async def _seed(
    pool: asyncpg.Pool, owner: str, n: int, rnd: random.Random, *, globals_share: float = 0.0
) -> list[uuid.UUID]:
    """``n`` memories of random words, types, sessions and agents (``globals_share`` of them global)."""
    now = datetime.now(UTC)
    records, ids = [], []
    for _ in range(n):
        mid, text = uuid.uuid4(), _text(rnd)
        # whole minutes apart, some sharing a time (ties broken by id), some past a 30-day retention
        created = now - timedelta(minutes=rnd.randrange(0, 60 * 24 * 60, 60 * 24 * 7))
        records.append(
            (mid, owner, rnd.choice(TYPES), text, "api", created, created, content_hash(text),
             rnd.choice(SESSIONS), rnd.choice(AGENTS), "global" if rnd.random() < globals_share else "apiKey")
        )  # fmt: skip
        ids.append(mid)
    columns = ["id", "owner", "type", "content", "source", "created_at", "updated_at", "content_hash"]
    async with pool.acquire() as conn:
        await conn.copy_records_to_table(
            "memories", records=records, columns=[*columns, "session_id", "agent_id", "scope"]
        )
    return ids


def _same(got: KeywordRanking, want: KeywordRanking, limit: int) -> None:
    """Equal scores in order; equal ids within each group of equal scores (the last group may
    be cut by ``limit`` anywhere the float sums of two systems tie)."""
    assert len(got.ranked) == len(want.ranked)
    assert [s for _, s in got.ranked] == pytest.approx([s for _, s in want.ranked], rel=1e-9)
    assert got.cover == pytest.approx(want.cover)

    def groups(r: KeywordRanking) -> list[set[str]]:
        out: list[list[tuple[str, float]]] = []
        for mid, s in r.ranked:
            if out and abs(out[-1][-1][1] - s) <= 1e-9 * max(1.0, abs(s)):
                out[-1].append((mid, s))
            else:
                out.append([(mid, s)])
        return [{m for m, _ in g} for g in out]

    g, w = groups(got), groups(want)
    full = len(want.ranked) < limit
    assert g[: len(g) - (0 if full else 1)] == w[: len(w) - (0 if full else 1)]
    # where nothing cuts a tie group, the order itself is the statement's
    if full and all(len(x) == 1 for x in w):
        assert [m for m, _ in got.ranked] == [m for m, _ in want.ranked]


VIEWS = [
    dict(session_id=None, agent_id=None, types=None, retention_days=365),
    dict(session_id="s1", agent_id=None, types=None, retention_days=365),
    dict(session_id=None, agent_id="a2", types=None, retention_days=365),
    dict(session_id="s2", agent_id="a1", types=("factual", "procedural"), retention_days=365),
    dict(session_id=None, agent_id=None, types=("episodic",), retention_days=30),
    dict(session_id="nobody", agent_id=None, types=None, retention_days=365),
]


async def _compare(pool: asyncpg.Pool, index: KeywordIndexes, owner: str, rnd: random.Random, rounds: int) -> None:
    served, found = index.counts["memory"], 0
    for i in range(rounds):
        v = VIEWS[i % len(VIEWS)]
        vis = tiers.Visibility(owner, v["session_id"], v["types"], v["retention_days"], agent_id=v["agent_id"])  # type: ignore[arg-type]
        question, limit = _question(rnd), rnd.choice([5, 10, 1000])
        want = await tiers.keyword_search(pool, vis, question, limit, None, match_budget=0)
        got = await tiers.keyword_search(pool, vis, question, limit, None, match_budget=0, memory=index)
        _same(got, want, limit)
        found += bool(want.ranked)
    assert index.counts["memory"] == served + rounds  # every one ranked in memory
    assert found >= rounds // 2  # the questions do match


async def _ready(pool: asyncpg.Pool, index: KeywordIndexes, owner: str) -> None:
    """The first search builds the owner's index (inline for a small owner, else in the background
    while the statement answers); the counts start afresh after it."""
    vis = tiers.Visibility(owner, None, None, 365)
    served = index.counts["memory"] + index.counts["statement_fallback:building"]
    await tiers.keyword_search(pool, vis, "apple", 10, None, match_budget=0, memory=index)
    assert index.counts["memory"] + index.counts["statement_fallback:building"] == served + 1
    await index.settle()
    assert index.held_ids(owner) is not None
    index.counts.clear()  # what follows counts afresh


async def test_same_ids_and_scores_as_the_statement_through_writes_and_a_restart(pool: asyncpg.Pool) -> None:
    rnd = random.Random(7)
    owner, other = f"kwm-{uuid.uuid4().hex[:8]}", f"kwm-{uuid.uuid4().hex[:8]}"
    # the owner's own global memories are seen whatever the session or agent asked
    ids = await _seed(pool, owner, 400, rnd, globals_share=0.05)
    await _seed(pool, other, 200, rnd)  # another owner's (non-global) memories change nothing
    try:
        await _writes_and_restart(pool, owner, ids, rnd)
    finally:  # another owner's global memories would send the other tests' searches to the statement
        await pool.execute("DELETE FROM memories WHERE owner = $1", owner)


async def _writes_and_restart(pool: asyncpg.Pool, owner: str, ids: list[uuid.UUID], rnd: random.Random) -> None:
    index = KeywordIndexes(pool, inline_rows=1000)
    await _ready(pool, index, owner)
    await _compare(pool, index, owner, rnd, 60)

    # writes: inserts, content updates, archival, a moved session, expiry, a new type
    new = await _seed(pool, owner, 40, rnd)
    for mid in rnd.sample(ids, 20):
        await pool.execute("UPDATE memories SET content = $2 WHERE id = $1", mid, _text(rnd))
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 15))
    await pool.execute("UPDATE memories SET session_id = 's1' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 15))
    await pool.execute(
        "UPDATE memories SET expires_at = now() - interval '1 minute' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 10)
    )
    await pool.execute("UPDATE memories SET type = 'semantic' WHERE id = ANY($1::uuid[])", rnd.sample(ids, 10))
    # a touch is no change: the version stays
    version = await pool.fetchval("SELECT version FROM keyword_versions WHERE owner = $1", owner)
    await pool.execute("UPDATE memories SET last_accessed_at = now() WHERE owner = $1", owner)
    assert await pool.fetchval("SELECT version FROM keyword_versions WHERE owner = $1", owner) == version
    await _compare(pool, index, owner, rnd, 60)
    assert index.counts["statement_fallback:rebuilding"] == 0  # caught up from the change log
    visible = await pool.fetch(
        "SELECT id FROM memories WHERE owner = $1 AND state = 'active' AND (expires_at IS NULL OR expires_at > now())",
        owner,
    )
    assert index.held_ids(owner) == {r[0] for r in visible}

    # deletes keep no id in the change log: the small owner's next search rebuilds it inline
    gone = rnd.sample(new, 10)
    await pool.execute("DELETE FROM memories WHERE id = ANY($1::uuid[])", gone)
    assert await pool.fetchval("SELECT count(*) FROM keyword_changes WHERE memory_id = ANY($1::uuid[])", gone) == 0
    vis = tiers.Visibility(owner, None, None, 365)
    want = await tiers.keyword_search(pool, vis, "apple", 1000, None, match_budget=0)
    served = index.counts["memory"]
    _same(await tiers.keyword_search(pool, vis, "apple", 1000, None, match_budget=0, memory=index), want, 1000)
    assert index.counts["memory"] == served + 1 and index.counts["statement_fallback:rebuilding"] == 0
    await index.settle()
    await _compare(pool, index, owner, rnd, 30)
    assert not set(gone) & index.held_ids(owner)  # type: ignore[operator]

    # a restart: a new process builds the owner again from PostgreSQL
    await index.close()
    fresh = KeywordIndexes(pool, inline_rows=1000)
    await _ready(pool, fresh, owner)
    await _compare(pool, fresh, owner, rnd, 30)
    await fresh.close()


async def test_a_small_owner_is_built_by_its_first_searches_once(
    pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches meeting a small owner not held yet wait for one inline build and are all ranked in
    memory, with the statement's ids and scores."""
    rnd = random.Random(31)
    owner = f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, 200, rnd)
    index = KeywordIndexes(pool)
    builds: list[int | None] = []
    build = index.build

    async def counted(who: str, most: int | None = None) -> object:
        builds.append(most)
        return await build(who, most)

    monkeypatch.setattr(index, "build", counted)
    vis = tiers.Visibility(owner, None, None, 365)
    questions = [_question(rnd) for _ in range(6)]
    got = await asyncio.gather(
        *(tiers.keyword_search(pool, vis, q, 10, None, match_budget=0, memory=index) for q in questions)
    )
    assert builds == [index.inline_rows]  # one build, inline, for all six
    assert index.counts == {"memory": 6}
    for q, ranking in zip(questions, got, strict=True):
        _same(ranking, await tiers.keyword_search(pool, vis, q, 10, None, match_budget=0), 10)
    await index.close()


async def test_an_owner_over_the_inline_size_is_built_in_the_background(pool: asyncpg.Pool) -> None:
    rnd = random.Random(37)
    owner = f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, 120, rnd)
    index = KeywordIndexes(pool, inline_rows=100)
    vis = tiers.Visibility(owner, None, None, 365)
    want = await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0)
    assert await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0, memory=index) == want
    assert index.counts == {"statement_fallback:building": 1}
    await index.settle()
    assert len(index.held_ids(owner) or ()) == 120
    _same(await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0, memory=index), want, 10)
    assert index.counts["memory"] == 1
    # evicted, the owner is known to be large: rebuilt in the background without reading it inline
    await index.close()


async def test_raw_turns_context_is_ranked_alike_and_its_changes_followed(pool: asyncpg.Pool) -> None:
    """Raw turns whose speaker and date live in ``context``: both tiers find them by name and month
    with the same ids and scores, and a changed context reaches the held index through the log."""
    rnd = random.Random(11)
    owner = f"kwm-{uuid.uuid4().hex[:8]}"
    speakers, months = ["Caroline", "Melanie", "Jon"], ["January", "May", "October"]
    rows = []
    for i in range(120):
        mid, text = uuid.uuid4(), _text(rnd)
        created = datetime(2023, rnd.randrange(1, 13), rnd.randrange(1, 29), 13, 56, tzinfo=UTC)
        context = None if i % 5 == 0 else f"[1:56 pm on {created.day} {created:%B}, 2023] {rnd.choice(speakers)}:"
        rows.append((mid, owner, "episodic", text, "chat_turn", created, created, content_hash(text), context))
    async with pool.acquire() as conn:
        await conn.copy_records_to_table(
            "memories",
            records=rows,
            columns=["id", "owner", "type", "content", "source", "created_at", "updated_at", "content_hash", "context"],
        )
    try:
        index = KeywordIndexes(pool, inline_rows=1000)
        await _ready(pool, index, owner)
        vis = tiers.Visibility(owner, None, None, 36500)
        questions = [f"{s} {rnd.choice(WORDS)}" for s in speakers] + [f"{m} {s}" for m in months for s in speakers]
        for question in questions:
            want = await tiers.keyword_search(pool, vis, question, 1000, None, match_budget=0)
            _same(await tiers.keyword_search(pool, vis, question, 1000, None, match_budget=0, memory=index), want, 1000)
        caroline = await tiers.keyword_search(pool, vis, "Caroline", 1000, None, match_budget=0, memory=index)
        assert {uuid.UUID(m) for m, _ in caroline.ranked} == {r[0] for r in rows if r[8] and "Caroline" in r[8]}

        # a context written later (as the migration's backfill does) is followed, not rebuilt
        plain = [r[0] for r in rows if r[8] is None]
        await pool.execute("UPDATE memories SET context = '[9:00 am on 1 March, 2023] Zelda:' WHERE id = ANY($1)",
                           plain)  # fmt: skip
        zelda = await tiers.keyword_search(pool, vis, "Zelda", 1000, None, match_budget=0, memory=index)
        assert {uuid.UUID(m) for m, _ in zelda.ranked} == set(plain)
        assert index.counts["statement_fallback:rebuilding"] == 0
        _same(zelda, await tiers.keyword_search(pool, vis, "Zelda", 1000, None, match_budget=0), 1000)
        await index.close()
    finally:
        await pool.execute("DELETE FROM memories WHERE owner = $1", owner)


async def test_lexemes_read_from_the_vector_text_are_postgresql_s(pool: asyncpg.Pool) -> None:
    """``tsv::text`` read back gives every lexeme and its number of positions, quotes and
    backslashes included."""
    texts = [
        "O'Brien's dog doesn't bark; the dogs bark, bark and bark",
        "a path C:\\temp\\file.txt and \\\\server\\share, it's 'quoted' ''twice''",
        "hello",
        "the and of",  # no lexeme at all
    ]
    for text in texts:
        row = await pool.fetchrow(
            "SELECT v::text AS t, ARRAY(SELECT x.lexeme FROM unnest(v) x) AS l,"
            " ARRAY(SELECT cardinality(x.positions) FROM unnest(v) x) AS c FROM to_tsvector('english', $1) v",
            text,
        )
        assert tsvector_entries(row["t"]) == (list(row["l"]), list(row["c"])), row["t"]


async def test_a_write_committed_before_the_search_is_seen(pool: asyncpg.Pool) -> None:
    rnd = random.Random(11)
    owner = f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, 50, rnd)
    index = KeywordIndexes(pool)
    await _ready(pool, index, owner)
    vis = tiers.Visibility(owner, None, None, 365)
    text = "xylophone lessons on tuesday"
    mid = await pool.fetchval(
        "INSERT INTO memories (id, owner, type, content, source, content_hash)"
        " VALUES ($1, $2, 'factual', $3, 'api', $4) RETURNING id",
        uuid.uuid4(),
        owner,
        text,
        content_hash(text),
    )
    got = await tiers.keyword_search(pool, vis, "xylophone", 10, None, match_budget=0, memory=index)
    assert [m for m, _ in got.ranked] == [str(mid)]
    assert index.counts["memory"] == 1
    await pool.execute("UPDATE memories SET content = 'no such instrument' WHERE id = $1", mid)
    got = await tiers.keyword_search(pool, vis, "xylophone", 10, None, match_budget=0, memory=index)
    assert got.ranked == [] and index.counts["memory"] == 2
    await pool.execute("DELETE FROM memories WHERE id = $1", mid)  # seen too, the small owner rebuilt inline
    got = await tiers.keyword_search(pool, vis, "instrument", 10, None, match_budget=0, memory=index)
    assert got.ranked == [] and index.counts == {"memory": 3}
    await index.close()


@pytest.mark.parametrize("inline_rows", [INLINE_ROWS, 0])
async def test_a_log_that_no_longer_reaches_back_rebuilds(pool: asyncpg.Pool, inline_rows: int) -> None:
    """A small owner is rebuilt by the search that finds its index too far behind; a larger one
    in the background while the statement answers."""
    rnd = random.Random(13)
    owner = f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, 30, rnd)
    index = KeywordIndexes(pool, inline_rows=inline_rows)
    await _ready(pool, index, owner)
    await pool.execute("UPDATE keyword_versions SET version = version + 5000 WHERE owner = $1", owner)
    vis = tiers.Visibility(owner, None, None, 365)
    want = await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0)
    got = await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0, memory=index)
    if inline_rows:
        _same(got, want, 10)
        assert index.counts == {"memory": 1}
    else:
        assert got == want and index.counts == {"statement_fallback:rebuilding": 1}
    await index.settle()
    got = await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0, memory=index)
    _same(got, want, 10)
    assert index.counts["memory"] == (2 if inline_rows else 1)
    await index.close()


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ('"apple river" lake', "phrase_or_negation"),
        ("apple -river", "phrase_or_negation"),
        ("apple", "metadata_filter"),
    ],
)
async def test_phrases_negations_and_metadata_filters_go_to_the_statement(
    pool: asyncpg.Pool, question: str, reason: str
) -> None:
    rnd = random.Random(17)
    owner = f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, 80, rnd)
    index = KeywordIndexes(pool)
    await _ready(pool, index, owner)
    metadata = parse({"topic": "x"}) if reason == "metadata_filter" else None
    vis = tiers.Visibility(owner, None, None, 365, metadata)
    want = await tiers.keyword_search(pool, vis, question, 10, None, match_budget=0)
    got = await tiers.keyword_search(pool, vis, question, 10, None, match_budget=0, memory=index)
    assert got == want
    assert index.counts[f"statement_fallback:{reason}"] == 1 and index.counts["memory"] == 0
    if reason != "metadata_filter":
        assert want.ranked  # the statement did find something
    await index.close()


async def test_another_owners_global_memories_go_to_the_statement(pool: asyncpg.Pool) -> None:
    rnd = random.Random(19)
    owner, operator = f"kwm-{uuid.uuid4().hex[:8]}", f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, 40, rnd)
    index = KeywordIndexes(pool)
    await _ready(pool, index, owner)
    text = "apple river guitar global note"
    gid = await pool.fetchval(
        "INSERT INTO memories (id, owner, type, content, source, content_hash, scope)"
        " VALUES ($1, $2, 'factual', $3, 'api', $4, 'global') RETURNING id",
        uuid.uuid4(),
        operator,
        text,
        content_hash(text),
    )
    try:
        vis = tiers.Visibility(owner, None, None, 365)
        want = await tiers.keyword_search(pool, vis, "apple river guitar", 10, None, match_budget=0)
        got = await tiers.keyword_search(pool, vis, "apple river guitar", 10, None, match_budget=0, memory=index)
        assert got == want and str(gid) in dict(got.ranked)
        assert index.counts["statement_fallback:global_memories"] == 1 and index.counts["memory"] == 0
    finally:
        await pool.execute("DELETE FROM memories WHERE id = $1", gid)
    await index.close()


async def _status(nc: Client, who: str) -> str:
    status: EngineStatusResult = await call(nc, "engine.status", EngineStatusRequest(owner=who), timeout=10)
    return status.keyword_tier


async def test_the_setting_through_the_service(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    """``keywordIndex=memory`` for one owner: its first search builds the small owner's index and
    is ranked in memory with the statement's scores, a new memory included."""
    who = f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, who, 60, random.Random(23))
    await put_values(pool, who, {"keywordIndex": "memory", "keywordMatchBudget": 0, "keywordMaxCandidates": 0})
    vis = tiers.Visibility(who, None, None, 365)
    want = dict((await tiers.keyword_search(pool, vis, "apple river guitar", 100, None, match_budget=0)).ranked)
    ask = RetrieveRequest(owner=who, query="apple river guitar", strategy="hybrid", limit=10, dry_run=True)
    got: RetrieveResult = await call(nc, "retrieve", ask, timeout=10)
    status = await _status(nc, who)
    assert "1 owners held" in status and "memory 1" in status and "statement_fallback" not in status, status
    keyword = [m for m in got.memories if m.fts_score]
    assert keyword and all(m.fts_score == pytest.approx(want[m.id], rel=1e-9) for m in keyword)
    text = "apple river guitar apple river guitar"
    mid = await pool.fetchval(
        "INSERT INTO memories (id, owner, type, content, source, content_hash)"
        " VALUES ($1, $2, 'factual', $3, 'api', $4) RETURNING id::text",
        uuid.uuid4(),
        who,
        text,
        content_hash(text),
    )
    got = await call(nc, "retrieve", ask, timeout=10)
    assert got.memories[0].id == mid and "memory 2" in await _status(nc, who)


async def test_the_least_recently_searched_owner_goes_over_the_budget(pool: asyncpg.Pool) -> None:
    rnd = random.Random(29)
    first, second = f"kwm-{uuid.uuid4().hex[:8]}", f"kwm-{uuid.uuid4().hex[:8]}"
    await _seed(pool, first, 300, rnd)
    await _seed(pool, second, 300, rnd)
    probe = KeywordIndexes(pool)
    one = (await probe.build(first)).nbytes()  # type: ignore[union-attr]
    index = KeywordIndexes(pool, budget_bytes=int(1.5 * one))  # room for one owner, not two
    await _ready(pool, index, first)
    await _ready(pool, index, second)
    assert index.held_ids(first) is None and index.held_ids(second) is not None
    assert "1 owners held" in index.status()
    small = KeywordIndexes(pool, budget_bytes=one // 2)  # no room even for one: the statement answers
    vis = tiers.Visibility(first, None, None, 365)
    want = await tiers.keyword_search(pool, vis, "apple", 10, None, match_budget=0)
    for _ in range(2):
        assert await tiers.keyword_search(pool, vis, "apple", 10, None, match_budget=0, memory=small) == want
        await small.settle()
    assert small.held_ids(first) is None  # built once, then left to the statement for a while
    assert small.counts["statement_fallback:building"] == 1 and small.counts["statement_fallback:over_budget"] == 1
    for x in (probe, index, small):
        await x.close()


async def test_many_small_owners_over_the_budget_are_evicted_and_rebuilt_inline(pool: asyncpg.Pool) -> None:
    """Six owners, room for three: the least recently searched go, and a search of an evicted
    owner builds it again inline, with the statement's answer."""
    rnd = random.Random(41)
    owners = [f"kwm-{uuid.uuid4().hex[:8]}" for _ in range(6)]
    for owner in owners:
        await _seed(pool, owner, 100, rnd)
    probe = KeywordIndexes(pool)
    one = max([(await probe.build(o)).nbytes() for o in owners])  # type: ignore[union-attr]
    index = KeywordIndexes(pool, budget_bytes=int(3.5 * one))
    for owner in owners * 2:
        vis = tiers.Visibility(owner, None, None, 365)
        want = await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0)
        got = await tiers.keyword_search(pool, vis, "apple river", 10, None, match_budget=0, memory=index)
        _same(got, want, 10)
        assert index.held_ids(owner) is not None
    assert index.counts == {"memory": 12}
    held = [o for o in owners if index.held_ids(o) is not None]
    assert held == owners[-3:]  # the last three searched
    assert "3 owners held" in index.status()
    for x in (probe, index):
        await x.close()
