"""Each strategy through the retrieve service, the hand-checked RRF order, score fusion, budget."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.service import ServiceContext
from shared.settings.store import put_values

from .conftest import ScriptedEmbed, owner, put, unit

pytestmark = pytest.mark.usefixtures("vec_meta")

Q = unit(1, 0, 0, 0)


async def retrieve(nc: Client, **kw: object) -> RetrieveResult:
    result: RetrieveResult = await call(nc, "retrieve", RetrieveRequest(**kw), timeout=10)  # type: ignore[arg-type]
    return result


async def _rrf_fixture(pool: asyncpg.Pool, who: str) -> dict[str, str]:
    """Keyword ranks A > B > C (D has no keyword); vector ranks D > C > A > B."""
    return {
        "A": await put(pool, who, "apple apple apple pie", vector=unit(1, 1, 0, 0)),
        "B": await put(pool, who, "apple apple tart", vector=unit(0, 1, 0, 0)),
        "C": await put(pool, who, "apple crumble", vector=unit(1, 0.1, 0, 0)),
        "D": await put(pool, who, "orchard harvest notes", vector=unit(1, 0, 0, 0)),
    }


async def test_hybrid_rrf_order_hand_checked(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    ids = await _rrf_fixture(pool, who)
    await put_values(pool, who, {"fusion": "rrf", "rrfDepth": 20})  # the default is score fusion
    embed = await ScriptedEmbed({"apple": Q}).start(nc)
    try:
        res = await retrieve(nc, owner=who, query="apple", strategy="hybrid")
    finally:
        await embed.stop()
    name = {v: k for k, v in ids.items()}
    got = [(name[m.id], m.fts_rank, m.vec_rank) for m in res.memories]
    # A: 1/61 + 1/63, C: 1/63 + 1/62, B: 1/62 + 1/64, D: 1/61 (k=60)
    assert got == [("A", 1, 3), ("C", 3, 2), ("B", 2, 4), ("D", None, 1)]
    expected = [1 / 61 + 1 / 63, 1 / 63 + 1 / 62, 1 / 62 + 1 / 64, 1 / 61]
    assert [m.score for m in res.memories] == pytest.approx(expected, rel=1e-12)
    assert [m.tier for m in res.memories] == ["keyword", "pgvector", "keyword", "pgvector"]
    assert res.strategy == "hybrid" and res.fallbacks == []
    assert {(t.tier, t.served, t.hits) for t in res.tiers} == {("keyword", True, 3), ("pgvector", True, 4)}
    assert res.memories[0].fts_score is not None and res.memories[0].vec_score == pytest.approx(math.sqrt(0.5))
    assert res.embed_ms is not None and res.ms is not None and res.ms >= res.embed_ms


async def test_score_fusion_and_depth_from_settings(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    who = owner()
    ids = await _rrf_fixture(pool, who)
    await put_values(pool, who, {"fusion": "score", "rrfDepth": 2})
    embed = await ScriptedEmbed({"apple": Q}).start(nc)
    try:
        res = await retrieve(nc, owner=who, query="apple")
    finally:
        await embed.stop()
    name = {v: k for k, v in ids.items()}
    # depth 2: keyword A, B; vector D, C. Min-max per list over its top 2: A 1, B 0, D 1, C 0.
    # default weights 0.6/0.4: A 0.6, D 0.4, B 0, C 0.
    assert [name[m.id] for m in res.memories[:2]] == ["A", "D"]
    assert [m.score for m in res.memories] == pytest.approx([0.6, 0.4, 0.0, 0.0])
    assert {name[m.id] for m in res.memories[2:]} == {"B", "C"}


async def test_semantic_is_vector_order(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    ids = await _rrf_fixture(pool, who)
    embed = await ScriptedEmbed({"apple": Q}).start(nc)
    try:
        res = await retrieve(nc, owner=who, query="apple", strategy="semantic")
    finally:
        await embed.stop()
    assert [m.id for m in res.memories] == [ids["D"], ids["C"], ids["A"], ids["B"]]
    assert [m.vec_rank for m in res.memories] == [1, 2, 3, 4]
    assert res.memories[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(m.tier == "pgvector" and m.fts_rank is None for m in res.memories)


@pytest.mark.parametrize("strategy", ["exact", "recent"])
async def test_exact_is_newest_first_and_ignores_the_query(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, strategy: str
) -> None:
    who = owner()
    now = datetime.now(UTC)
    old = await put(pool, who, "older apple", created_at=now - timedelta(days=2))
    meta = {"source_app": "notes", "tags": ["fruit"], "n": 2}
    new = await put(pool, who, "newer banana", created_at=now - timedelta(days=1), metadata=meta)
    res = await retrieve(nc, owner=who, query="apple", strategy=strategy)
    assert [m.id for m in res.memories] == [new, old]
    assert [m.metadata for m in res.memories] == [meta, {}]
    assert res.strategy == "exact"
    assert [m.tier for m in res.memories] == ["recent", "recent"]
    assert [m.score for m in res.memories] == [1.0, 0.5]
    assert [(t.tier, t.served) for t in res.tiers] == [("recent", True)] and res.fallbacks == []


async def test_default_strategy_comes_from_settings(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    who = owner()
    await put(pool, who, "kiwi")
    await put_values(pool, who, {"strategy": "recent"})
    res = await retrieve(nc, owner=who, query="nothing matches this")
    assert res.strategy == "exact" and len(res.memories) == 1


async def test_budget_prefix_and_at_least_one(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    now = datetime.now(UTC)
    # newest first: 100, 100, 100 tokens (400 chars each), then a 1-token memory
    for i, text in enumerate(["a" * 400, "b" * 400, "c" * 400, "dddd"]):
        await put(pool, who, text, created_at=now - timedelta(minutes=i))
    res = await retrieve(nc, owner=who, strategy="exact", max_tokens=250)
    assert [m.tokens for m in res.memories] == [100, 100] and res.tokens_used == 200  # the 3rd does not fit: stop
    res = await retrieve(nc, owner=who, strategy="exact", max_tokens=0)  # a budget of nothing retrieves nothing
    assert res.memories == [] and res.tokens_used == 0
    res = await retrieve(nc, owner=who, strategy="exact", max_tokens=8000)  # capped by the owner's 2000
    assert len(res.memories) == 4 and res.tokens_used == 301
    res = await retrieve(nc, owner=who, strategy="exact", limit=2)
    assert len(res.memories) == 2
    thrifty = owner()
    for i, text in enumerate(["a" * 400, "b" * 400]):
        await put(pool, thrifty, text, created_at=now - timedelta(minutes=i))
    await put_values(pool, thrifty, {"maxTokens": 150})
    res = await retrieve(nc, owner=thrifty, strategy="exact")  # the owner's default budget
    assert [m.tokens for m in res.memories] == [100]
    res = await retrieve(nc, owner=thrifty, strategy="exact", max_tokens=8000)  # the owner's setting caps requests
    assert [m.tokens for m in res.memories] == [100]


async def test_disabled_by_setting_or_request(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    who = owner()
    await put(pool, who, "kiwi")
    res = await retrieve(nc, owner=who, query="kiwi", no_memory=True)
    assert res.memories == [] and res.disabled_reason is not None and "no_memory" in res.disabled_reason
    other = owner()
    await put(pool, other, "kiwi")
    await put_values(pool, other, {"enabled": False})
    res = await retrieve(nc, owner=other, query="kiwi")
    assert res.memories == [] and res.disabled_reason is not None and "enabled=false" in res.disabled_reason


@pytest.mark.parametrize(
    ("values", "order", "scores"),
    [
        ({}, "DAC", [1 / 61, 1 / 62, 1 / 63]),
        # neighbours at distance 1 weigh 1.0, at 2 weigh 0.5; B (between A and C) did not match
        ({"neighbourBoost": 1}, "ACD", [1 / 62 + 0.5 / 63, 1 / 63 + 0.5 / 62, 1 / 61]),
        # each result gains the best score of its session (its own included)
        ({"sessionBoost": 1}, "DAC", [2 / 61, 2 / 62, 1 / 63 + 1 / 62]),
        # a session scores the mean of its best two: s1 holds two matches, s2 one
        (
            {"sessionBoost": 1, "sessionEvidence": 2},
            "ACD",
            [1 / 62 + (1 / 62 + 1 / 63) / 2, 1 / 63 + (1 / 62 + 1 / 63) / 2, 1.5 / 61],
        ),
        # the second result of s1 counts half
        ({"sessionSpread": 0.5}, "DAC", [1 / 61, 1 / 62, 0.5 / 63]),
    ],
)
async def test_hybrid_boosts_hand_checked(
    pool: asyncpg.Pool,
    nc: Client,
    retrieve_svc: ServiceContext,
    values: dict[str, float],
    order: str,
    scores: list[float],
) -> None:
    # both boosts default to 0.3: check each one alone (runtime settings of this owner)
    who = owner()
    await put_values(pool, who, {"fusion": "rrf", "rrfDepth": 20, "sessionBoost": 0, "neighbourBoost": 0, **values})
    t0 = datetime.now(UTC) - timedelta(hours=1)
    turn = {"source": "chat_turn", "memory_type": "episodic"}
    ids = {
        "A": await put(pool, who, "kiwi kiwi", session_id="s1", created_at=t0, **turn),
        "B": await put(pool, who, "something else", session_id="s1", created_at=t0 + timedelta(seconds=1), **turn),
        "C": await put(pool, who, "kiwi", session_id="s1", created_at=t0 + timedelta(seconds=2), **turn),
        "D": await put(pool, who, "kiwi kiwi kiwi", session_id="s2", created_at=t0, **turn),
    }
    name = {v: k for k, v in ids.items()}
    res = await retrieve(nc, owner=who, query="kiwi", strategy="hybrid")  # keyword ranks only (D, A, C)
    assert "".join(name[m.id] for m in res.memories) == order
    assert [m.score for m in res.memories] == pytest.approx(scores, rel=1e-12)


async def test_score_fusion_weights_are_per_owner(pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext) -> None:
    # keyword ranks only (no embed service): the best full-text match normalises to 1.0, times ftsWeight
    tops: dict[float, float] = {}
    for weight in (0.5, 0.8):
        who = owner()
        values = {"fusion": "score", "sessionBoost": 0, "neighbourBoost": 0, "ftsWeight": weight}
        await put_values(pool, who, values)
        await put(pool, who, "kiwi kiwi kiwi")
        await put(pool, who, "kiwi")
        res = await retrieve(nc, owner=who, query="kiwi", strategy="hybrid")
        tops[weight] = res.memories[0].score
    assert tops == pytest.approx({0.5: 0.5, 0.8: 0.8})


@pytest.mark.parametrize(("lift", "before_score"), [(0.0, 0.0), (0.75, 0.4 * 0.75)])
async def test_temporal_lift_raises_a_memory_in_the_asked_window(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, lift: float, before_score: float
) -> None:
    # keyword ranks only: min-max scores, so the memories matching the question's name alone score 0;
    # the one whose "last Friday" falls in the week before the race gains 0.4 x lift x the best score
    who = owner()
    off = {"sessionBoost": 0, "neighbourBoost": 0, "speakerBoost": 0, "ftsFullCoverage": 0, "ftsWeight": 1}
    await put_values(pool, who, {"fusion": "score", "temporalReasoning": 0.4, "temporalLift": lift, **off})
    said = "[1:00 pm on 8 May, 2024] Ana: "
    ids = {
        "race": await put(pool, who, said + "I ran a charity race yesterday"),
        "before": await put(pool, who, said + "Last Friday I went to a pottery workshop"),
        "march": await put(pool, who, said + "I adopted a puppy in March"),
    }
    name = {v: k for k, v in ids.items()}
    res = await retrieve(nc, owner=who, query="What did Ana do the week before the charity race?", strategy="hybrid")
    scores = {name[m.id]: m.score for m in res.memories}
    # the race names the anchor: it gains 0.4 of (its own score, which is also the best) either way
    assert scores == pytest.approx({"race": 1.4, "before": before_score, "march": 0.0})
    if lift:
        assert [name[m.id] for m in res.memories] == ["race", "before", "march"]


async def test_a_counted_window_after_an_anchor_told_as_a_span_lifts_a_loosely_dated_memory(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext
) -> None:
    # keyword ranks only, as above: the race ("last month": some day of April) anchors "the two weeks
    # after" it, 2 April to 14 May; "over the weekend" (4-5 May) falls in it, "early March" does not
    who = owner()
    off = {"sessionBoost": 0, "neighbourBoost": 0, "speakerBoost": 0, "ftsFullCoverage": 0, "ftsWeight": 1}
    await put_values(pool, who, {"fusion": "score", "temporalReasoning": 0.4, "temporalLift": 0.75, **off})
    said = "[1:00 pm on 8 May, 2024] Ana: "
    ids = {
        "race": await put(pool, who, said + "I ran a charity race last month"),
        "after": await put(pool, who, said + "Over the weekend I went to a pottery workshop"),
        "march": await put(pool, who, said + "I adopted a puppy in early March"),
    }
    name = {v: k for k, v in ids.items()}
    question = "What did Ana do in the two weeks after the charity race?"
    res = await retrieve(nc, owner=who, query=question, strategy="hybrid")
    scores = {name[m.id]: m.score for m in res.memories}
    # a full match gains 0.4 x 0.75 x the best score (a day said in the window alone would gain half)
    assert scores == pytest.approx({"race": 1.4, "after": 0.3, "march": 0.0})
    assert [name[m.id] for m in res.memories] == ["race", "after", "march"]


@pytest.mark.parametrize(("window", "tier"), [(0, "memory"), (5, "memory"), (5, "statement")])
async def test_temporal_window_adds_a_match_stored_in_the_asked_month_beyond_the_keyword_top(
    pool: asyncpg.Pool, nc: Client, retrieve_svc: ServiceContext, window: int, tier: str
) -> None:
    # keyword ranks only, two deep: the three memories saying "Ana" three times fill its top in January;
    # the one said in the asked month names Ana once, so only the window (served by the in-memory
    # index alone) makes it a candidate; said then but naming no time, it gains half a match
    who = owner()
    now = datetime.now(UTC)
    month = (now.replace(day=1) - timedelta(days=40)).replace(day=10, hour=12)
    off = {"sessionBoost": 0, "neighbourBoost": 0, "speakerBoost": 0, "ftsFullCoverage": 0, "ftsWeight": 1}
    values = {"fusion": "score", "rrfDepth": 2, "temporalWindow": window, "keywordIndex": tier, **off}
    await put_values(pool, who, {**values, "keywordMatchBudget": 0, "keywordMaxCandidates": 0})
    early = month - timedelta(days=60)
    for n in range(3):
        await put(pool, who, f"Ana Ana Ana talked about her plans, part {n}", created_at=early + timedelta(hours=n))
    said = await put(pool, who, "Ana went to a pottery workshop", created_at=month)
    await put(pool, who, "Bo went to a pottery workshop", created_at=month)  # shares no word: never a candidate
    question = f"What did Ana do in {month:%B %Y}?"
    res = await retrieve(nc, owner=who, query=question, strategy="hybrid")
    found = [m.id for m in res.memories]
    assert len(found) == (3 if window and tier == "memory" else 2)
    assert (said in found) == (window > 0 and tier == "memory")
    if said in found:
        mine = next(m for m in res.memories if m.id == said)
        assert mine.fts_rank == 3  # below the keyword list's top, by its own BM25
